// The Python add-on kit (packages/addon-kit-python): its own unittest suite, its receipt hash
// against Toolport's, and the Python Notes example (examples/notes-python) as a child process
// behind a real Toolport, called by the SDK's MCP client through the real OAuth flow.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http, { type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { newSigningSecret, signatureHeaders } from '../packages/core/src/outbound/signing';
import { argumentsHash } from '../packages/core/src/queue/types';
import { sleep } from './helpers/approvals';
import { runToolportCli } from './helpers/cli';
import { installFor, newPerson, type Client } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { runToEnd } from './helpers/process';
import { freePort, startToolport, type Toolport } from './helpers/target';

const root = path.resolve(import.meta.dirname, '..');
const KIT_SRC = path.join(root, 'packages/addon-kit-python/src');
const EXAMPLE = path.join(root, 'examples/notes-python');

/** The first of python3, python3.11 that is Python 3.11 or newer, as the kit requires. */
function findPython(): string | undefined {
  for (const bin of ['python3', 'python3.11']) {
    const probe = spawnSync(bin, ['-c', 'import sys; print(sys.version_info >= (3, 11))'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.trim() === 'True') return bin;
  }
  return undefined;
}
const PYTHON = findPython();
const NO_PYTHON = 'No Python 3.11 or newer was found (tried python3, then python3.11); the Python add-on kit needs one. Install it, or put it on PATH.';
const pythonEnv = (extra: Record<string, string> = {}) => ({
  ...process.env,
  PYTHONPATH: [KIT_SRC, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  PYTHONIOENCODING: 'utf-8',
  PYTHONUNBUFFERED: '1',
  ...extra,
});

/** Runs python to the end, asynchronously: Toolport serves from this same process meanwhile. */
function runPython(args: string[], input = '') {
  assert.ok(PYTHON, NO_PYTHON);
  return runToEnd(PYTHON, args, { cwd: root, env: pythonEnv(), input });
}

/** The Python Notes add-on on 127.0.0.1:port, started as a person would start it. */
async function startPythonNotes(port: number, env: Record<string, string>) {
  assert.ok(PYTHON, NO_PYTHON);
  const child: ChildProcess = spawn(PYTHON, [path.join(EXAMPLE, 'main.py')], {
    cwd: root,
    env: pythonEnv({ NOTES_PORT: String(port), NOTES_HOST: '127.0.0.1', ...env }),
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c) => {
      stdout += c;
      if (stdout.includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the Python add-on exited (${code}) before listening:\n${stderr}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

interface Seen {
  webhookId: string;
  type: string;
  tool?: string;
  attempt?: number;
  raw: string;
  status: number;
  answer: string;
  lost: boolean;
}

/**
 * Forwards every delivery, byte for byte, to the add-on and records it with the add-on's answer.
 * `loseNext` drops one answer on its way back (Toolport gets a 503), as a network would.
 */
async function startRecordingProxy(target: string) {
  const seen: Seen[] = [];
  let lose: ((body: any) => boolean) | undefined;
  const server: Server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
      let upstream: Response;
      try {
        upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, body: raw });
      } catch {
        res.writeHead(502).end();
        return;
      }
      const answer = await upstream.text();
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const lost = !!lose && lose(body);
      if (lost) lose = undefined;
      seen.push({ webhookId: headers['webhook-id'] ?? '', type: body?.type, tool: body?.tool, attempt: body?.call?.attempt, raw, status: upstream.status, answer, lost });
      if (lost) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('the answer was lost on the way back');
        return;
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook`,
    seen,
    loseNext(pred: (body: any) => boolean) {
      lose = pred;
    },
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/** A POST that declares a body of `length` bytes and sends none: the answer must come from the headers alone. */
function declareOnly(url: string, headers: Record<string, string>, length: number): Promise<{ status: number; connection?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(length) } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
      req.destroy();
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string }>; structuredContent?: any };

describe('the Python add-on kit on its own', () => {
  it('passes its unittest suite', async () => {
    const run = await runPython(['-m', 'unittest', 'discover', '-s', 'packages/addon-kit-python/tests']);
    assert.equal(run.code, 0, `python -m unittest discover -s packages/addon-kit-python/tests failed:\n${run.stderr.slice(-6000)}`);
    assert.match(run.stderr, /\nOK\b/);
  });

  it("passes the Python Notes example's tests, the addon.json check among them", async () => {
    const run = await runPython(['-m', 'unittest', 'discover', '-s', 'examples/notes-python/tests']);
    assert.equal(run.code, 0, `python -m unittest discover -s examples/notes-python/tests failed:\n${run.stderr.slice(-6000)}`);
  });

  it("hashes arguments into the receipt's argumentsHash exactly as Toolport does", async () => {
    // What Toolport hashes is JSON.stringify of the checked arguments; the kit gets that text in the
    // body, reads it with json.loads and must write it back byte for byte.
    const values: unknown[] = [
      { older_than_days: 1e-7 },
      { x: 1 }, { x: 1.5 }, { x: -0 }, { x: 0.1 + 0.2 }, { x: 1e21 }, { x: 1e16 }, { x: 1e-6 }, { x: 5e-324 },
      { x: 1.7976931348623157e308 }, { x: 123456789012345680000 }, { x: -2.5e-10 }, { x: 2 ** 53 },
      { t: 'é ü 中 😀 \u2028 \u2029 \u0000 \u001f \u007f " \\ </script>' },
      { t: 'a lone \ud800 surrogate' },
      { nested: { b: [1, 2.5, null, true, false], a: {} }, empty: [] },
      { b: 2, 1: 'an integer-like key, which JavaScript puts first' },
      {},
    ];
    const texts = values.map((v) => JSON.stringify(v));
    const script = 'import json, sys\nfrom toolport_addon_kit import arguments_hash\nprint(json.dumps([arguments_hash(v) for v in json.loads(sys.stdin.read())]))';
    const run = await runPython(['-c', script], `[${texts.join(',')}]`);
    assert.equal(run.code, 0, run.stderr);
    const got = JSON.parse(run.stdout) as string[];
    texts.forEach((text, i) => assert.equal(got[i], argumentsHash(text), `the hash of ${text}`));
  });
});

describe('the Python Notes example behind Toolport, called by an MCP client', () => {
  let tp: Toolport;
  let dir: string;
  let notesFile: string;
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  let notes: Awaited<ReturnType<typeof startPythonNotes>> | undefined;
  let person: { client: Client; user: { mcpUrl: string } };
  let key: string;
  let app: McpClient;
  let port: number;
  let secret: string;

  before(async () => {
    assert.ok(PYTHON, NO_PYTHON);
    tp = await startToolport();
    dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-py-'));
    notesFile = path.join(dir, 'notes.json');
    port = await freePort();
    proxy = await startRecordingProxy(`http://127.0.0.1:${port}`);
    notes = await startPythonNotes(port, { NOTES_FILE: notesFile });
    person = await newPerson(tp.url, 'py-dev');
    const created = await person.client.post('/api/keys', { name: 'cli' });
    assert.equal(created.status, 201, created.text);
    key = created.body.key;
  });
  after(async () => {
    await app?.close().catch(() => {});
    await notes?.stop();
    await proxy?.close();
    await tp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const call = (name: string, args: Record<string, unknown>) => app.callTool({ name: `notes-py__${name}`, arguments: args }) as Promise<ToolResult>;
  const deliveriesOf = async (callId: string) => {
    const res = await person.client.get('/api/addons/notes-py/deliveries');
    assert.equal(res.status, 200, res.text);
    return (res.body.deliveries as any[]).filter((d) => d.callId === callId).sort((a, b) => a.attempt - b.attempt);
  };
  /** The person's pending approval of a call to `tool`, as the dashboard lists it. */
  const pendingFor = async (tool: string) => {
    for (let i = 0; i < 400; i++) {
      const res = await person.client.get('/api/approvals?status=pending');
      const found = (res.body as any[]).find((a) => a.tool === tool);
      if (found) return found;
      await sleep(25);
    }
    throw new Error(`no approval of ${tool} appeared`);
  };
  const allow = async (tool: string) => {
    const approval = await pendingFor(tool);
    const decided = await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal(decided.status, 200, decided.text);
    return approval;
  };

  it('registers with the CLI: the add-on echoes the registration ping before it knows its secret, then restarts with it', async () => {
    const pushed = await runToolportCli(['addon', 'push', path.join(EXAMPLE, 'addon.json'), '--webhook', proxy.url, '--json'], {
      config: path.join(dir, 'config.json'),
      env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key },
    });
    assert.equal(pushed.code, 0, pushed.stdout + pushed.stderr);
    assert.equal(pushed.json.id, 'notes-py');
    assert.match(pushed.json.signingSecret, /^whsec_/);
    const ping = proxy.seen.find((s) => s.type === 'ping');
    assert.ok(ping, 'Toolport pinged the webhook');
    assert.equal(ping.status, 200);
    assert.deepEqual(JSON.parse(ping.answer), { challenge: JSON.parse(ping.raw).challenge });

    secret = pushed.json.signingSecret;
    await notes!.stop();
    notes = await startPythonNotes(port, { NOTES_FILE: notesFile, NOTES_SECRET: secret });
    await installFor(person, 'notes-py', { search_notes: true, add_note: true, delete_note: true, forget_old_notes: true });
    ({ client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Python Notes test app' }));
  });

  it('lists the tools the person switched on, with their titles and safety hints', async () => {
    const { tools } = await app.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['notes-py__add_note', 'notes-py__delete_note', 'notes-py__forget_old_notes', 'notes-py__search_notes']);
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.equal(byName.get('notes-py__search_notes')!.title, 'Search notes');
    assert.equal(byName.get('notes-py__search_notes')!.annotations?.readOnlyHint, true);
    assert.equal(byName.get('notes-py__delete_note')!.annotations?.destructiveHint, true);
  });

  it('a plain call: adds a note, and a search finds it as JSON', async () => {
    const added = await call('add_note', { text: '# Shopping\nOat milk and bread' });
    assert.notEqual(added.isError, true, JSON.stringify(added));
    assert.match(added.structuredContent.id, /^note_/);
    assert.equal(added.structuredContent.title, 'Shopping');
    const found = await call('search_notes', { query: 'OAT milk' });
    assert.deepEqual(found.structuredContent.notes.map((n: any) => n.title), ['Shopping']);
    assert.equal(found.structuredContent.total, 1);
  });

  it("a refusal: the add-on's sentence reaches the app as a tool error", async () => {
    const refused = await call('add_note', { text: '   ' });
    assert.equal(refused.isError, true);
    assert.equal(refused.content[0]?.text, 'The note is empty; give it some text.');
  });

  it('refuses tampered, stale, future, unsigned and oversized deliveries sent straight to it, and runs none', async () => {
    const direct = `http://127.0.0.1:${port}/webhook`;
    const real = proxy.seen.find((s) => s.type === 'tool.call' && s.tool === 'add_note')!;
    const forged = real.raw.replace('# Shopping', '# Forged');
    assert.notEqual(forged, real.raw);
    const now = Date.now() / 1000;
    // Toolport's own signer, with the add-on's real secret: only the one thing named is wrong.
    const signed = (body: string, o: { at?: number; secrets?: string[]; id?: string } = {}) =>
      signatureHeaders({ id: o.id ?? `call_direct_${Math.random().toString(36).slice(2)}`, timestamp: o.at ?? now, body, secrets: o.secrets ?? [secret] });
    const post = (headers: Record<string, string>, body: string) => fetch(direct, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const realHeaders = signed(real.raw);
    const { 'webhook-signature': _sig, ...unsigned } = signed(forged);
    const cases: Array<[string, Record<string, string>, string]> = [
      ['a body changed after signing', realHeaders, forged],
      ['another webhook-id', { ...realHeaders, 'webhook-id': 'call_other' }, real.raw],
      // A minute past the 300 s tolerance either way: the header's whole seconds and a busy machine's
      // second between signing and checking cannot bring it back inside (301 once could).
      ['signed 6 minutes ago', signed(forged, { at: now - 360 }), forged],
      ['signed 6 minutes ahead', signed(forged, { at: now + 360 }), forged],
      ['signed with another secret', signed(forged, { secrets: [newSigningSecret()] }), forged],
      ['unsigned', unsigned, forged],
    ];
    for (const [what, headers, body] of cases) {
      const res = await post(headers, body);
      assert.equal(res.status, 401, what);
      assert.equal(await res.text(), 'Unauthorized', `${what}: nothing more is said`);
    }
    const big = await declareOnly(direct, signed('{}'), 2_000_000);
    assert.deepEqual(big, { status: 413, connection: 'close' }, 'refused by its declared length, before any of it is read');
    assert.equal((await call('search_notes', { query: 'forged' })).structuredContent.total, 0, 'none of them ran');
    // The same forged body with a good signature does run: the signature is all that stopped it.
    const control = forged.replace(/"user":\{"id":"[^"]+"\}/, '"user":{"id":"usr_direct_test"}');
    const ran = await post(signed(control), control);
    assert.equal(ran.status, 200);
    assert.equal(((await ran.json()) as any).json.title, 'Forged');
  });

  it("a destructive call the person allows runs, its receipt checked over JavaScript's text of 1e-7", async () => {
    const calling = call('forget_old_notes', { older_than_days: 1e-7 });
    calling.catch(() => {});
    const approval = await allow('forget_old_notes');
    // The confirm handler in Python described the call for the person.
    assert.match(approval.confirm?.message ?? '', /^Delete 1 note older than /);
    const result = await calling;
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { deleted: 1, titles: ['Shopping'] });
    const delivered = proxy.seen.find((s) => s.type === 'tool.call' && s.tool === 'forget_old_notes')!;
    assert.match(delivered.raw, /"arguments":\{"older_than_days":1e-7\}/, 'Python reads 1e-07; its json.dumps would hash another text');
    assert.equal(JSON.parse(delivered.raw).approval.argumentsHash, argumentsHash('{"older_than_days":1e-7}'));
  });

  it('a retried delivery is answered once: the first answer is lost, the retry gets the same answer', async () => {
    const { structuredContent: trip } = await call('add_note', { text: 'Trip plan\nTrain at 9' });
    proxy.loseNext((b) => b?.type === 'tool.call' && b.tool === 'delete_note');
    const calling = call('delete_note', { id: trip.id });
    calling.catch(() => {});
    const approval = await allow('delete_note');
    assert.equal(approval.confirm?.message, 'Delete the note “Trip plan”?');
    const result = await calling;
    // Run twice, the second run would find no note and refuse: the kit answered from memory.
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.content[0]?.text, 'Deleted the note “Trip plan”.');

    const attempts = proxy.seen.filter((s) => s.type === 'tool.call' && s.tool === 'delete_note');
    assert.deepEqual(attempts.map((s) => [s.attempt, s.lost, s.status]), [[1, true, 200], [2, false, 200]]);
    assert.equal(attempts[1]!.webhookId, attempts[0]!.webhookId, 'the same webhook-id on the retry');
    assert.equal(attempts[1]!.answer, attempts[0]!.answer, 'the remembered answer, byte for byte');
    const log = await deliveriesOf(attempts[0]!.webhookId);
    assert.deepEqual(log.filter((d) => d.type === 'tool.call').map((d) => [d.attempt, d.status]), [[1, 503], [2, 200]]);
    assert.equal((await call('search_notes', { query: 'trip' })).structuredContent.total, 0);
  });

  it('a handler that raises: the app gets the generic sentence, the delivery log says addon_failed', async () => {
    // The disk refuses the next write: the notes file is now a directory (root cannot write it either).
    rmSync(notesFile, { force: true });
    mkdirSync(notesFile);
    const failed = await call('add_note', { text: 'Lost\nnever saved' });
    assert.equal(failed.isError, true);
    assert.equal(failed.content[0]?.text, 'The add-on failed; try again later.');
    const attempt = proxy.seen.filter((s) => s.type === 'tool.call' && s.tool === 'add_note').at(-1)!;
    assert.deepEqual(JSON.parse(attempt.answer), { error: 'The add-on failed; try again later.', failed: true });
    const [logged] = await deliveriesOf(attempt.webhookId);
    assert.equal(logged.errorClass, 'addon_failed');
    assert.match(notes!.stderr(), /IsADirectoryError/, "the add-on's own log has the traceback");
    assert.doesNotMatch(failed.content[0]?.text ?? '', /IsADirectory|notes\.json/, 'the app learns nothing of it');
  });
});
