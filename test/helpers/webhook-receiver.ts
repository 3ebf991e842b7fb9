import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived. */
  raw: string;
  body: any;
  /** Epoch ms when the request was complete. */
  at: number;
  /** For a held request: epoch ms when Toolport hung up. */
  closedAt?: number;
}

/**
 * What to answer: a status and a JSON body, after an optional delay; `hold` never answers; `reset`
 * drops the connection once the request is read (an add-on that crashed after acting on it).
 */
export type Answer = { status?: number; body?: unknown; delayMs?: number } | 'hold' | 'reset';
export type Behaviour = (req: Received, nth: number) => Answer;

/**
 * A webhook receiver on 127.0.0.1 whose every path is an add-on with its own behaviour; it records
 * every request as received, before answering.
 */
export async function startReceiver() {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const held = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const r: Received = { path: req.url ?? '/', headers: req.headers, raw, body, at: Date.now() };
      received.push(r);
      const nth = received.filter((x) => x.path === r.path).length;
      const answer: Answer = (behaviours.get(r.path) ?? (() => ({ body: { text: 'ok' } })))(r, nth);
      if (answer === 'reset') return void req.socket.resetAndDestroy();
      if (answer === 'hold') {
        held.add(res);
        res.on('close', () => {
          held.delete(res);
          r.closedAt = Date.now();
        });
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body ?? {}));
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    received,
    /** The add-on at `path` answers with `behaviour`; returns its webhook URL. */
    addon(path: string, behaviour?: Behaviour): string {
      if (behaviour) behaviours.set(path, behaviour);
      return `${base}${path}`;
    },
    at: (path: string) => received.filter((r) => r.path === path),
    /** Resolves once `path` has received `n` requests. */
    async waitFor(path: string, n: number, timeoutMs = 20_000): Promise<Received[]> {
      const until = Date.now() + timeoutMs;
      while (received.filter((r) => r.path === path).length < n) {
        if (Date.now() > until) throw new Error(`${path} received ${received.filter((r) => r.path === path).length} of ${n} requests`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received.filter((r) => r.path === path);
    },
    close: () =>
      new Promise<void>((r) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
