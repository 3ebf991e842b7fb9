import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { CALLS_QUEUE, checkEvictionPolicy, type CallJob } from '@toolport/core';
import { Queue, type Job } from 'bullmq';
import { addons, addonSecrets, deliveries } from '../packages/core/src/db/schema/index';
import { PromptWorker } from '../packages/core/src/queue/bullmq';
import { newPerson } from './helpers/http';
import { freePort, REDIS_TEST_URL, startToolport, TARGET, type Toolport } from './helpers/target';
import { startReceiver, type Behaviour } from './helpers/webhook-receiver';
import { toolportEntry } from './helpers/process';

/**
 * BullMQ across processes: this process only enqueues (ROLE=api); workers are child processes
 * started with ROLE=worker from the real entry point, and one is killed mid-call.
 */
describe('dispatch through BullMQ across processes', { skip: TARGET !== 'services' && 'needs Redis (services target)' }, () => {
  let tp: Toolport;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let ownerId: string;
  let counter = 0;
  const children: ChildProcess[] = [];

  before(async () => {
    tp = await startToolport({ env: { ROLE: 'api' } });
    rx = await startReceiver();
    ownerId = (await newPerson(tp.url, 'dev')).user.id;
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await rx?.close();
    await tp?.stop();
  });

  /** Starts `ROLE=worker` in a child process; resolves once it says it started. */
  async function startWorkerProcess(): Promise<{ child: ChildProcess; port: number }> {
    const port = await freePort();
    const child = spawn(process.execPath, toolportEntry(), {
      env: { ...process.env, ...tp.backing.env, ROLE: 'worker', PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the worker did not start within 40 s')), 40_000);
      child.once('exit', (code) => reject(new Error(`the worker exited with ${code}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.includes('"toolport started"')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    return { child, port };
  }

  async function makeAddon(behaviour?: Behaviour) {
    const id = `bull-${process.pid}-${counter++}`;
    const path = `/${id}`;
    await tp.svc.db.insert(addons).values({ id, ownerId, name: id, webhookUrl: rx.addon(path, behaviour) });
    await tp.svc.db.insert(addonSecrets).values({
      id: `sec_${randomBytes(8).toString('hex')}`,
      addonId: id,
      secretEnc: tp.svc.secrets.webhookBox.seal(`whsec_${randomBytes(32).toString('base64')}`),
    });
    return { id, path };
  }

  const job = (addonId: string, over: Partial<CallJob> = {}): CallJob => ({
    callId: `call_${randomBytes(16).toString('base64url')}`,
    type: 'tool.call',
    addonId,
    tool: 'add_note',
    arguments: '{"text":"hello"}',
    subject: 'usr_pseudo',
    app: { name: 'Claude', clientId: 'cli_test' },
    deadline: Date.now() + 20_000,
    ...over,
  });

  const rowsOf = (callId: string) =>
    tp.svc.db.select().from(deliveries).where(eq(deliveries.callId, callId)).orderBy(deliveries.attempt);
  const workerOf = (row: { meta: unknown }) => (row.meta as { worker?: string } | null)?.worker;

  async function waitForRows(callId: string, n: number, timeoutMs = 20_000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const rows = await rowsOf(callId);
      if (rows.length >= n) return rows;
      if (Date.now() > until) throw new Error(`${callId}: ${rows.length} of ${n} deliveries rows`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  let expired: { job: CallJob; path: string };
  let first: { child: ChildProcess; port: number };

  it('answers "deadline" when no worker took the call in time, and a worker taking it later sends nothing', async () => {
    const a = await makeAddon();
    const j = job(a.id, { deadline: Date.now() + 800 });
    const started = Date.now();
    const pending = tp.svc.dispatcher.dispatch(j);
    await new Promise((r) => setTimeout(r, 200));
    const depth = await (tp.svc.dispatcher as unknown as { depth(): Promise<number> }).depth();
    assert.equal(depth, 1, 'the queue depth counts the waiting call');
    const outcome = await pending;
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'deadline');
    // Generous: without the deadline the caller would wait until a worker took the call, and none runs yet.
    assert.ok(Date.now() - started < 800 + 10_000, 'the caller stops waiting shortly after the deadline');
    expired = { job: j, path: a.path };

    first = await startWorkerProcess();
    const [row] = await waitForRows(j.callId, 1);
    assert.equal(row!.errorClass, 'deadline');
    assert.equal(row!.status, null);
    assert.match(row!.detail ?? '', /Not sent/);
    assert.equal(rx.at(expired.path).length, 0, 'nothing delivered after the deadline');
  });

  it('serves /healthz and /readyz (with the queue) from a worker process', async () => {
    const health = await fetch(`http://127.0.0.1:${first.port}/healthz`);
    assert.equal(health.status, 200);
    const ready = await fetch(`http://127.0.0.1:${first.port}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual((await ready.json()).checks, { database: 'ok', queue: 'ok' });
  });

  it('hands a killed worker’s call to another worker: one outcome, same webhook-id', async () => {
    const a = await makeAddon((_r, nth) => (nth === 1 ? 'hold' : { body: { text: 'second try' } }));
    // Room for a slow start of the second worker, plus the lock to expire and a stalled check.
    const j = job(a.id, { deadline: Date.now() + 40_000 });
    // Every outcome published for this call, on any process's reply channel.
    const listener = new Redis(REDIS_TEST_URL);
    const published: unknown[] = [];
    listener.on('pmessage', (_p, _c, m) => {
      const msg = JSON.parse(m);
      if (msg.callId === j.callId) published.push(msg.outcome);
    });
    await listener.psubscribe(`${tp.config.redis!.prefix}:replies:*`);
    try {
      const pending = tp.svc.dispatcher.dispatch(j);
      const [held] = await rx.waitFor(a.path, 1);
      // Killed while the add-on holds its request: the job is left active, locked by a dead worker.
      first.child.kill('SIGKILL');
      const second = await startWorkerProcess();

      const outcome = await pending;
      assert.deepEqual(outcome, { kind: 'result', content: [{ type: 'text', text: 'second try' }] });
      const got = rx.at(a.path);
      assert.equal(got.length, 2);
      assert.equal(held!.headers['webhook-id'], j.callId);
      assert.equal(got[1]!.headers['webhook-id'], j.callId);
      assert.equal(got[0]!.body.call.attempt, 1);
      assert.equal(got[1]!.body.call.attempt, 2, 'the retry continues the attempt count');
      assert.ok(got[1]!.at < j.deadline);

      await new Promise((r) => setTimeout(r, 500));
      assert.equal(published.length, 1, 'exactly one outcome published');
      const rows = await rowsOf(j.callId);
      assert.deepEqual(rows.map((r) => [r.attempt, r.status]), [[2, 200]]);
      assert.equal(workerOf(rows[0]!), `${workerOf(rows[0]!)!.split(':')[0]}:${second.child.pid}`);
    } finally {
      listener.disconnect();
    }
  });

  it('shares the load between two worker processes, answering the process that enqueued', async () => {
    await startWorkerProcess();
    const a = await makeAddon(() => ({ body: { text: 'ok' }, delayMs: 100 }));
    const jobs = Array.from({ length: 40 }, () => job(a.id));
    const outcomes = await Promise.all(
      jobs.map(async (j, i) => {
        await new Promise((r) => setTimeout(r, i * 15));
        return tp.svc.dispatcher.dispatch(j);
      }),
    );
    assert.ok(outcomes.every((o) => o.kind === 'result'));
    // Workers write their delivery rows just behind the outcome they publish.
    let rows = await tp.svc.db.select().from(deliveries).where(eq(deliveries.addonId, a.id));
    for (const until = Date.now() + 5_000; rows.length < 40 && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 50));
      rows = await tp.svc.db.select().from(deliveries).where(eq(deliveries.addonId, a.id));
    }
    assert.equal(rows.length, 40);
    const workers = new Set(rows.map(workerOf));
    assert.equal(workers.size, 2, `ran on ${[...workers].join(', ')}`);
    assert.ok(![...workers].some((w) => w?.endsWith(`:${process.pid}`)), 'no worker in the enqueuing process');
  });

  /** The call ids of each job (completed or not) that carries any of `callIds`. */
  async function jobsCarrying(callIds: string[]): Promise<string[][]> {
    const { Queue } = await import('bullmq');
    const connection = new Redis(REDIS_TEST_URL, { maxRetriesPerRequest: null });
    const queue = new Queue(CALLS_QUEUE, { connection, prefix: tp.config.redis!.prefix });
    try {
      const ours = new Set(callIds);
      const jobs = await queue.getJobs(['completed', 'active', 'wait', 'failed'], 0, 500);
      return jobs.map((q) => ((q.data.calls ?? [q.data]) as CallJob[]).map((c) => c.callId)).filter((ids) => ids.some((id) => ours.has(id)));
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }

  it('carries calls dispatched together in one job, and answers each caller its own call', async () => {
    const a = await makeAddon((r) => ({ body: { text: `for ${r.body.call.id}` } }));
    const jobs = Array.from({ length: 40 }, () => job(a.id));
    // Dispatched in one turn of the event loop, as calls woken by one Redis reply are.
    const outcomes = await Promise.all(jobs.map((j) => tp.svc.dispatcher.dispatch(j)));
    outcomes.forEach((o, i) => assert.deepEqual(o, { kind: 'result', content: [{ type: 'text', text: `for ${jobs[i]!.callId}` }] }));
    assert.equal(rx.at(a.path).length, 40, 'each call delivered once');
    const carried = await jobsCarrying(jobs.map((j) => j.callId));
    assert.deepEqual(carried.map((ids) => ids.length).sort((x, y) => y - x), [32, 8], 'two jobs: 32 calls (the most a job carries) and the other 8');
    assert.deepEqual(carried.flat().sort(), jobs.map((j) => j.callId).sort(), 'nothing else in them, nothing twice');
  });

  it('hands a killed worker’s job of several calls to another worker: an answered call is not sent again', async () => {
    const sent = new Map<string, number>();
    const a = await makeAddon((r) => {
      const id = r.body.call.id as string;
      sent.set(id, (sent.get(id) ?? 0) + 1);
      if (r.body.arguments.text === 'fast') return { body: { text: 'fast' } };
      return sent.get(id) === 1 ? 'hold' : { body: { text: 'second try' } };
    });
    const deadline = Date.now() + 40_000;
    const [fast, slow1, slow2] = [job(a.id, { deadline, arguments: '{"text":"fast"}' }), job(a.id, { deadline }), job(a.id, { deadline })];
    const pending = [fast, slow1, slow2].map((j) => tp.svc.dispatcher.dispatch(j));
    assert.deepEqual(await pending[0], { kind: 'result', content: [{ type: 'text', text: 'fast' }] });
    await rx.waitFor(a.path, 3);
    assert.deepEqual(await jobsCarrying([fast.callId]), [[fast.callId, slow1.callId, slow2.callId]], 'one job carries the three');
    const [row] = await waitForRows(fast.callId, 1);
    const running = children.find((c) => workerOf(row!)?.endsWith(`:${c.pid}`));
    assert.ok(running, 'the worker that took the job is one of ours');
    running.kill('SIGKILL');
    await startWorkerProcess();

    for (const p of pending.slice(1)) assert.deepEqual(await p, { kind: 'result', content: [{ type: 'text', text: 'second try' }] });
    assert.equal(sent.get(fast.callId), 1, 'the call answered before the worker died is not sent again');
    for (const j of [slow1, slow2]) {
      const got = rx.at(a.path).filter((r) => r.body.call.id === j.callId);
      assert.deepEqual(got.map((r) => [r.headers['webhook-id'], r.body.call.attempt]), [[j.callId, 1], [j.callId, 2]]);
    }
  });

  it('cancels one call of a shared job and lets the others finish', async () => {
    // The cancelled call's 503 comes after the abort, however slow the machine, so the abort is what
    // stops its retry; the count below is read after that answer and any retry would have come.
    const a = await makeAddon((r) => (r.body.arguments.text === 'cancel me' ? { status: 503, delayMs: 2_000 } : { body: { text: 'done' }, delayMs: 300 }));
    const controller = new AbortController();
    const jobs = [job(a.id), job(a.id, { arguments: '{"text":"cancel me"}' }), job(a.id)];
    const pending = jobs.map((j, i) => tp.svc.dispatcher.dispatch(j, i === 1 ? controller.signal : undefined));
    await rx.waitFor(a.path, 3);
    assert.deepEqual((await jobsCarrying([jobs[0]!.callId]))[0]?.length, 3, 'the three share a job');
    controller.abort();
    const outcomes = await Promise.all(pending);
    assert.equal(outcomes[1]!.kind === 'failure' && outcomes[1]!.errorClass, 'cancelled');
    for (const i of [0, 2]) assert.deepEqual(outcomes[i], { kind: 'result', content: [{ type: 'text', text: 'done' }] });
    await new Promise((r) => setTimeout(r, 3_000));
    // The cancelled call's 503 would have been retried; the cancel stopped that.
    assert.equal(rx.at(a.path).filter((r) => r.body.call.id === jobs[1]!.callId).length, 1);
  });

  it('treats a second dispatch of the same call id as the same job', async () => {
    const a = await makeAddon(() => ({ body: { text: 'once' }, delayMs: 200 }));
    const j = job(a.id);
    const [x, y] = await Promise.all([tp.svc.dispatcher.dispatch(j), tp.svc.dispatcher.dispatch(j)]);
    assert.deepEqual(x, { kind: 'result', content: [{ type: 'text', text: 'once' }] });
    assert.deepEqual(y, x);
    assert.equal(rx.at(a.path).length, 1);
  });

  it('answers a job without a reply channel (from an older API process) on the call\'s own channel, and ignores a forged one', async () => {
    const { Queue } = await import('bullmq');
    const a = await makeAddon(() => ({ body: { text: 'old style' } }));
    const connection = new Redis(REDIS_TEST_URL, { maxRetriesPerRequest: null });
    const queue = new Queue(CALLS_QUEUE, { connection, prefix: tp.config.redis!.prefix });
    const listener = new Redis(REDIS_TEST_URL);
    const heard = new Map<string, unknown[]>();
    listener.on('message', (channel, m) => heard.set(channel, [...(heard.get(channel) ?? []), JSON.parse(m)]));
    try {
      for (const replyTo of [undefined, 'replies:../../gates']) {
        const j = job(a.id);
        const channel = `${tp.config.redis!.prefix}:result:${j.callId}`;
        await listener.subscribe(channel);
        await queue.add('call', { ...j, ...(replyTo ? { replyTo } : {}) }, { jobId: j.callId });
        for (const until = Date.now() + 15_000; !heard.get(channel) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(heard.get(channel), [{ kind: 'result', content: [{ type: 'text', text: 'old style' }] }]);
      }
    } finally {
      listener.disconnect();
      await queue.close();
      connection.disconnect();
    }
  });

  it('makes one empty fetch per job on a quiet queue, while the job runs, and still runs jobs side by side', async () => {
    const prefix = `tp-prompt-${process.pid}-${counter++}`;
    const events: string[] = [];
    let running = 0;
    let most = 0;
    let emptyFetch: (() => void) | undefined;
    // The worker's own fetches, logged as they are answered.
    class Watched<T> extends PromptWorker<T> {
      protected override async moveToActive(token: string, name?: string) {
        const got = await super.moveToActive(token, name);
        events.push(got ? `fetched ${got.id}` : 'none');
        if (!got) emptyFetch?.();
        return got;
      }
    }
    const connections = [new Redis(REDIS_TEST_URL, { maxRetriesPerRequest: null }), new Redis(REDIS_TEST_URL)] as const;
    const worker = new Watched<{ ms: number }>(
      'prompt',
      async (j: Job<{ ms: number }>) => {
        events.push(`start ${j.id}`);
        most = Math.max(most, ++running);
        // A lone job also waits for the worker's empty fetch to be answered, however slow Redis is
        // today: the assertion is about how many fetches there are, not how fast they come.
        const empty = j.name === 'one' ? new Promise<void>((r) => (emptyFetch = r)) : undefined;
        await Promise.all([new Promise((r) => setTimeout(r, j.data.ms)), empty]);
        events.push(`end ${j.id}`);
        running--;
      },
      { connection: connections[0], prefix, concurrency: 4 },
    );
    const queue = new Queue('prompt', { connection: connections[1], prefix });
    try {
      await worker.waitUntilReady();
      // One job at a time, as at c=1: one empty fetch, while the job runs (BullMQ's own loop makes a
      // second one after the job ended).
      for (let i = 0; i < 5; i++) {
        const done = new Promise((r) => worker.once('completed', r));
        await queue.add('one', { ms: 50 }, { jobId: `one-${i}` });
        await done;
      }
      for (let i = 0; i < 4; i++) {
        const from = events.indexOf(`fetched one-${i}`);
        const between = events.slice(from, events.indexOf(`fetched one-${i + 1}`));
        assert.deepEqual(between, [`fetched one-${i}`, `start one-${i}`, 'none', `end one-${i}`], events.join(', '));
      }
      // A burst: every job runs, up to the concurrency at once.
      const all = new Promise<void>((resolve) => {
        let n = 0;
        worker.on('completed', () => ++n === 40 && resolve());
      });
      await queue.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'burst', data: { ms: 20 }, opts: { jobId: `burst-${i}` } })));
      await all;
      assert.equal(most, 4);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await Promise.all(connections.map((c) => c.quit()));
    }
  });

  it('checks the Redis eviction policy without complaint on noeviction', async () => {
    const redis = new Redis(REDIS_TEST_URL);
    const said: string[] = [];
    const log = { info: (m: string) => said.push(m), warn: (m: string) => said.push(`warn: ${m}`), error: (m: string) => said.push(m) };
    try {
      const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as string[];
      await checkEvictionPolicy(redis, log);
      if (policy === 'noeviction') assert.deepEqual(said, []);
      else assert.match(said[0] ?? '', /^warn: .*noeviction/);
    } finally {
      redis.disconnect();
    }
  });

  it('drops a waiting job when the caller aborts', async () => {
    const a = await makeAddon(() => ({ status: 503, delayMs: 100 }));
    const controller = new AbortController();
    const j = job(a.id);
    const pending = tp.svc.dispatcher.dispatch(j, controller.signal);
    await rx.waitFor(a.path, 1);
    controller.abort();
    const sentBefore = rx.at(a.path).length;
    const outcome = await pending;
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'cancelled');
    await new Promise((r) => setTimeout(r, 1500));
    // The cancel travels by pub/sub: one attempt may already be on its way, no further one starts.
    assert.ok(rx.at(a.path).length <= sentBefore + 1, 'the worker stopped retrying');
  });
});
