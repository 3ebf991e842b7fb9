import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Readable } from 'node:stream';

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

/**
 * Serves a web-standard handler with node:http on `port` (0 picks a free one). Resolves once
 * listening; `server.address()` gives the port.
 */
export function serveNode(handler: (request: Request) => Promise<Response>, port: number, host?: string): Promise<Server> {
  const server = createServer(async (req, res) => {
    try {
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
