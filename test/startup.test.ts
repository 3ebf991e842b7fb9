import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { ConfigError, createLogger, parseConfig, StartupError } from '@toolport/core';
import { listen } from '../apps/api/src/listen';
import { startServer, type RunningServer } from '../apps/api/src/server';
import { createBacking, freePort, newSigningKey, PG_ADMIN_URL, TARGET, type Backing } from './helpers/target';
import { runToEnd, toolportEntry } from './helpers/process';

/**
 * Start-up that says what is wrong: the real entry point (`apps/api/src/main.ts`) as a process,
 * pointed at a dependency that is not there or a key that opens nothing. Each must end with exit
 * 78 (EX_CONFIG) and one line naming the setting and the fix: no stack trace, no ioredis flood,
 * no process that neither serves nor exits. And the embedded default listens on loopback only.
 */

const backings: Backing[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const b of backings) await b.drop();
});

async function backing(): Promise<Backing> {
  const b = await createBacking({ label: 'tp_start' });
  backings.push(b);
  return b;
}

const key = () => randomBytes(32).toString('base64');

/** Only what the test sets, so no setting of the machine running the suite (a HOST, a DATABASE_URL) leaks in. */
const baseEnv = () => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) });

interface Started {
  child: ChildProcess;
  port: number;
  stderr(): string;
  stdout(): string;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>, port: number): Started {
  const child = spawn(process.execPath, toolportEntry(), {
    env: { ...baseEnv(), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, port, stderr: () => err, stdout: () => out, exited };
}

/** Runs a start that must fail, to its exit. The bound only keeps a hang (today's unreachable Redis) from stalling the suite. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | null | 'still running'; lines: string[]; all: string }> {
  const s = start(env, await freePort());
  const code = await Promise.race([s.exited, sleep(120_000, undefined, { ref: false }).then(() => 'still running' as const)]);
  if (code === 'still running') s.child.kill('SIGKILL');
  const stderr = s.stderr();
  return { code, lines: stderr.split('\n').filter(Boolean), all: `${stderr}\n${s.stdout()}` };
}

/** What every failed start must look like: exit 78, each stderr line one sentence, the last naming `setting`. */
function assertOneLineWithFix(run: Awaited<ReturnType<typeof failedStart>>, setting: string, fix: RegExp) {
  const shown = run.all.slice(-3000);
  assert.equal(run.code, 78, `exits 78 (EX_CONFIG), not ${run.code}:\n${shown}`);
  assert.doesNotMatch(run.all, /Unhandled error event/, 'no ioredis flood');
  assert.doesNotMatch(run.all, /^\s+at .+[(:]\d+/m, `no stack trace:\n${shown}`);
  const last = run.lines.at(-1) ?? '';
  assert.match(last, /^Toolport cannot start: [^\n]+\.$/, `one closing line: ${last}`);
  assert.ok(last.includes(setting), `it names ${setting}: ${last}`);
  assert.match(last, fix, `it says what to do: ${last}`);
  return last;
}

/** The retry lines before the last one: "attempt n of N", counting up, N-1 of them for N attempts. */
function assertBoundedRetries(lines: string[], setting: string) {
  const waits = lines.slice(0, -1);
  assert.ok(waits.length > 0, 'a dependency that may come back is retried');
  const total = Number(/after (\d+) attempts/.exec(lines.at(-1)!)?.[1]);
  assert.equal(waits.length, total - 1, `one line per failed attempt, then the last: ${lines.join('\n')}`);
  for (const [i, line] of waits.entries()) {
    assert.match(line, new RegExp(`^Toolport is waiting: .*${setting}.*; attempt ${i + 1} of ${total}, trying again in \\d+ s\\.$`), line);
  }
}

async function waitReady(s: Started, host = '127.0.0.1') {
  for (let i = 0; i < 1200; i++) {
    if (s.child.exitCode !== null) throw new Error(`exited ${s.child.exitCode}:\n${s.stderr()}\n${s.stdout().slice(-2000)}`);
    if (await fetch(`http://${host}:${s.port}/readyz`).then((r) => r.ok, () => false)) return;
    await sleep(100);
  }
  throw new Error(`not ready on ${s.port}:\n${s.stderr()}`);
}

async function stop(s: Started) {
  s.child.kill('SIGTERM');
  assert.equal(await s.exited, 0, 'stops cleanly');
}

/**
 * The same start in this process (modules already loaded, so seconds cheaper than a child): for
 * the steps around the one under test, and for what needs no exit code.
 */
async function startHere(env: Record<string, string>, port: number): Promise<RunningServer> {
  const config = parseConfig({ PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...env });
  return startServer(config, { log: createLogger({}, !process.env.TEST_LOGS) });
}

/** A non-loopback IPv4 address of this machine, if it has one. */
function otherAddress(): string | undefined {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/** Whether /healthz answers on `host` (any answer at all, within a few seconds). */
const answers = (host: string, port: number) =>
  fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => r.status,
    () => undefined,
  );

const embeddedOnly = TARGET !== 'embedded' ? 'runs once, in the embedded pass (it needs no services)' : false;
const servicesOnly = TARGET !== 'services' ? 'needs Postgres on 127.0.0.1:5432 (the services pass)' : false;

// One suite, every case at once: most of the time is child processes starting.
describe('start-up', { concurrency: true }, () => {
  it('Postgres that does not answer: a few retries, one line each, then exit 78', { skip: embeddedOnly }, async () => {
    const b = await backing();
    const run = await failedStart({ DATA_DIR: b.env.DATA_DIR!, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x', TOOLPORT_SECRET_KEY: key(), TOOLPORT_SIGNING_KEYS: newSigningKey() });
    const last = assertOneLineWithFix(run, 'DATABASE_URL', /start Postgres/);
    assert.ok(last.includes('127.0.0.1:1'), 'it names where it looked');
    assertBoundedRetries(run.lines, 'DATABASE_URL');
  });

  it('a database that does not exist: exit 78 at once, naming it', { skip: servicesOnly }, async () => {
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/tp_missing_${randomBytes(4).toString('hex')}`;
    const b = await backing();
    const run = await failedStart({ ...b.env, DATABASE_URL: url.toString() });
    const last = assertOneLineWithFix(run, 'DATABASE_URL', /create it/);
    assert.ok(last.includes(url.pathname.slice(1)), `it names the database: ${last}`);
    assert.equal(run.lines.length, 1, 'not retried: a missing database does not come back by waiting');
  });

  it('Redis that does not answer, beside the embedded database: retries, then exit 78, no ioredis flood', { skip: embeddedOnly }, async () => {
    const b = await backing();
    const run = await failedStart({ ...b.env, REDIS_URL: 'redis://127.0.0.1:1' });
    assertOneLineWithFix(run, 'REDIS_URL', /start Redis/);
    assertBoundedRetries(run.lines, 'REDIS_URL');
  });

  for (const role of ['all', 'api', 'worker'] as const) {
    it(`Redis that does not answer, with a reachable Postgres, ROLE=${role}: retries, then exit 78, no ioredis flood`, { skip: servicesOnly }, async () => {
      const b = await backing();
      const run = await failedStart({ ...b.env, ROLE: role, REDIS_URL: 'redis://127.0.0.1:1' });
      assertOneLineWithFix(run, 'REDIS_URL', /start Redis/);
      assertBoundedRetries(run.lines, 'REDIS_URL');
    });
  }

  it('every bad setting at once: one report listing each, exit 78, before anything is contacted', { skip: embeddedOnly }, async () => {
    const run = await failedStart({
      PORT: 'eighty',
      ROLE: 'boss',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x',
      TOOLPORT_SIGNING_KEYS: '',
      REDIS_PREFIX: 'my prefix!',
      LIMIT_CALLS_PER_PERSON: '0',
      VAPID_PUBLIC_KEY: 'BOnly-half-of-a-pair',
      TOOLPORT_OPERATORS: 'ops@example.com',
    });
    const shown = run.all.slice(-3000);
    assert.equal(run.code, 78, `exits 78 (EX_CONFIG), not ${run.code}:\n${shown}`);
    assert.doesNotMatch(run.all, /^\s+at .+[(:]\d+/m, `no stack trace:\n${shown}`);
    assert.doesNotMatch(run.all, /Toolport is waiting/, 'nothing is contacted while a setting is wrong');
    for (const sentence of [
      'PORT must be a whole number from 0 to 65535, not "eighty".',
      'ROLE must be all, api or worker, not "boss".',
      'REDIS_PREFIX must be 1-40 letters, digits, _ or -.',
      'LIMIT_CALLS_PER_PERSON must be a whole number from 1 to 1000000, not "0".',
      'VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY go together: set both or neither.',
      'TOOLPORT_SECRET_KEY is required with DATABASE_URL: every process must share the master keys.',
      'TOOLPORT_SIGNING_KEYS is required with DATABASE_URL',
      'TOOLPORT_OPERATORS: "ops@example.com" is an email',
    ]) assert.ok(run.all.includes(sentence), `the report says: ${sentence}\n${shown}`);
    assert.match(run.lines[0] ?? '', /^Toolport cannot start, the settings have 8 problem\(s\):$/, 'one report, counting them all');
  });

  it('logs one line per migration it applies, by name, and none when nothing was pending', { skip: embeddedOnly }, async () => {
    const journal = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../packages/core/drizzle/meta/_journal.json'), 'utf8')) as { entries: Array<{ tag: string }> };
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tp-migrations-'));
    try {
      const applied = (out: string) =>
        out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; migration?: string }).filter((l) => l.msg === 'migration applied').map((l) => l.migration);
      const first = start({ DATA_DIR: dataDir }, await freePort());
      await waitReady(first);
      assert.deepEqual(applied(first.stdout()), journal.entries.map((e) => e.tag), 'a new database: each migration, in order');
      // What the first start is doing, in order: starting, each migration, running.
      const out = first.stdout();
      const at = (text: string) => out.indexOf(text);
      assert.ok(at('Toolport is starting: opening its database in') >= 0, out.slice(0, 500));
      assert.ok(at('Toolport is starting') < at('"migration applied"') && at('"migration applied"') < at('Toolport is running'), out.slice(0, 2000));
      await stop(first);
      const again = start({ DATA_DIR: dataDir }, await freePort());
      await waitReady(again);
      assert.deepEqual(applied(again.stdout()), [], 'nothing pending: no migration line');
      await stop(again);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says what the first start is doing while it builds the dashboard: a line before, one when done', { skip: embeddedOnly }, async () => {
    // `npm start`'s prestart step, into a folder of its own (the suite's dist/ is in use).
    const out = mkdtempSync(path.join(os.tmpdir(), 'tp-dashboard-'));
    const root = path.resolve(import.meta.dirname, '..');
    const build = () => runToEnd(process.execPath, ['--import', 'tsx', 'apps/dashboard/src/build.ts', '--out', out], { cwd: root, env: { ...process.env, NODE_OPTIONS: '' } });
    try {
      const first = await build();
      assert.equal(first.code, 0, first.stderr);
      const lines = first.stdout.split('\n').filter(Boolean);
      assert.equal(lines.length, 2, first.stdout);
      assert.match(lines[0]!, /^dashboard: building the web dashboard \(the first start takes up to a minute\)\.\.\.$/, 'said before the build starts');
      assert.match(lines[1]!, /^dashboard: built in \d+ ms\.$/, 'and when it is done');
      const again = await build();
      assert.deepEqual(again.stdout.split('\n').filter(Boolean), ['dashboard: up to date.'], 'nothing to build: one line');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('a port already taken: one line naming PORT', async () => {
    const port = await freePort();
    const taken: Server = await new Promise((resolve) => {
      const srv = createServer().listen(port, '127.0.0.1', () => resolve(srv));
    });
    try {
      // listen() is what startServer and startWorker listen with, after building the services.
      await assert.rejects(listen(() => new Response(), parseConfig({ PORT: String(port) })), (err: unknown) => {
        assert.ok(err instanceof StartupError, String(err));
        assert.match(err.message, new RegExp(`^Toolport cannot start: port ${port} on 127\\.0\\.0\\.1 is already in use \\(PORT\\); .*set another PORT\\.$`));
        return true;
      });
    } finally {
      taken.close();
    }
  });

  it('a new TOOLPORT_SECRET_KEY on an existing database: exit 78 with the rotation to follow, and that fix starts', async () => {
    const b = await backing();
    const [oldKey, newKey] = [key(), key()];
    const port = await freePort();
    await (await startHere({ ...b.env, TOOLPORT_SECRET_KEY: oldKey }, port)).close();

    const run = await failedStart({ ...b.env, TOOLPORT_SECRET_KEY: newKey });
    const last = assertOneLineWithFix(run, 'TOOLPORT_SECRET_KEY', /reencrypt-secrets/);
    assert.equal(run.lines.length, 1, 'one line');
    assert.ok(!last.includes(oldKey) && !last.includes(newKey), 'no key is echoed');

    // The sentence's fix: the new key first, the database's after it.
    await (await startHere({ ...b.env, TOOLPORT_SECRET_KEY: `${newKey},${oldKey}` }, port)).close();
  });

  it('parses HOST: loopback without DATABASE_URL, every interface with it, as set otherwise', () => {
    assert.equal(parseConfig({}).host, '127.0.0.1');
    assert.equal(parseConfig({ REDIS_URL: 'redis://r:6379' }).host, '127.0.0.1', 'the embedded database with Redis is still one machine');
    assert.equal(parseConfig({ DATABASE_URL: 'postgres://x@db/x' }).host, '0.0.0.0', 'as before HOST existed');
    assert.equal(parseConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0');
    assert.equal(parseConfig({ HOST: '::' }).host, '::');
    assert.equal(parseConfig({ HOST: '[::1]' }).host, '::1');
    assert.equal(parseConfig({ DATABASE_URL: 'postgres://x@db/x', HOST: '10.0.0.5' }).host, '10.0.0.5');
    assert.equal(parseConfig({ HOST: 'localhost' }).host, 'localhost');
    assert.throws(
      () => parseConfig({ HOST: 'http://0.0.0.0', PORT: 'x' }),
      (err: unknown) => err instanceof ConfigError && err.problems.length === 2 && err.problems.some((p) => p.startsWith('HOST must be')),
      'reported with the other bad settings',
    );
  });

  it('takes a shorter call budget, approval wait, shutdown grace and stream heartbeat (for tests), never a longer one', () => {
    const timers = { CALL_BUDGET_SECONDS: 55, APPROVAL_TIMEOUT_SECONDS: 30, SHUTDOWN_GRACE_SECONDS: 25, STREAM_HEARTBEAT_SECONDS: 15 };
    const c = parseConfig({});
    assert.deepEqual([c.callBudgetSeconds, c.approvalTimeoutSeconds, c.shutdownGraceSeconds, c.streamHeartbeatSeconds], Object.values(timers), 'the defaults');
    const short = parseConfig({ CALL_BUDGET_SECONDS: '20', APPROVAL_TIMEOUT_SECONDS: '8', SHUTDOWN_GRACE_SECONDS: '6', STREAM_HEARTBEAT_SECONDS: '1' });
    assert.deepEqual([short.callBudgetSeconds, short.approvalTimeoutSeconds, short.shutdownGraceSeconds, short.streamHeartbeatSeconds], [20, 8, 6, 1]);
    for (const [name, max] of Object.entries(timers)) {
      for (const bad of [String(max + 1), '0', '2.5']) {
        assert.throws(
          () => parseConfig({ [name]: bad }),
          (err: unknown) => err instanceof ConfigError && err.problems.length === 1 && err.problems[0] === `${name} must be a whole number from 1 to ${max}, not "${bad}".`,
          `${name}=${bad}`,
        );
      }
    }
  });

  it('the embedded default answers on 127.0.0.1 but not on another address of this machine; HOST=0.0.0.0 does', { skip: embeddedOnly }, async (t) => {
    const address = otherAddress();
    if (!address) return t.skip('this machine has no non-loopback IPv4 address to try');
    const b = await backing();
    const port = await freePort();
    const local = start(b.env, port);
    await waitReady(local);
    assert.equal(await answers('127.0.0.1', port), 200, 'answers on loopback');
    assert.equal(await answers(address, port), undefined, `nothing answers on ${address}`);
    await stop(local);

    const open = await startHere({ ...b.env, HOST: '0.0.0.0' }, port);
    try {
      assert.equal(await answers(address, port), 200, `HOST=0.0.0.0 answers on ${address}`);
    } finally {
      await open.close();
    }
  });

  it('with DATABASE_URL it still listens on every interface', { skip: servicesOnly }, async (t) => {
    const address = otherAddress();
    if (!address) return t.skip('this machine has no non-loopback IPv4 address to try');
    const b = await backing();
    const port = await freePort();
    const s = await startHere(b.env, port);
    try {
      assert.equal(await answers(address, port), 200, `answers on ${address}`);
    } finally {
      await s.close();
    }
  });
});
