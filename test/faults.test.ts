import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import {
  privateServicesSkip,
  spawnToolport,
  startPrivateDeployment,
  waitReady,
  type PrivatePostgres,
  type PrivateRedis,
  type ToolportProcess,
} from './helpers/private-services';
import { freePort, TARGET, UNLIMITED_CALLS } from './helpers/target';
import { LEASE_SECONDS } from '../packages/core/src/approvals/request';

/**
 * The fault classes of docs/faults.md, on private Postgres and Redis instances this file kills and
 * restarts (never the shared ones), with Toolport as real processes from the real entry point.
 * Each case states the answer every caller must get: a result or a clear sentence, never a hang,
 * never a call run without a decision, never one call delivered under two ids.
 */
const skip = privateServicesSkip(TARGET);
const APPROVAL_TIMEOUT_SECONDS = 12;

let pg: PrivatePostgres;
let redis: PrivateRedis;
let env: Record<string, string>;
let publicUrl: string;
const procs: ToolportProcess[] = [];
let apiA: ToolportProcess;
let apiB: ToolportProcess;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
let token: string;
let mcpPath: string;
/** Per delivered text: how long the add-on takes to answer it. */
const slow = new Map<string, number>();

async function start(role: 'api' | 'worker', port?: number, extra: Record<string, string> = {}) {
  const p = await spawnToolport(role, { ...env, ...extra }, { port, publicUrl });
  procs.push(p);
  return p;
}

type Answer =
  | { kind: 'result'; text: string; ms: number }
  | { kind: 'tool-error'; text: string; ms: number }
  | { kind: 'http'; status: number; contentType: string; body: string; ms: number }
  | { kind: 'rpc-error'; message: string; ms: number }
  | { kind: 'network'; error: string; ms: number };

/** One JSON-RPC message to an API process's MCP endpoint, as the app sends it. */
function postMcp(api: ToolportProcess, message: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${api.url}${mcpPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
    signal,
  });
}

let rpc = 0;
/** One tools/call as an app would send it, with the whole answer classified. */
async function call(api: ToolportProcess, tool: string, args: Record<string, unknown>): Promise<Answer> {
  const started = Date.now();
  const ms = () => Date.now() - started;
  let res: Response;
  try {
    res = await postMcp(api, { id: ++rpc, method: 'tools/call', params: { name: `${person.addonId}__${tool}`, arguments: args } }, AbortSignal.timeout(60_000));
  } catch (err) {
    return { kind: 'network', error: String((err as Error).cause ?? err), ms: ms() };
  }
  const body = await res.text().catch(() => '');
  if (res.status !== 200) return { kind: 'http', status: res.status, contentType: res.headers.get('content-type') ?? '', body, ms: ms() };
  const msg = JSON.parse(body);
  if (msg.error) return { kind: 'rpc-error', message: String(msg.error.message), ms: ms() };
  const text = (msg.result.content ?? []).map((c: { text?: string }) => c.text ?? '').join('');
  return { kind: msg.result.isError ? 'tool-error' : 'result', text, ms: ms() };
}

