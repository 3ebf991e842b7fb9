// The floor of one tool call: the example Notes add-on (examples/notes on packages/addon-kit) on
// node:http, in its own process. Secrets arrive over IPC as Toolport issues them.
import { defineAddon, serveNode, text, tool } from '@toolport/addon-kit';
import { createNotesAddon } from '../../examples/notes/src/addon';
import { NoteStore, type Note } from '../../examples/notes/src/store';

/**
 * Remembers whose note was added last, so the bench can give that person many notes at once (more
 * than the add-on's own limit): held calls must differ, as the same call twice is one call.
 */
class BenchStore extends NoteStore {
  lastUser = '';
  private readonly seeded = new Map<string, Note>();
  override add(userId: string, text: string, callId: string, now?: Date) {
    this.lastUser = userId;
    return super.add(userId, text, callId, now);
  }
  override get(userId: string, id: string) {
    return this.seeded.get(`${userId} ${id}`) ?? super.get(userId, id);
  }
  seed(count: number, tag: string): string[] {
    return Array.from({ length: count }, (_, i) => {
      const note: Note = { id: `note_held_${tag}_${i}`, title: `Held ${i}`, text: `# Held ${i}`, createdAt: new Date().toISOString(), callId: `seed-${tag}-${i}` };
      this.seeded.set(`${this.lastUser} ${note.id}`, note);
      return note.id;
    });
  }
}

const secrets: string[] = (process.env.NOTES_SECRET ?? '').split(',').filter(Boolean);
let url = '';
const store = new BenchStore();
const addon = createNotesAddon(store, 'http://127.0.0.1:1/webhook');
const server = await serveNode(addon.handler({ secrets: () => secrets, onError: () => {} }), 0, '127.0.0.1');
url = `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook`;
// A tool that takes up to an hour and never answers: each call stays an open task (bench: 10,000 of them).
const reports = defineAddon({
  id: 'reports',
  name: 'Reports',
  description: 'Builds reports that take a while.',
  webhook: 'http://127.0.0.1:1/webhook',
  tools: {
    build_report: tool({
      title: 'Build a report',
      summary: 'Builds a report; takes up to an hour.',
      readOnly: true,
      timeoutSeconds: 3_600,
      arguments: { topic: text({ maxLength: 40, summary: 'What the report is about.' }) },
      run: () => new Promise<string>(() => {}),
    }),
  },
});
const reportsServer = await serveNode(reports.handler({ secrets: () => secrets, onError: () => {} }), 0, '127.0.0.1');
const reportsUrl = `http://127.0.0.1:${(reportsServer.address() as { port: number }).port}/webhook`;

process.on('message', (m: { type: string; secret?: string; count?: number; id?: number }) => {
  if (m.type === 'seed') {
    process.send!({ type: 'seed-ok', id: m.id, ids: store.seed(m.count ?? 0, String(m.id)) });
  } else if (m.type === 'secret' && m.secret) {
    secrets.push(m.secret);
    process.send!({ type: 'secret-ok', id: (m as { id?: number }).id });
  } else if (m.type === 'stop') process.exit(0);
});
process.send!({ type: 'ready', url, manifest: createNotesAddon(new NoteStore(), url).manifest(), reportsManifest: reports.manifest({ webhook: reportsUrl }) });
