// A peer MCP gateway in the bench (issue #48), started as its own docs start it: this wrapper is the
// child the bench forks; it spawns the peer on a free port, waits until the port answers, and sends
// `{type:'ready', url}`. argv[2]: supergateway | mcp-proxy | fastmcp.
// Env: NOTES_WEBHOOK and NOTES_SECRET, passed on to the tool that calls the Notes webhook.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const kind = process.argv[2] ?? '';
const pkg = (file: string) => path.join(HERE, 'node_modules', file);
const stdioServer = path.join(HERE, 'stdio-notes.mjs');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

// mcp-proxy does not end when its stdin closes; this preload makes it, as supergateway does by itself.
const EXIT_WITH_STDIN = 'data:text/javascript,process.stdin.once("close",()=>process.exit(0)).resume()';

const port = String(await freePort());
const commands: Record<string, [string, string[]]> = {
  // Stateful: its stateless mode spawns a new stdio server for every POST (a process start per call).
  // A session owns one stdio server, so the bench opens one session per connection. No per-message log.
  supergateway: [process.execPath, [pkg('supergateway/dist/index.js'), '--stdio', `"${process.execPath}" "${stdioServer}"`, '--outputTransport', 'streamableHttp', '--stateful', '--port', port, '--logLevel', 'none']],
  // Stateless on one shared stdio server; Streamable HTTP only, no resumability store (request/response only).
  'mcp-proxy': [process.execPath, ['--import', EXIT_WITH_STDIN, pkg('mcp-proxy/dist/bin/mcp-proxy.mjs'), '--server', 'stream', '--stateless', '--no-eventStore', '--host', '127.0.0.1', '--port', port, '--', process.execPath, stdioServer]],
  fastmcp: [path.join(HERE, '.venv', 'bin', 'python'), [path.join(HERE, 'fastmcp_notes.py'), port]],
};
const command = commands[kind];
if (!command) throw new Error(`unknown peer "${kind}" (${Object.keys(commands).join(', ')})`);

// stdin is a pipe the peer never gets data on: when this wrapper dies (even by SIGKILL, as a child that
// does not start in time is), it closes and the peer exits, so no peer outlives the bench. Its stdio
// servers exit when their own stdin closes.
const peer = spawn(command[0], command[1], { cwd: HERE, env: process.env, stdio: ['pipe', 'inherit', 'inherit'] });
let stopping = false;
peer.once('exit', (code, signal) => {
  if (!stopping) console.error(`${kind} exited (${code ?? signal})`);
  process.exit(stopping ? 0 : 1);
});

const until = Date.now() + 60_000;
while (!(await answers(Number(port)))) {
  if (Date.now() > until) throw new Error(`${kind} did not listen on ${port} in 60 s`);
  await new Promise((r) => setTimeout(r, 100));
}
process.send!({ type: 'ready', url: `http://127.0.0.1:${port}/mcp` });

function stop() {
  if (stopping) return;
  stopping = true;
  peer.kill('SIGTERM');
  setTimeout(() => peer.kill('SIGKILL'), 8_000).unref();
}
process.on('message', (m: { type: string }) => {
  if (m.type === 'stop') stop();
});
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.on('disconnect', stop);
