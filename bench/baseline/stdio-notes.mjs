// The stdio MCP server the bench's gateway peers (supergateway, mcp-proxy) put on HTTP: one tool,
// search_notes, that POSTs a signed tool.call to the Notes webhook, as Toolport delivers it, and
// returns the webhook's answer as text. Plain JavaScript on this folder's pinned SDK and zod, so the
// gateways spawn it with `node` alone, as a developer's own stdio server runs.
// Env: NOTES_WEBHOOK (the add-on's URL), NOTES_SECRET (its whsec_ signing secret).
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const webhook = new URL(process.env.NOTES_WEBHOOK ?? '');
const key = Buffer.from((process.env.NOTES_SECRET ?? '').replace(/^whsec_/, ''), 'base64');
// Keep-alive, as Toolport's own delivery: a new TCP connection per call would be the peer's loss, not its design.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let seq = 0;

function deliver(args) {
  // A fresh id per call: the add-on answers a repeated webhook-id from memory without running the tool.
  const id = `call_peer${process.pid}_${++seq}`;
  const body = JSON.stringify({
    type: 'tool.call',
    addon: 'notes',
    tool: 'search_notes',
    arguments: args,
    call: { id, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
    user: { id: 'usr_benchpseudonym' },
    app: { name: 'Bench', clientId: 'cli_bench' },
  });
  const ts = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        method: 'POST',
        hostname: webhook.hostname,
        port: webhook.port,
        path: webhook.pathname,
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': `v1,${sig}`,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const server = new McpServer({ name: 'notes-stdio', version: '1.0.0' });
server.registerTool(
  'search_notes',
  {
    description: "Finds notes containing every word of the query, newest first, and returns each note's id, title and preview.",
    inputSchema: { query: z.string().max(200).optional() },
  },
  async (args) => {
    const answer = await deliver(args);
    return { content: [{ type: 'text', text: answer.text }], isError: answer.status !== 200 };
  },
);
await server.connect(new StdioServerTransport());
// The gateway is gone once stdin closes: exit then, whatever else is still open.
process.stdin.once('close', () => process.exit(0));
