import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { ADDONS_CHANNEL, createInProcessDispatcher, type CallJob } from '@toolport/core';
import { addons, addonSecrets, deliveries } from '../packages/core/src/db/schema/index';
import { Client, newPerson } from './helpers/http';
import { Redis } from 'ioredis';
import { REDIS_TEST_URL, startToolport, TARGET, type Toolport } from './helpers/target';
import { startReceiver, type Behaviour } from './helpers/webhook-receiver';

// Not canonical JSON on purpose: spacing, `1.50` and `\u00e9` must reach the add-on untouched.
const ARGS = '{"text": "# Shopping\\nOat milk", "n": 1.50, "u": "\\u00e9"}';

let tp: Toolport;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let owner: Awaited<ReturnType<typeof newPerson>>;
let counter = 0;

before(async () => {
  tp = await startToolport();
  rx = await startReceiver();
  owner = await newPerson(tp.url, 'dev');
});
after(async () => {
  await rx?.close();
  await tp?.stop();
});

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const callId = () => `call_${randomBytes(16).toString('base64url')}`;

/** An add-on inserted straight into the database, its webhook a path of the local receiver. */
async function makeAddon(behaviour?: Behaviour, ownerId = owner.user.id) {
  const id = `disp-${process.pid}-${counter++}`;
  const path = `/${id}`;
  const secret = newSecret();
  await tp.svc.db.insert(addons).values({ id, ownerId, name: id, webhookUrl: rx.addon(path, behaviour) });
  await tp.svc.db
    .insert(addonSecrets)
    .values({ id: `sec_${randomBytes(8).toString('hex')}`, addonId: id, secretEnc: tp.svc.secrets.webhookBox.seal(secret) });
  return { id, path, secret };
}

function job(addonId: string, over: Partial<CallJob> = {}): CallJob {
  return {
    callId: callId(),
    type: 'tool.call',
    addonId,
    tool: 'add_note',
    arguments: ARGS,
    subject: 'usr_pseudonymous0000000000000',
    app: { name: 'Claude', clientId: 'cli_test' },
    deadline: Date.now() + 10_000,
    ...over,
  };
}

const rowsOf = async (id: string) => {
  // The delivery log is written behind the call: wait for this process's rows.
  await tp.svc.logs.flushed();
  return tp.svc.db.select().from(deliveries).where(eq(deliveries.callId, id)).orderBy(deliveries.attempt);
};
const verify = (secret: string, r: { raw: string; headers: Record<string, unknown> }) =>
  new Webhook(secret).verify(r.raw, r.headers as Record<string, string>);

