import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { RAW_HANDLER, TooLarge, type RawAnswer, type RawDelivery, type WebHandler } from './handler';

function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(url, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    // Required by undici for a streamed request body.
    ...(hasBody ? { duplex: 'half' } : {}),
  } as RequestInit);
}

/** The request body, refused with TooLarge as soon as it passes `max` bytes (the rest is discarded). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.resume();
      reject(new TooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

function delivery(req: IncomingMessage): RawDelivery {
  return {
    method: req.method ?? 'GET',
    header: (name) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    },
    body: (max) => readBody(req, max),
  };
}

function send(res: ServerResponse, answer: RawAnswer, close: boolean) {
  res.writeHead(answer.status, {
    'content-type': answer.contentType,
    'content-length': Buffer.byteLength(answer.body),
    // The rest of an oversized body is not read: end the connection rather than drain it.
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(answer.body);
}

/**
 * Serves a web-standard handler with node:http on `port` (0 picks a free one). Resolves once
 * listening; `server.address()` gives the port. A handler made by `addon.handler()` is called
 * through its server-neutral core, without Request and Response objects; any other is adapted.
 */
export function serveNode(handler: WebHandler, port: number, host?: string): Promise<Server> {
  const raw = handler[RAW_HANDLER];
  const server = createServer(async (req, res) => {
    try {
      if (raw) {
        const answer = await raw(delivery(req));
        send(res, answer, answer.status === 413);
        return;
      }
      const response = await handler(toRequest(req));
      res.statusCode = response.status;
      response.headers.forEach((value, key) => res.setHeader(key, value));
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (err) {
      console.error('[toolport add-on] the handler threw:', err);
      if (!res.headersSent) res.statusCode = 500;
      res.end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
