// What a developer writes without Toolport: the MCP SDK's McpServer with one in-process echo tool,
// over Streamable HTTP on node:http, following the SDK's own examples. argv[2]: stateless | sessions.
// Built as a developer installs it today (this folder's own pins: the current SDK and zod major),
// answering as Toolport does for the same call: JSON for a plain call, SSE for one with a progress token.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const mode = process.argv[2] === 'sessions' ? 'sessions' : 'stateless';

function newServer() {
  const server = new McpServer({ name: 'echo', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes the text back.', inputSchema: { text: z.string().max(200) } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

/** Whether the request asks for progress (an SSE answer, as Toolport gives one). */
const progressOf = (body: unknown) => (body as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !== undefined;

const sessions = new Map<string, StreamableHTTPServerTransport>();

const http = createServer(async (req, res) => {
  try {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const body = await readBody(req);
    if (mode === 'stateless') {
      const server = newServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !progressOf(body) });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid || !isInitializeRequest(body)) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32000,"message":"No session"},"id":null}');
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // The bench's session calls are plain ones: JSON, as Toolport answers them.
        enableJsonResponse: true,
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await newServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  } catch (err) {
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
});
http.keepAliveTimeout = 60_000;
http.listen(0, '127.0.0.1', () => {
  const { port } = http.address() as { port: number };
  process.send!({ type: 'ready', url: `http://127.0.0.1:${port}/mcp` });
});
process.on('message', (m: { type: string }) => {
  if (m.type === 'stop') process.exit(0);
});
