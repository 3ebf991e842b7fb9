// Real MCP clients other than the SDK's own, each signing in the way it does in the wild, with the
// person answering in Chromium: mcp-remote (the stdio bridge Claude Desktop and Cursor users run)
// and the MCP Inspector's CLI (which takes a bearer token).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { personWithNotes, type startAddonServer } from './helpers/addon-server';
import { BrowserAppProvider, browserHook, decideInBrowser, startJourney, type CallbackServer } from './helpers/journey';
import { freePort, type Toolport } from './helpers/target';

const root = path.resolve(import.meta.dirname, '..');
const MCP_REMOTE = path.join(root, 'node_modules/mcp-remote/dist/proxy.js');
const INSPECTOR_CLI = path.join(root, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
/**
 * The Inspector CLI reads its own version with `fs.existsSync('../package.json')` (relative to the
 * working directory) and then `import('../package.json')` (relative to build/index.js): run from
 * anywhere else it dies with "Cannot find module .../@modelcontextprotocol/package.json". From its
 * build directory both name its own package.json.
 */
const INSPECTOR_CWD = path.dirname(INSPECTOR_CLI);

let tp: Toolport;
let addon: Awaited<ReturnType<typeof startAddonServer>>;
let callback: CallbackServer;
let stopJourney: () => Promise<void>;
let page: Page;
let errors: string[];
let person: Awaited<ReturnType<typeof personWithNotes>>;
/** Where the person's tools are: `<addon>__search_notes` and so on. */
let tool: (name: string) => string;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'toolport-real-clients-'));

before(async () => {
  ({ tp, addon, callback, page, errors, close: stopJourney } = await startJourney({
    search_notes: (b) => ({ text: `No notes match "${b.arguments.query ?? ''}".` }),
  }));
  // Set-up is not what this file is about: the add-on and the person come from the API.
  person = await personWithNotes(tp.url, addon, { search_notes: true, add_note: true });
  tool = (name) => `${person.addonId}__${name}`;
});
after(async () => {
  await stopJourney?.();
  rmSync(tmp, { recursive: true, force: true });
});

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string }> };

describe('mcp-remote, spawned over stdio as a desktop app would', () => {
  let transport: StdioClientTransport | undefined;
  let client: McpClient | undefined;
  let stderr = '';
  after(async () => {
    // The SDK's close ends mcp-remote's stdin (it shuts down on that), then sends SIGTERM after 2 s
    // and SIGKILL after 2 s more, so the child is gone whatever state the test left it in.
    await client?.close().catch(() => {});
    await transport?.close().catch(() => {}); // a no-op when the client closed it; it was never started otherwise
  });

  it('opens the consent page through $BROWSER, gets its code on its own callback port, then speaks MCP', async () => {
    const dir = mkdtempSync(path.join(tmp, 'mcp-remote-'));
    // How mcp-remote opens a browser (dist/chunk-*.js `openBrowser`): `open(url)` first, which on
    // Linux spawns open's bundled xdg-open; with no desktop in the environment that script runs
    // `$BROWSER <url>` (`open_generic` → `open_envvar`). Only if that fails does mcp-remote try
    // /usr/bin/xdg-open, gio, x-www-browser and sensible-browser itself. The SDK's stdio transport
    // passes the child only HOME, LOGNAME, PATH, SHELL, TERM and USER plus `env`, so no DISPLAY or
    // XDG_CURRENT_DESKTOP leaks in and $BROWSER is what runs.
    const hook = browserHook(dir);
    const callbackPort = await freePort();
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, person.user.mcpUrl, String(callbackPort), '--host', '127.0.0.1', '--transport', 'http-only', '--auth-timeout', '120'],
      env: { ...hook.env, MCP_REMOTE_CONFIG_DIR: path.join(dir, 'config') },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    client = new McpClient({ name: 'Desktop Host', version: '1.0.0' });
    // mcp-remote signs in before it reads stdin, so `initialize` waits in the pipe until then.
    const connecting = client.connect(transport, { timeout: 120_000 });
    connecting.catch(() => {});
    const url = await Promise.race([
      hook.nextUrl(0, 60_000),
      connecting.then(
        () => { throw new Error('mcp-remote connected without asking the person'); },
        (err) => { throw new Error(`mcp-remote failed before opening a browser: ${err}\n${stderr}`); },
      ),
    ]);
    assert.ok(url.startsWith(`${tp.url}/oauth/authorize?`), url);
    assert.equal(new URL(url).searchParams.get('redirect_uri'), `http://127.0.0.1:${callbackPort}/oauth/callback`);

    await decideInBrowser(page, url, {
      email: person.email, password: person.password, appName: 'MCP CLI Proxy', redirectHost: `127.0.0.1:${callbackPort}`,
    });
    await connecting.catch((err) => { throw new Error(`mcp-remote did not finish: ${err}\n${stderr}`); });
    assert.equal(hook.opened().length, 1, 'the browser was opened once');

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [tool('add_note'), tool('search_notes')]);
    const result = (await client.callTool({ name: tool('search_notes'), arguments: { query: 'milk' } })) as ToolResult;
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(result.content, [{ type: 'text', text: 'No notes match "milk".' }]);
    const calls = addon.calls().filter((d) => d.body.tool === 'search_notes');
    assert.equal(calls.at(-1)?.body.arguments.query, 'milk');
  });
});

