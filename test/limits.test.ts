import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { startToolport, TARGET, type Toolport } from './helpers/target';

let a: Toolport;
let b: Toolport | undefined;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  a = await startToolport({
    env: { LIMIT_CALLS_PER_PERSON: '4', LIMIT_ADDON_CONCURRENCY: '1', LIMIT_PENDING_APPROVALS: '1' },
    keepBacking: true,
  });
  // On Postgres + Redis a second API process shares the database, the queue and the counters.
  if (TARGET === 'services') {
    b = await startToolport({
      backing: a.backing,
      keepBacking: true,
      env: { PUBLIC_URL: a.url, LIMIT_CALLS_PER_PERSON: '4', LIMIT_ADDON_CONCURRENCY: '1', LIMIT_PENDING_APPROVALS: '1' },
    });
  }
  hook = await startAddonServer({
    add_note: async (body) => {
      if (body.arguments.text === 'slow') await sleep(800);
      return { text: 'ok' };
    },
    search_notes: () => ({ text: 'none' }),
  });
  hook.onConfirm(() => ({ confirm: { message: 'Delete it?' } }));
});
after(async () => {
  await hook?.close();
  await b?.stop();
  await a?.stop();
  await a?.backing.drop();
});

async function setup(tools: Record<string, boolean>) {
  const person = await personWithNotes(a.url, hook, tools, 'lim');
  const id = person.addonId;
  const provider = new TestOAuthProvider('Limited');
  await connectApp(person.user.mcpUrl, person.client, { provider });
  const path = new URL(person.user.mcpUrl).pathname;
  let rpc = 0;
  const call = (base: string, name: string, args: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${provider.saved!.access_token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: `${id}__${name}`, arguments: args } }),
    }).then(async (r) => {
      assert.equal(r.status, 200);
      return (await r.json()).result as { isError?: boolean; content: Array<{ text: string }> };
    });
  return { person, id, call };
}

describe('limits', () => {
  it('caps tool calls per person per minute, across API processes, with a sentence saying when to retry', async () => {
    const { call } = await setup({ search_notes: true });
    const bases = [a.url, b?.url ?? a.url];
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await call(bases[i % 2]!, 'search_notes', {}));
    assert.deepEqual(results.map((r) => r.isError ?? false), [false, false, false, false, true, true]);
    assert.match(results[4]!.content[0]!.text, /Too many tool calls for this person: at most 4 a minute\. Try again in \d+ seconds\./);
  });

  it('caps calls in flight to one add-on', async () => {
    const { call } = await setup({ add_note: true });
    const [slow, quick] = await Promise.all([call(a.url, 'add_note', { text: 'slow' }), sleep(200).then(() => call(b?.url ?? a.url, 'add_note', { text: 'quick' }))]);
    assert.equal(slow.isError, undefined);
    assert.equal(quick.isError, true);
    assert.match(quick.content[0]!.text, /busy/);
    assert.equal((await call(a.url, 'add_note', { text: 'after' })).isError, undefined, 'the slot is released');
  });

  it('caps approvals waiting for one person', async () => {
    const { person, call } = await setup({ delete_note: true });
    const first = call(a.url, 'delete_note', { id: 'n1' });
    for (let i = 0; i < 100 && !(await person.client.get('/api/approvals?status=pending')).body.length; i++) await sleep(50);
    const second = await call(b?.url ?? a.url, 'delete_note', { id: 'n2' });
    assert.equal(second.isError, true);
    assert.match(second.content[0]!.text, /already waiting/);
    const pending = (await person.client.get('/api/approvals?status=pending')).body;
    assert.equal(pending.length, 1);
    await person.client.post(`/api/approvals/${pending[0].id}/decision`, { decision: 'deny' });
    assert.equal((await first).isError, true);

    // The decision gives the place back at once (not when its lease would expire): the next call waits.
    const third = call(b?.url ?? a.url, 'delete_note', { id: 'n3' });
    let waiting: Array<{ id: string }> = [];
    for (let i = 0; i < 100 && !waiting.length; i++) {
      waiting = (await person.client.get('/api/approvals?status=pending')).body;
      if (!waiting.length) await sleep(50);
    }
    assert.equal(waiting.length, 1, 'the third call waits for the person instead of being refused');
    await person.client.post(`/api/approvals/${waiting[0]!.id}/decision`, { decision: 'deny' });
    assert.match((await third).content[0]!.text, /denied/);
  });
});

describe('settings for limits', () => {
  it('reports a bad limit setting at start with the others', async () => {
    const { parseConfig } = await import('@toolport/core');
    assert.throws(() => parseConfig({ LIMIT_CALLS_PER_PERSON: '0', PORT: 'x' }), (err: any) => err.problems.length === 2);
  });
});

