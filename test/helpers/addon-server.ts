import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Delivery {
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
}

export type ToolHandler = (body: any) => unknown | Promise<unknown>;

/**
 * A real add-on on 127.0.0.1: answers the ping challenge, verifies signatures (once it knows its
 * secret) with the independent `standardwebhooks` implementation, and answers tool calls.
 */
export async function startAddonServer(handlers: Record<string, ToolHandler> = {}) {
  const received: Delivery[] = [];
  const secrets: string[] = [];
  let confirm: ToolHandler | undefined;
  let toolsList: ToolHandler | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        return reply(400, { error: 'bad json' });
      }
      // The registration ping comes before the add-on knows its secret: echo it unverified.
      if (secrets.length && body.type !== 'ping') {
        const ok = secrets.some((s) => {
          try {
            new Webhook(s).verify(raw, req.headers as Record<string, string>);
            return true;
          } catch {
            return false;
          }
        });
        if (!ok) return reply(401, { error: 'bad signature' });
      }
      received.push({ headers: req.headers, raw, body });
      if (body.type === 'ping') return reply(200, { challenge: body.challenge });
      if (body.type === 'tool.confirm') return reply(200, confirm ? await confirm(body) : { confirm: null });
      if (body.type === 'tools.list') {
        const out = toolsList ? await toolsList(body) : { tools: body.tools };
        return out && typeof out === 'object' && 'status' in out ? reply((out as any).status, (out as any).body ?? {}) : reply(200, out);
      }
      const handler = handlers[body.tool];
      if (!handler) return reply(200, { error: `Unknown tool ${body.tool}.` });
      try {
        const out = await handler(body);
        if (out && typeof out === 'object' && 'status' in (out as object) && typeof (out as any).status === 'number') {
          return reply((out as any).status, (out as any).body ?? {});
        }
        reply(200, out);
      } catch (err) {
        reply(500, { error: String(err) });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    calls: () => received.filter((d) => d.body.type === 'tool.call'),
    setSecret(s: string) { secrets.push(s); },
    /** The signing secret it was given last (to sign an answer as the add-on would). */
    secret: () => secrets[secrets.length - 1] ?? '',
    onConfirm(h: ToolHandler) { confirm = h; },
    /** Answers `tools.list` deliveries (toolsPerPerson); by default every tool is offered. */
    onToolsList(h: ToolHandler) { toolsList = h; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** The Notes manifest of DESIGN.md pointed at a local webhook. */
export function notesManifest(id: string, webhook: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    name: 'Notes',
    description: 'Your notes, searchable.',
    webhook,
    tools: [
      {
        name: 'search_notes',
        title: 'Search notes',
        summary: 'Finds notes containing every word of the query, newest first, and returns each note’s id, title and preview.',
        arguments: [{ name: 'query', summary: 'Words to look for.', kind: { text: { maxLength: 200 } }, required: false }],
      },
      {
        name: 'add_note',
        title: 'Add a note',
        summary: 'Adds a note and returns its id.',
        arguments: [{ name: 'text', summary: 'The note, in Markdown.', kind: { text: { maxLength: 5000 } } }],
      },
      {
        name: 'delete_note',
        title: 'Delete a note',
        summary: 'Deletes one note by id.',
        destructive: true,
        confirm: true,
        arguments: [{ name: 'id', summary: 'The note’s id.', kind: { text: { maxLength: 64 } } }],
      },
    ],
    ...extra,
  };
}

/** What a manifest check is given: the Notes manifest of DESIGN.md at a webhook nothing calls, with the tools named, in that order. */
export function notesManifestOf(tools: string[]) {
  const m = notesManifest('notes', 'https://notes.example.com/toolport');
  return { ...m, tools: tools.map((name) => structuredClone(m.tools.find((t) => t.name === name)!)) };
}

let installed = 0;
/**
 * A developer registers the Notes add-on (public) on `hook`; a new person turns AI apps on,
 * installs it and switches `tools` on. The person's client and MCP URL are returned.
 */
export async function personWithNotes(
  baseUrl: string,
  hook: { url: string; setSecret(s: string): void },
  tools: Record<string, boolean>,
  prefix = 'notes',
  /** Changes the manifest before it is registered. */
  edit: (manifest: ReturnType<typeof notesManifest>) => void = () => {},
) {
  const { installFor, newPerson, listPublicly } = await import('./http');
  const dev = await newPerson(baseUrl, 'dev');
  const addonId = `${prefix}-${process.pid % 1000}-${installed++}`;
  const manifest = notesManifest(addonId, hook.url, { visibility: 'public' });
  edit(manifest);
  const created = await dev.client.post('/api/addons', manifest);
  if (created.status !== 201) throw new Error(`registration failed: ${created.status} ${created.text}`);
  hook.setSecret(created.body.signingSecret);
  await listPublicly(baseUrl, addonId, dev);
  const person = await newPerson(baseUrl);
  await installFor(person, addonId, tools);
  return { ...person, addonId, dev };
}