describe(`dispatch (${TARGET})`, () => {
  it('POSTs the exact body, signed, with the call id as webhook-id, and hands back the result', async () => {
    const a = await makeAddon(() => ({ body: { json: { saved: true } } }));
    const j = job(a.id);
    const outcome = await tp.svc.dispatcher.dispatch(j);
    assert.deepEqual(outcome, {
      kind: 'result',
      content: [{ type: 'text', text: '{"saved":true}' }],
      structuredContent: { saved: true },
    });

    const [req, ...more] = rx.at(a.path);
    assert.equal(more.length, 0);
    const expected =
      `{"type":"tool.call","addon":"${a.id}","tool":"add_note","arguments":${ARGS},` +
      `"call":{"id":"${j.callId}","deadline":"${new Date(j.deadline).toISOString()}","attempt":1},` +
      `"user":{"id":"usr_pseudonymous0000000000000"},"app":{"name":"Claude","clientId":"cli_test"}}`;
    assert.equal(req!.raw, expected, 'the body, byte for byte');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.equal(req!.headers['webhook-id'], j.callId);
    assert.ok(Math.abs(Number(req!.headers['webhook-timestamp']) - Date.now() / 1000) < 10);
    assert.match(String(req!.headers['webhook-signature']), /^v1,[A-Za-z0-9+/=]+$/);
    assert.doesNotThrow(() => verify(a.secret, req!));

    const rows = await rowsOf(j.callId);
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.addonId, a.id);
    assert.equal(row.type, 'tool.call');
    assert.equal(row.attempt, 1);
    assert.equal(row.status, 200);
    assert.equal(row.subject, j.subject);
    assert.equal(row.errorClass, null);
    assert.ok(row.latencyMs >= 0);
    assert.ok(!JSON.stringify(row).includes('Oat milk'), 'no arguments in the delivery log');
    assert.ok(!JSON.stringify(row).includes(a.secret.slice(6, 20)), 'no secret in the delivery log');
  });

  it('answers a call waiting in the worker\'s own process without Redis: nothing published, nothing stored', { skip: TARGET !== 'services' && 'BullMQ only' }, async () => {
    const a = await makeAddon(() => ({ body: { text: 'here' } }));
    const prefix = tp.config.redis!.prefix;
    const listener = new Redis(REDIS_TEST_URL);
    const reader = new Redis(REDIS_TEST_URL);
    const published: string[] = [];
    listener.on('pmessage', (_p, channel) => published.push(channel));
    await listener.psubscribe(`${prefix}:replies:*`, `${prefix}:result:*`);
    try {
      const j = job(a.id);
      assert.deepEqual(await tp.svc.dispatcher.dispatch(j), { kind: 'result', content: [{ type: 'text', text: 'here' }] });
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(published, [], 'nothing published for a caller in this process');
      assert.equal(await reader.get(`${prefix}:outcome:${j.callId}`), null, 'no outcome key: nobody else waits for it');
    } finally {
      listener.disconnect();
      reader.disconnect();
    }
  });

  it('signs with every live secret during a rotation, never with an expired one', async () => {
    const a = await makeAddon();
    const next = newSecret();
    const expired = newSecret();
    const seal = (s: string) => tp.svc.secrets.webhookBox.seal(s);
    await tp.svc.db.insert(addonSecrets).values([
      { id: `sec_${randomBytes(8).toString('hex')}`, addonId: a.id, secretEnc: seal(next), expiresAt: new Date(Date.now() + 3600_000) },
      { id: `sec_${randomBytes(8).toString('hex')}`, addonId: a.id, secretEnc: seal(expired), expiresAt: new Date(Date.now() - 1000) },
    ]);
    const outcome = await tp.svc.dispatcher.dispatch(job(a.id));
    assert.equal(outcome.kind, 'result');
    const [req] = rx.at(a.path);
    assert.equal(String(req!.headers['webhook-signature']).split(' ').length, 2);
    assert.doesNotThrow(() => verify(a.secret, req!));
    assert.doesNotThrow(() => verify(next, req!));
    assert.throws(() => verify(expired, req!));
  });

  it('retries a 500 with the same webhook-id and a fresh signature, and logs both attempts', async () => {
    // The first answer takes over a second, so the retry's timestamp differs too.
    const a = await makeAddon((_r, nth) => (nth === 1 ? { status: 500, body: { oops: 1 }, delayMs: 1100 } : { body: { text: 'done' } }));
    const j = job(a.id);
    const outcome = await tp.svc.dispatcher.dispatch(j);
    assert.deepEqual(outcome, { kind: 'result', content: [{ type: 'text', text: 'done' }] });
    const [first, second, ...more] = rx.at(a.path);
    assert.equal(more.length, 0);
    assert.equal(first!.headers['webhook-id'], j.callId);
    assert.equal(second!.headers['webhook-id'], j.callId);
    assert.notEqual(first!.headers['webhook-signature'], second!.headers['webhook-signature']);
    assert.notEqual(first!.headers['webhook-timestamp'], second!.headers['webhook-timestamp']);
    assert.equal(first!.body.call.attempt, 1);
    assert.equal(second!.body.call.attempt, 2);
    assert.doesNotThrow(() => verify(a.secret, first!));
    assert.doesNotThrow(() => verify(a.secret, second!));

    const rows = await rowsOf(j.callId);
    assert.deepEqual(
      rows.map((r) => [r.attempt, r.status, r.errorClass]),
      [
        [1, 500, 'http_status'],
        [2, 200, null],
      ],
    );
  });

  it('follows a changed webhook URL once the change is announced on the bus', async () => {
    const a = await makeAddon();
    assert.equal((await tp.svc.dispatcher.dispatch(job(a.id))).kind, 'result');
    const moved = rx.addon(`${a.path}-moved`, () => ({ body: { text: 'moved' } }));
    await tp.svc.db.update(addons).set({ webhookUrl: moved }).where(eq(addons.id, a.id));
    await tp.svc.bus.publish(ADDONS_CHANNEL, { addonId: a.id });
    await new Promise((r) => setTimeout(r, 100));
    const outcome = await tp.svc.dispatcher.dispatch(job(a.id));
    assert.deepEqual(outcome, { kind: 'result', content: [{ type: 'text', text: 'moved' }] });
    assert.equal(rx.at(a.path).length, 1);
    assert.equal(rx.at(`${a.path}-moved`).length, 1);
  });

  it('does not retry a 4xx, and tells the app a safe sentence only', async () => {
    const a = await makeAddon(() => ({ status: 422, body: { internal: 'stack trace at line 3' } }));
    const j = job(a.id);
    const outcome = await tp.svc.dispatcher.dispatch(j);
    assert.equal(outcome.kind, 'failure');
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'http_status');
    assert.ok(!JSON.stringify(outcome).includes('stack trace'), 'details stay in the delivery log');
    assert.equal(rx.at(a.path).length, 1);
    const rows = await rowsOf(j.callId);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.status, 422);
    assert.match(rows[0]!.detail ?? '', /stack trace/);
    const metrics = await tp.svc.metrics.render();
    assert.match(metrics, new RegExp(`toolport_webhook_failures_total\\{addon="${a.id}",error_class="http_status"\\} 1`));
  });

  it('says whether a failed call may have reached the add-on: never "not sent" once it may have (#43)', async () => {
    // Nothing listens on port 9: every attempt is refused before a byte is sent.
    const refused = await makeAddon();
    await tp.svc.db.update(addons).set({ webhookUrl: 'http://127.0.0.1:9/hook' }).where(eq(addons.id, refused.id));
    const notSent = await tp.svc.dispatcher.dispatch(job(refused.id));
    assert.deepEqual(notSent.kind === 'failure' && [notSent.errorClass, notSent.sent], ['connect', false]);
    // The add-on read the request, then its connection dropped: it may have acted on it.
    const crashed = await makeAddon(() => 'reset');
    const reset = await tp.svc.dispatcher.dispatch(job(crashed.id));
    assert.deepEqual(reset.kind === 'failure' && [reset.errorClass, reset.sent], ['connect', true]);
    assert.ok(rx.at(crashed.path).length >= 1);
    const failing = await makeAddon(() => ({ status: 500, body: {} }));
    const answered = await tp.svc.dispatcher.dispatch(job(failing.id));
    assert.deepEqual(answered.kind === 'failure' && [answered.errorClass, answered.sent], ['http_status', true]);
  });

  it('disables the webhook on 410 Gone, says so in the log, and sends nothing more', async () => {
    const a = await makeAddon(() => ({ status: 410, body: {} }));
    const j = job(a.id);
    const outcome = await tp.svc.dispatcher.dispatch(j);
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'gone');
    const [addon] = await tp.svc.db.select().from(addons).where(eq(addons.id, a.id));
    assert.ok(addon!.webhookDisabledAt instanceof Date);
    const [row] = await rowsOf(j.callId);
    assert.equal(row!.status, 410);
    assert.match(row!.detail ?? '', /disabled/);

    const again = job(a.id);
    const second = await tp.svc.dispatcher.dispatch(again);
    assert.equal(second.kind === 'failure' && second.errorClass, 'gone');
    assert.equal(rx.at(a.path).length, 1, 'a disabled webhook is not called');
    const [refused] = await rowsOf(again.callId);
    assert.equal(refused!.status, null);
    assert.match(refused!.detail ?? '', /disabled/);
  });

  it('answers a slow add-on with a timeout within the deadline', async () => {
    const a = await makeAddon(() => 'hold');
    const started = Date.now();
    const j = job(a.id, { deadline: started + 1500 });
    const outcome = await tp.svc.dispatcher.dispatch(j);
    const took = Date.now() - started;
    assert.equal(outcome.kind, 'failure');
    assert.ok(outcome.kind === 'failure' && ['timeout', 'deadline'].includes(outcome.errorClass), JSON.stringify(outcome));
    // Slack for a loaded machine; without the per-attempt deadline this would take the whole hold.
    assert.ok(took < 1500 + 10_000, `answered after ${took} ms`);
    assert.ok(rx.at(a.path).every((r) => r.at < j.deadline));
  });

  it('never delivers after the deadline', async () => {
    const a = await makeAddon(() => ({ status: 503, delayMs: 50 }));
    const late = job(a.id, { deadline: Date.now() - 1 });
    const outcome = await tp.svc.dispatcher.dispatch(late);
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'deadline');
    assert.equal(rx.at(a.path).length, 0);

    // Retrying a failing add-on stops at the deadline, not after it.
    const j = job(a.id, { deadline: Date.now() + 1200 });
    const retried = await tp.svc.dispatcher.dispatch(j);
    assert.equal(retried.kind, 'failure');
    await new Promise((r) => setTimeout(r, 600));
    const got = rx.at(a.path);
    assert.ok(got.length >= 2, `retried ${got.length} times`);
    assert.ok(got.every((r) => r.at < j.deadline), 'every attempt arrived before the deadline');
  });

  it('stops retrying when the caller aborts', async () => {
    const a = await makeAddon(() => ({ status: 503, delayMs: 100 }));
    const controller = new AbortController();
    const j = job(a.id, { deadline: Date.now() + 20_000 });
    const pending = tp.svc.dispatcher.dispatch(j, controller.signal);
    await rx.waitFor(a.path, 1);
    controller.abort();
    const sentBefore = rx.at(a.path).length;
    const abortedAt = Date.now();
    const outcome = await pending;
    // Generous: without the abort it would retry until the 20 s deadline.
    assert.ok(Date.now() - abortedAt < 10_000, 'the caller hears at once');
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'cancelled');
    await new Promise((r) => setTimeout(r, 1500));
    // One request may already have been on its way when the abort came; no new one starts.
    assert.ok(rx.at(a.path).length <= sentBefore + 1, 'nothing sent after the abort');
  });

  it('hangs up on an add-on still answering when the caller aborts, and logs the attempt as cancelled', async () => {
    const a = await makeAddon(() => 'hold');
    const controller = new AbortController();
    const j = job(a.id, { deadline: Date.now() + 20_000 });
    const pending = tp.svc.dispatcher.dispatch(j, controller.signal);
    const [held] = await rx.waitFor(a.path, 1);
    const abortedAt = Date.now();
    controller.abort();
    const outcome = await pending;
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'cancelled');
    // The add-on's connection is closed at once, not when the 20 s deadline ends the attempt.
    const until = Date.now() + 15_000;
    while (!held!.closedAt && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.ok(held!.closedAt && held!.closedAt - abortedAt < 10_000, `Toolport hung up after ${held!.closedAt ? held!.closedAt - abortedAt : 'never'} ms`);
    let rows = await rowsOf(j.callId);
    for (let i = 0; i < 100 && !rows.length; i++) rows = await new Promise((r) => setTimeout(r, 50)).then(() => rowsOf(j.callId));
    assert.equal(rows.length, 1, 'one attempt, not retried');
    assert.equal(rows[0]!.errorClass, 'cancelled');
    assert.match(rows[0]!.detail ?? '', /cancelled/);
  });

  it('never sends a call that was aborted before it started', async () => {
    const a = await makeAddon();
    const controller = new AbortController();
    controller.abort();
    const outcome = await tp.svc.dispatcher.dispatch(job(a.id), controller.signal);
    assert.equal(outcome.kind === 'failure' && outcome.errorClass, 'cancelled');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(rx.at(a.path).length, 0);
  });

  it('runs at most `concurrency` calls at once in process', async () => {
    let inFlight = 0;
    let peak = 0;
    const a = await makeAddon(() => {
      peak = Math.max(peak, ++inFlight);
      setTimeout(() => inFlight--, 200);
      return { body: { text: 'ok' }, delayMs: 200 };
    });
    const dispatcher = createInProcessDispatcher(tp.svc, { concurrency: 2 });
    try {
      const outcomes = await Promise.all(Array.from({ length: 6 }, () => dispatcher.dispatch(job(a.id))));
      assert.ok(outcomes.every((o) => o.kind === 'result'));
      assert.equal(rx.at(a.path).length, 6);
      assert.ok(peak <= 2, `peak ${peak}`);
    } finally {
      await dispatcher.close();
    }
  });

  describe('GET /api/addons/:id/deliveries', () => {
    it('lists the owner’s deliveries newest first, a page at a time', async () => {
      const a = await makeAddon();
      const base = Date.now() - 60_000;
      await tp.svc.db.insert(deliveries).values(
        Array.from({ length: 55 }, (_, i) => ({
          id: `dlv_${String(i).padStart(3, '0')}`,
          addonId: a.id,
          callId: `call_${i}`,
          type: 'tool.call',
          attempt: 1,
          subject: 'usr_pseudo',
          status: 200,
          latencyMs: i,
          createdAt: new Date(base + Math.floor(i / 2) * 1000),
        })),
      );
      const first = await owner.client.get(`/api/addons/${a.id}/deliveries`);
      assert.equal(first.status, 200);
      assert.equal(first.body.deliveries.length, 50);
      assert.deepEqual(Object.keys(first.body.deliveries[0]).sort(), [
        'attempt', 'callId', 'createdAt', 'detail', 'errorClass', 'id', 'latencyMs', 'outcome', 'status', 'subject', 'tool', 'toolTitle', 'type',
      ]);
      assert.equal(first.body.deliveries[0].id, 'dlv_054');
      assert.ok(first.body.nextCursor);
      const second = await owner.client.get(`/api/addons/${a.id}/deliveries?cursor=${first.body.nextCursor}`);
      assert.equal(second.status, 200);
      assert.equal(second.body.nextCursor, null);
      const ids = [...first.body.deliveries, ...second.body.deliveries].map((d: any) => d.id);
      assert.deepEqual(ids, Array.from({ length: 55 }, (_, i) => `dlv_${String(54 - i).padStart(3, '0')}`));

      const bad = await owner.client.get(`/api/addons/${a.id}/deliveries?cursor=nonsense`);
      assert.equal(bad.status, 422);
    });

    it('shows a dispatched call in the log', async () => {
      const a = await makeAddon(() => ({ status: 500 }));
      const j = job(a.id, { deadline: Date.now() + 600 });
      await tp.svc.dispatcher.dispatch(j);
      const res = await owner.client.get(`/api/addons/${a.id}/deliveries`);
      assert.equal(res.status, 200);
      const mine = res.body.deliveries.filter((d: any) => d.callId === j.callId && d.status === 500);
      assert.ok(mine.length >= 1);
      assert.equal(mine[0].errorClass, 'http_status');
      assert.equal(mine[0].subject, j.subject);
    });

    // Without credentials or with bad ones: test/security-auth.test.ts, for every route.
    it('answers 404 for another person’s add-on and for one that does not exist', async () => {
      const a = await makeAddon();
      const other = await newPerson(tp.url, 'other');
      const res = await other.client.get(`/api/addons/${a.id}/deliveries`);
      assert.equal(res.status, 404);
      assert.equal((await owner.client.get('/api/addons/no-such-addon/deliveries')).status, 404);
    });

    it('accepts a developer API key', async () => {
      const a = await makeAddon();
      const key = await owner.client.post('/api/keys', { name: 'cli' });
      assert.equal(key.status, 201);
      const res = await new Client(tp.url, key.body.key).get(`/api/addons/${a.id}/deliveries`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { deliveries: [], nextCursor: null });
    });
  });
});