describe('leases (open event streams)', () => {
  it('holds at most max leases, frees a released one, and lets one that is not renewed expire (a crashed holder)', async () => {
    const { createLimiter } = await import('../packages/core/src/limits');
    const limiter = createLimiter(a.config);
    const key = `lease-test-${process.pid}-${Date.now()}`;
    try {
      // Times with margins a busy machine keeps: renewed halfway through its 3 s, read 0.3 s past
      // them (1.2 s before the renewed end), read again 0.3 s past that end.
      const first = await limiter.lease(key, 2, 3_000);
      const second = await limiter.lease(key, 2, 60_000);
      assert.ok(first && second);
      assert.equal(await limiter.lease(key, 2, 60_000), undefined, 'both places are held');
      await second.release();
      const third = await limiter.lease(key, 2, 60_000);
      assert.ok(third, 'a released place is free again');
      assert.equal(await limiter.lease(key, 2, 60_000), undefined);
      // Renewed, the short lease outlives its first ttl.
      await sleep(1_500);
      await first.renew();
      await sleep(1_800);
      assert.equal(await limiter.lease(key, 2, 60_000), undefined, 'a renewed lease still holds its place');
      // Not renewed (its process is gone): the place frees itself.
      await sleep(1_500);
      const fourth = await limiter.lease(key, 2, 60_000);
      assert.ok(fourth, 'an expired lease gave its place back');
      await third.release();
      await fourth.release();
    } finally {
      await limiter.close();
    }
  });
});

describe('a line (exclusive tools): one first at a time, in order of joining', () => {
  it('keeps a long holder first when a waiter with a shorter hold joins and leaves, lets a silent waiter drop out, and refuses past max', async () => {
    const { createLimiter } = await import('../packages/core/src/limits');
    const limiter = createLimiter(a.config);
    const key = `line-test-${process.pid}-${Date.now()}`;
    const step = (id: string, waitMs: number, holdMs: number) => limiter.line(key, id, { waitMs, holdMs, max: 4 });
    try {
      assert.equal(await step('holder', 60_000, 60_000), 'first');
      // A waiter whose own call is short joins and leaves: the holder's line must outlive it.
      assert.equal(await step('short', 100, 100), 'waiting');
      await limiter.leaveLine(key, 'short');
      await sleep(300);
      assert.equal(await step('next', 5_000, 5_000), 'waiting', 'the holder is still first');
      // A waiter that stops asking drops out once its wait lapses; the one behind it moves up.
      assert.equal(await step('silent', 150, 5_000), 'waiting');
      assert.equal(await step('behind', 5_000, 5_000), 'waiting');
      assert.equal(await step('fifth', 5_000, 5_000), 'full', 'at most 4 in line');
      await sleep(300);
      await limiter.leaveLine(key, 'holder');
      assert.equal(await step('next', 5_000, 5_000), 'first');
      assert.equal(await step('behind', 5_000, 5_000), 'waiting', 'the silent waiter is gone, the order kept');
      await limiter.leaveLine(key, 'next');
      assert.equal(await step('behind', 5_000, 5_000), 'first');
    } finally {
      await limiter.leaveLine(key, 'behind');
      await limiter.close();
    }
  });
});

describe('rate and slot in one step (a call straight to its add-on)', () => {
  it('counts the windows, takes the slot only when no window is over, and says when the slot is busy', async () => {
    const { createLimiter } = await import('../packages/core/src/limits');
    const limiter = createLimiter(a.config);
    const key = `hit-acquire-${process.pid}-${Date.now()}`;
    const windows = [
      { key: `${key}:wide`, limit: 10, windowMs: 60_000 },
      { key: `${key}:narrow`, limit: 2, windowMs: 60_000 },
    ];
    const slot = { key: `${key}:slot`, max: 1, ttlMs: 60_000 };
    try {
      const first = await limiter.hitAndAcquire(windows, slot);
      assert.equal(first.over, -1);
      assert.ok(first.release, 'the slot is taken');
      const busy = await limiter.hitAndAcquire(windows, slot);
      assert.deepEqual([busy.over, busy.release], [-1, undefined], 'counted, but the only slot is held');
      const over = await limiter.hitAndAcquire(windows, slot);
      assert.equal(over.over, 1, 'the second window is over');
      assert.ok(over.retryAfterMs > 0 && over.retryAfterMs <= 60_000);
      assert.equal(over.release, undefined);
      await first.release!();
      // The refused calls took no slot: the one slot is free again.
      const again = await limiter.acquire(slot.key, slot.max, slot.ttlMs);
      assert.ok(again);
      await again();
    } finally {
      await limiter.close();
    }
  });
});