/** Inspector runs still going (process group ids), killed in `after` if a test left one behind. */
const inspectors = new Set<number>();
function killGroup(pid: number) {
  try { process.kill(-pid, 'SIGKILL'); } catch { /* already gone */ }
}

describe('the MCP Inspector CLI, with a bearer token from a real consent', () => {
  let token = '';
  after(() => inspectors.forEach(killGroup));
  before(async () => {
    // The token comes the way any app gets one: the SDK client's OAuth flow, Allow in Chromium.
    const provider = new BrowserAppProvider('Inspector Token', callback.url);
    const transport = new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), { authProvider: provider });
    await assert.rejects(new McpClient({ name: 'Inspector Token', version: '1.0.0' }).connect(transport), UnauthorizedError);
    const seen = callback.hits.length;
    await decideInBrowser(page, await provider.nextAuthorizationUrl(0), {
      email: person.email, password: person.password, appName: 'Inspector Token', redirectHost: callback.host,
    });
    const hit = await callback.next(seen);
    assert.ok(hit.code, `the redirect carries a code: ${hit.query}`);
    await transport.finishAuth(hit.code);
    token = provider.tokens()!.access_token;
  });

  /** Runs the Inspector's CLI entry (`--cli` mode) against the person's MCP URL. */
  function inspector(args: string[], bearer: string | null = token) {
    // `--header` takes several values, so it goes last. The CLI prints the result as JSON on stdout;
    // its v1 deprecation notice and errors go to stderr.
    const argv = [INSPECTOR_CLI, '--cli', person.user.mcpUrl, '--transport', 'http', ...args];
    if (bearer) argv.push('--header', `Authorization: Bearer ${bearer}`);
    // cli.js runs build/index.js as a child of its own: its own process group lets one kill end both.
    const child = spawn(process.execPath, argv, { cwd: INSPECTOR_CWD, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    inspectors.add(child.pid!);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => killGroup(child.pid!), 60_000);
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        inspectors.delete(child.pid!);
        resolve({ code, stdout, stderr });
      });
    });
  }
  async function inspectorJson(...args: string[]) {
    const out = await inspector(args);
    assert.equal(out.code, 0, out.stderr);
    return JSON.parse(out.stdout);
  }

  it('lists the tools', async () => {
    const listed = await inspectorJson('--method', 'tools/list');
    assert.deepEqual(listed.tools.map((t: { name: string }) => t.name).sort(), [tool('add_note'), tool('search_notes')]);
    const search = listed.tools.find((t: { name: string }) => t.name === tool('search_notes'));
    assert.equal(search.inputSchema.type, 'object');
    assert.ok(search.inputSchema.properties.query, 'the query argument is described');
  });

  it('calls a tool', async () => {
    const result = await inspectorJson('--method', 'tools/call', '--tool-name', tool('search_notes'), '--tool-arg', 'query=bread');
    assert.deepEqual(result, { content: [{ type: 'text', text: 'No notes match "bread".' }] });
    assert.equal(addon.calls().at(-1)?.body.arguments.query, 'bread');
  });

  it('is refused without the token', async () => {
    const out = await inspector(['--method', 'tools/list'], null);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /this endpoint needs an OAuth access token/);
  });
});

describe('the sign-in and consent pages along the way', () => {
  it('logged no console errors and no CSP violations', () => {
    assert.deepEqual(errors, []);
  });
});
