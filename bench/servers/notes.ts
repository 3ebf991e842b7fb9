// The floor of one tool call: the example Notes add-on (examples/notes on packages/addon-kit) on
// node:http, in its own process. Secrets arrive over IPC as Toolport issues them.
import { serveNode } from '@toolport/addon-kit';
import { createNotesAddon } from '../../examples/notes/src/addon';
import { NoteStore } from '../../examples/notes/src/store';

const secrets: string[] = (process.env.NOTES_SECRET ?? '').split(',').filter(Boolean);
let url = '';
const addon = createNotesAddon(new NoteStore(), 'http://127.0.0.1:1/webhook');
const server = await serveNode(addon.handler({ secrets: () => secrets, onError: () => {} }), 0, '127.0.0.1');
url = `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook`;
process.on('message', (m: { type: string; secret?: string }) => {
  if (m.type === 'secret' && m.secret) {
    secrets.push(m.secret);
    process.send!({ type: 'secret-ok', id: (m as { id?: number }).id });
  } else if (m.type === 'stop') process.exit(0);
});
process.send!({ type: 'ready', url, manifest: createNotesAddon(new NoteStore(), url).manifest() });
