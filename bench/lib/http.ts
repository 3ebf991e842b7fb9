import http from 'node:http';
import { gunzipSync } from 'node:zlib';

/** One keep-alive agent for the bench's own timed requests (round trips, call-log pages). */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A plain node:http request: lower client overhead than fetch, so client time does not blur the timings. */
export function request(method: string, url: string, headers: Record<string, string> = {}, body?: string, useAgent: http.Agent | false = agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request(
      {
        method,
        hostname: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        agent: useAgent,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: body.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The JSON-RPC result of an MCP answer, whether sent as JSON or as one SSE message. */
export function rpcResult(text: string): any {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed);
  const data = trimmed
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice(6))
    .join('');
  return JSON.parse(data);
}

export interface SseEvent {
  event: string;
  id?: string;
  data: any;
}

/** An open `/api/events` stream: calls `onEvent` for every event; `close()` ends it. */
export function openSse(url: string, headers: Record<string, string>, onEvent: (e: SseEvent) => void): Promise<{ close(): void }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request(
      { method: 'GET', hostname: u.hostname, port: u.port, path: u.pathname, agent: false, headers: { accept: 'text/event-stream', ...headers } },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`event stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        let buf = '';
        let opened = false;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let end: number;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const e: SseEvent = { event: 'message', data: undefined };
            let data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) e.event = line.slice(7);
              else if (line.startsWith('id: ')) e.id = line.slice(4);
              else if (line.startsWith('data: ')) data += line.slice(6);
            }
            if (!opened) {
              opened = true;
              resolve({ close: () => req.destroy() });
            }
            if (data) {
              e.data = JSON.parse(data);
              onEvent(e);
            }
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', (err) => reject(err));
    req.end();
  });
}
