import { createServer, request, type IncomingMessage, type Server } from 'node:http';

const MCP_PATH = /^\/u\/[^/?]+\/mcp(\?|$)/;

/**
 * A loopback reverse proxy in front of Toolport, on `port` (Toolport's PUBLIC_URL names it, as a
 * deployment's would name its own proxy): every request is forwarded unchanged (method, headers with
 * Host and Origin, body and answer streamed) to `upstream`, and a request to an MCP URL that carries
 * no Authorization header gets `Bearer {token()}`. A tool that speaks MCP without OAuth (the
 * conformance suite's server mode) then reaches a person's endpoint as a signed-in app would.
 */
export async function startBearerProxy(opts: { port: number; upstream: string; token: () => string }) {
  const upstream = new URL(opts.upstream);
  const server: Server = createServer((req, res) => {
    const headers: IncomingMessage['headers'] = { ...req.headers };
    if (MCP_PATH.test(req.url ?? '') && !headers.authorization) headers.authorization = `Bearer ${opts.token()}`;
    const out = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    // The client hanging up ends the upstream request too (on MCP, a closed stream is a cancellation).
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', resolve);
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