/** The answers DESIGN.md allows when something is down: a result, a sentence, or a 503 problem. */
function assertClear(a: Answer, label: string) {
  if (a.kind === 'result') return;
  if (a.kind === 'tool-error') {
    assert.match(a.text, /^[A-Z].{10,300}[.!]$/s, `${label}: the tool error is one clear sentence: ${a.text}`);
    assert.doesNotMatch(a.text, /ECONN|redis|postgres|sql|stack|at \w+ \(/i, `${label}: no internals leak: ${a.text}`);
    return;
  }
  if (a.kind === 'http') {
    assert.equal(a.status, 503, `${label}: only 503 is a clear refusal here: ${a.status} ${a.body.slice(0, 300)}`);
    assert.match(a.contentType, /application\/problem\+json/, `${label}: problem+json`);
    return;
  }
  assert.fail(`${label}: unclear answer ${JSON.stringify(a)}`);
}

/** Webhook ids per note text, from the add-on's own record of what it received. */
function idsByText() {
  const out = new Map<string, Set<string>>();
  for (const d of hook.calls()) {
    const key = String(d.body.arguments.text ?? d.body.arguments.id);
    const set = out.get(key) ?? new Set();
    set.add(String(d.headers['webhook-id']));
    out.set(key, set);
  }
  return out;
}

function assertOneIdPerCall() {
  for (const [text, ids] of idsByText()) assert.equal(ids.size, 1, `${text} was delivered under one webhook-id, not ${[...ids].join(', ')}`);
}

async function pendingApprovals(): Promise<any[]> {
  const res = await person.client.get('/api/approvals?status=pending');
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Waits for the approvals of `ids`; if they never appear, says what `calls` answered instead. */
async function waitPending(ids: string[], calls: Promise<Answer>[] = [], timeoutMs = 15_000) {
  const answered: Record<string, Answer> = {};
  calls.forEach((c, i) => void c.then((a) => (answered[ids[i] ?? i] = a)));
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pending = await pendingApprovals();
    const found = ids.map((id) => pending.find((a) => a.arguments?.id === id));
    if (found.every(Boolean)) return found as any[];
    if (Date.now() > until) throw new Error(`approvals for ${ids.join(', ')} never appeared; the calls answered ${JSON.stringify(answered)}`);
    await sleep(50);
  }
}

/**
 * How many `ok` entries the person's call log holds for calls made at or after `since`. Counted by
 * each row's own time (set when the call ended, in the process that made it), not against a count
 * taken earlier: another API process may still be writing an earlier test's last row.
 */
async function okLoggedSince(since: number): Promise<number> {
  let ok = 0;
  let cursor: string | null = null;
  do {
    const res: { status: number; text: string; body: any } = await person.client.get(`/api/calls?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, res.text);
    for (const item of res.body.items) if (item.outcome === 'ok' && Date.parse(item.createdAt) >= since) ok++;
    cursor = res.body.nextCursor;
  } while (cursor);
  return ok;
}

/** Waits until the call log holds `n` `ok` entries for calls since `since` (writes may be retried). */
async function assertLoggedOk(since: number, n: number, label: string) {
  const until = Date.now() + 15_000;
  for (;;) {
    const added = await okLoggedSince(since);
    if (added === n) return;
    assert.ok(added < n, `${label}: more ok entries than results (${added} > ${n})`);
    assert.ok(Date.now() < until, `${label}: every call that returned a result is in the call log (${added} of ${n})`);
    await sleep(250);
  }
}

/** Calls that must work once the fault is over, without restarting anything. */
async function assertServes(label: string) {
  for (const api of [apiA, apiB]) {
    const text = `${label}-after-${randomBytes(3).toString('hex')}`;
    const a = await call(api, 'add_note', { text });
    assert.deepEqual({ kind: a.kind }, { kind: 'result' }, `${label}: a later call works: ${JSON.stringify(a)}`);
  }
}

before(async () => {
  if (skip) return;
  const deployment = await startPrivateDeployment('tpfault');
  ({ pg, redis } = deployment);
  const portA = await freePort();
  publicUrl = `http://127.0.0.1:${portA}`;
  env = {
    ...deployment.env,
    APPROVAL_TIMEOUT_SECONDS: String(APPROVAL_TIMEOUT_SECONDS),
    ...UNLIMITED_CALLS,
  };
  hook = await startAddonServer({
    add_note: async (body) => {
      await sleep(slow.get(body.arguments.text) ?? 0);
      return { text: `saved ${body.arguments.text}` };
    },
    delete_note: async (body) => ({ text: `deleted ${body.arguments.id}` }),
  });
  // A description for every destructive call, so each one asks the person.
  hook.onConfirm(async (body) => ({ confirm: { message: `Delete ${body.arguments.id}?`, style: 'destructive' } }));
  apiA = await start('api', portA);
  [apiB] = await Promise.all([start('api'), start('worker'), start('worker')]);
  person = await personWithNotes(apiA.url, hook, { add_note: true, delete_note: true }, 'fault');
  const provider = new TestOAuthProvider('Fault');
  await connectApp(person.user.mcpUrl, person.client, { provider });
  token = provider.saved!.access_token;
  mcpPath = new URL(person.user.mcpUrl).pathname;
});

after(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
  await hook?.close();
  await Promise.allSettled([pg?.stop(), redis?.stop()]);
});

describe('faults on real services', { skip, concurrency: false }, () => {
  // A failed case must not leave the next one without its services.
  beforeEach(async () => {
    await Promise.all([pg.ensureUp(), redis.ensureUp()]);
    redis.appendonly = true;
  });

  it('Redis restarted mid-call (append-only file on): every call answers, one id per call, later calls work', async (t) => {
    const texts = Array.from({ length: 16 }, (_, i) => `redis-aof-${i}`);
    for (const text of texts) slow.set(text, 800);
    const runs = texts.map((text, i) => sleep(i * 30).then(() => call(i % 2 ? apiB : apiA, 'add_note', { text })));
    await sleep(250);
    await redis.restart({ downMs: 1_000 });
    const answers = await Promise.all(runs);
    answers.forEach((a, i) => assertClear(a, texts[i]!));
    assertOneIdPerCall();
    const ids = idsByText();
    answers.forEach((a, i) => {
      if (a.kind === 'result') assert.ok(ids.has(texts[i]!), `${texts[i]} has a result, so the add-on received it`);
    });
    const slowest = Math.max(...answers.map((a) => a.ms));
    t.diagnostic(`answers: ${JSON.stringify(answers.map((a) => [a.kind, a.ms, 'text' in a ? a.text.slice(0, 60) : '']))}`);
    assert.ok(slowest < 35_000, `no call waited past its deadline and grace (${slowest} ms)`);
    for (const p of procs.filter((x) => x.child.exitCode === null)) await waitReady(p.url, 20_000);
    await assertServes('redis-aof');
  });

  it('Redis restarted empty (no persistence): queued calls end with a clear answer, nothing runs twice, later calls work', async (t) => {
    redis.appendonly = false;
    const texts = Array.from({ length: 10 }, (_, i) => `redis-empty-${i}`);
    for (const text of texts) slow.set(text, 800);
    const runs = texts.map((text, i) => sleep(i * 30).then(() => call(i % 2 ? apiB : apiA, 'add_note', { text })));
    await sleep(250);
    await redis.restart({ downMs: 500 });
    const answers = await Promise.all(runs);
    t.diagnostic(`answers: ${JSON.stringify(answers.map((a) => [a.kind, a.ms, 'text' in a ? a.text.slice(0, 60) : '']))}`);
    answers.forEach((a, i) => assertClear(a, texts[i]!));
    assertOneIdPerCall();
    for (const p of procs.filter((x) => x.child.exitCode === null)) await waitReady(p.url, 20_000);
    await assertServes('redis-empty');
    redis.appendonly = true;
  });

  it('an allow posted while Redis is down runs the held call once Redis is back, not at its expiry', async (t) => {
    const id = `redis-decide-${randomBytes(3).toString('hex')}`;
    const running = call(apiA, 'delete_note', { id });
    const [pending] = await waitPending([id], [running]);
    await redis.kill();
    // Recorded in Postgres; the broadcast that would wake the holder cannot go out.
    const decided = await person.client.post(`/api/approvals/${pending.id}/decision`, { decision: 'allow' });
    t.diagnostic(`allow while Redis is down: ${decided.status} ${decided.text.slice(0, 200)}`);
    assert.equal(decided.status, 200, decided.text);
    await sleep(500);
    await redis.start();
    const answer = await running;
    t.diagnostic(`answered ${answer.ms} ms after the call was sent: ${JSON.stringify(answer).slice(0, 200)}`);
    assert.equal(answer.kind, 'result', JSON.stringify(answer));
    assert.ok(answer.ms < (APPROVAL_TIMEOUT_SECONDS - 4) * 1000, `resumed once the bus was back, not at the approval's expiry (${answer.ms} ms)`);
    assert.equal(hook.calls().filter((d) => d.body.arguments.id === id).length, 1, 'delivered once');
    for (const p of procs.filter((x) => x.child.exitCode === null)) await waitReady(p.url, 20_000);
    await assertServes('redis-decide');
  });

  it('a cancellation sent while Redis is down still ends the held call in the process it reaches', async (t) => {
    const id = `redis-cancel-${randomBytes(3).toString('hex')}`;
    const running = call(apiA, 'delete_note', { id });
    const requestId = rpc; // the id `call` just sent
    await waitPending([id], [running]);
    await redis.kill();
    try {
      // The app's notifications/cancelled, as the SDK's client sends it, to the process holding the call.
      const sent = Date.now();
      const res = await postMcp(apiA, { method: 'notifications/cancelled', params: { requestId, reason: 'the person changed their mind' } });
      t.diagnostic(`notification answered ${res.status} in ${Date.now() - sent} ms`);
      assert.equal(res.status, 202, await res.text());
      const answer = await running;
      t.diagnostic(`call answered ${answer.ms} ms after it was sent: ${JSON.stringify(answer).slice(0, 200)}`);
      assert.equal(answer.kind, 'tool-error', JSON.stringify(answer));
      assert.match((answer as { text: string }).text, /cancelled/);
      assert.ok(answer.ms < (APPROVAL_TIMEOUT_SECONDS - 4) * 1000, `ended by the cancellation, not at the approval's expiry (${answer.ms} ms)`);
      assert.equal(hook.calls().filter((d) => d.body.arguments.id === id).length, 0, 'nothing ran');
    } finally {
      await redis.start();
    }
    for (const p of procs.filter((x) => x.child.exitCode === null)) await waitReady(p.url, 20_000);
    await assertServes('redis-cancel');
  });

  it('Postgres killed mid-transaction: clear errors while down, no decision lost or doubled, recovers by itself', async (t) => {
    const noteTexts = Array.from({ length: 8 }, (_, i) => `pg-${i}`);
    for (const text of noteTexts) slow.set(text, 600);
    // Three destructive calls waiting for the person when the database dies.
    const since = Date.now();
    const ids = ['pg-del-allow', 'pg-del-deny', 'pg-del-expire'];
    const destructive = ids.map((id, i) => call(i % 2 ? apiB : apiA, 'delete_note', { id }));
    const pending = await waitPending(ids, destructive);
    const notes = noteTexts.map((text, i) => call(i % 2 ? apiB : apiA, 'add_note', { text }));
    await sleep(150);
    await pg.kill();
    const killedAt = Date.now();

    // While it is down: readiness says so, a decision and a new call get clear answers.
    const ready = await fetch(`${apiB.url}/readyz`);
    assert.equal(ready.status, 503, 'not ready without the database');
    const decidedDown = await person.client.post(`/api/approvals/${pending[0].id}/decision`, { decision: 'allow' });
    t.diagnostic(`decision while down: ${decidedDown.status} ${decidedDown.text.slice(0, 200)}`);
    assert.equal(decidedDown.status, 503, `a decision while the database is down is a 503: ${decidedDown.status} ${decidedDown.text}`);
    assert.match(decidedDown.headers.get('content-type') ?? '', /problem\+json/);
    const duringDown = await call(apiA, 'add_note', { text: 'pg-during' });
    t.diagnostic(`call while down: ${JSON.stringify(duringDown)}`);
    assertClear(duringDown, 'a call while Postgres is down');

    // A few seconds down, as a restart or failover takes: longer than the log writer's quick retries.
    await sleep(Math.max(0, 4_000 - (Date.now() - killedAt)));
    await pg.start();
    for (const p of procs.filter((x) => x.child.exitCode === null)) t.diagnostic(`${p.role} ${p.port} ready again after ${await waitReady(p.url, 30_000)} ms`);

    // The waiting calls survived the outage: allow runs one, deny refuses one, silence expires one.
    const allow = await person.client.post(`/api/approvals/${pending[0].id}/decision`, { decision: 'allow' });
    assert.equal(allow.status, 200, allow.text);
    const deny = await person.client.post(`/api/approvals/${pending[1].id}/decision`, { decision: 'deny' });
    assert.equal(deny.status, 200, deny.text);
    const [allowed, denied, expired] = await Promise.all(destructive);
    assert.equal(allowed!.kind, 'result', JSON.stringify(allowed));
    assert.equal(denied!.kind, 'tool-error', JSON.stringify(denied));
    assert.match((denied as { text: string }).text, /denied/);
    assert.equal(expired!.kind, 'tool-error', JSON.stringify(expired));
    assert.match((expired as { text: string }).text, /did not answer/);
    const deleted = hook.calls().filter((d) => d.body.tool === 'delete_note' && String(d.body.arguments.id).startsWith('pg-del-')).map((d) => d.body.arguments.id);
    assert.deepEqual([...new Set(deleted)], ['pg-del-allow'], 'only the allowed call reached the add-on');

    const noteAnswers = await Promise.all(notes);
    t.diagnostic(`in-flight answers: ${JSON.stringify(noteAnswers.map((a) => [a.kind, a.ms]))}`);
    noteAnswers.forEach((a, i) => assertClear(a, noteTexts[i]!));
    assertOneIdPerCall();

    // Exactly one decision per approval, as recorded.
    const all = await person.client.get('/api/approvals?status=all');
    const byId = new Map((all.body as any[]).map((a) => [a.id, a.status]));
    assert.deepEqual(pending.map((p) => byId.get(p.id)), ['allowed', 'denied', 'expired']);
    await assertServes('pg');
    // Nothing lost: every call that returned a result (the allowed one, the notes, the two after) is logged.
    const results = [...noteAnswers, duringDown].filter((a) => a.kind === 'result').length;
    await assertLoggedOk(since, 1 + results + 2, 'pg');
  });

  it('a worker killed mid-delivery: another worker retries under the same webhook-id and the caller gets the result', async (t) => {
    // Only one worker holds the jobs when it dies.
    const workers = procs.filter((p) => p.role === 'worker' && p.child.exitCode === null && p.child.signalCode === null);
    for (const w of workers.slice(1)) await w.kill('SIGKILL');
    const victim = workers[0]!;
    const texts = Array.from({ length: 4 }, (_, i) => `worker-${i}`);
    for (const text of texts) slow.set(text, 3_000);
    const before = hook.calls().length;
    const runs = texts.map((text, i) => call(i % 2 ? apiB : apiA, 'add_note', { text }));
    for (let i = 0; hook.calls().length - before < texts.length; i++) {
      assert.ok(i < 200, 'the worker started delivering');
      await sleep(25);
    }
    await victim.kill('SIGKILL');
    for (const text of texts) slow.set(text, 0);
    await start('worker');
    const answers = await Promise.all(runs);
    t.diagnostic(`answers: ${JSON.stringify(answers.map((a) => [a.kind, a.ms]))}`);
    answers.forEach((a, i) => assert.equal(a.kind, 'result', `${texts[i]}: ${JSON.stringify(a)}`));
    assertOneIdPerCall();
    for (const text of texts) {
      const got = hook.calls().filter((d) => d.body.arguments.text === text);
      assert.ok(got.length >= 2, `${text} was delivered again after the worker died (${got.length})`);
      const attempts = got.map((d) => d.body.call.attempt);
      assert.deepEqual(attempts, [...attempts].sort((a, b) => a - b), `${text}: attempt numbers only grow`);
      assert.ok(new Set(attempts).size === attempts.length, `${text}: no attempt number repeats (${attempts})`);
    }
  });

  it('an API process killed with approvals pending: the person still decides, and a live process runs what they allowed, once', async (t) => {
    // The contract's 30 s wait, so the calls are decided after the holder's lease (10 s) lapsed.
    const apiC = await start('api', undefined, { APPROVAL_TIMEOUT_SECONDS: '30' });
    const ids = ['api-kill-0', 'api-kill-1', 'api-kill-2'];
    const calls = ids.map((id) => call(apiC, 'delete_note', { id }));
    const pending = await waitPending(ids, calls);
    const killedAt = Date.now();
    await apiC.kill('SIGKILL');
    const answers = await Promise.all(calls);
    for (const a of answers) assert.equal(a.kind, 'network', 'the app lost its connection with the process');

    // Within the holder's lease nobody can tell it is gone: the allow is recorded, and the call is
    // taken over once the lease lapses.
    const early = await person.client.post(`/api/approvals/${pending[0].id}/decision`, { decision: 'allow' });
    assert.equal(early.status, 200, early.text);
    await sleep((LEASE_SECONDS + 1) * 1000 - (Date.now() - killedAt));
    // After it, the other two are still the person's to decide.
    const still = (await pendingApprovals()).map((a) => a.arguments?.id);
    assert.ok(ids.slice(1).every((id) => still.includes(id)), `still waiting: ${still}`);
    const late = await person.client.post(`/api/approvals/${pending[1].id}/decision`, { decision: 'allow' });
    assert.equal(late.status, 200, late.text);
    const denied = await person.client.post(`/api/approvals/${pending[2].id}/decision`, { decision: 'deny' });
    assert.equal(denied.status, 200, denied.text);

    const ran = () => hook.calls().filter((d) => ids.includes(d.body.arguments.id));
    const sentBy = Date.now() + 20_000;
    while (ran().length < 2) {
      assert.ok(Date.now() < sentBy, `the allowed calls were taken over and sent (${ran().length} of 2)`);
      await sleep(250);
    }
    t.diagnostic(`both allowed calls sent ${Date.now() - killedAt} ms after the kill`);
    await sleep(6_000); // another sweep or two: nothing more is sent
    assert.deepEqual(ran().map((d) => d.body.arguments.id).sort(), ids.slice(0, 2), 'each allowed call ran once; the denied one never');
    assertOneIdPerCall();
    await assertServes('api-kill');
  });
});
