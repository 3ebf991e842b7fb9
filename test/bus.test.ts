import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createInProcessBus, createRedisBus, type BusTransport } from '@toolport/core';
import { REDIS_TEST_URL, TARGET } from './helpers/target';

const tick = (ms = 100) => new Promise((r) => setTimeout(r, ms));

/** Collects what a handler receives. */
function inbox() {
  const got: unknown[] = [];
  return { got, handler: (m: unknown) => void got.push(m) };
}

async function exercise(a: BusTransport, b: BusTransport) {
  const x = inbox();
  const y = inbox();
  const z = inbox();
  const offX = await a.subscribe('addons', x.handler);
  await b.subscribe('addons', y.handler);
  const offZ = await b.subscribe('addons', z.handler);
  await a.publish('addons', { addonId: 'notes' });
  const sent = { addonId: 'todo', n: [1, 2] };
  await b.publish('addons', sent);
  sent.n.push(3);
  await tick();
  assert.deepEqual(x.got, [{ addonId: 'notes' }, { addonId: 'todo', n: [1, 2] }]);
  assert.deepEqual(y.got, x.got);
  assert.deepEqual(z.got, x.got);
  assert.notEqual(y.got[1], sent, 'a subscriber never shares an object with the publisher');

  await offX();
  await offZ();
  await offZ();
  await b.publish('addons', { addonId: 'third' });
  await tick();
  assert.equal(x.got.length, 2, 'an ended subscription hears nothing more');
  assert.equal(z.got.length, 2);
  assert.equal(y.got.length, 3, 'the other handler on the channel still hears');

  const other = inbox();
  await a.subscribe('result:call_1', other.handler);
  await b.publish('result:call_2', { kind: 'refusal' });
  await tick();
  assert.equal(other.got.length, 0, 'channels are separate');
}

describe(`event bus (${TARGET})`, () => {
  if (TARGET === 'embedded') {
    it('delivers in process to every handler, as copies', async () => {
      const bus = createInProcessBus();
      await exercise(bus, bus);
      await bus.close();
    });
    return;
  }

  const prefix = `tp_bus_${randomBytes(4).toString('hex')}`;
  let a: ReturnType<typeof createRedisBus>;
  let b: ReturnType<typeof createRedisBus>;
  before(() => {
    a = createRedisBus(REDIS_TEST_URL, prefix);
    b = createRedisBus(REDIS_TEST_URL, prefix);
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it('delivers across two Redis bus instances, multiplexed per channel', async () => {
    await exercise(a, b);
    await a.ping();
  });

  it('prefixes every channel, so another deployment on the same Redis hears nothing', async () => {
    const foreign = createRedisBus(REDIS_TEST_URL, `${prefix}x`);
    try {
      const heard = inbox();
      await foreign.subscribe('addons', heard.handler);
      const mine = inbox();
      await b.subscribe('addons', mine.handler);
      await a.publish('addons', { addonId: 'private' });
      await tick();
      assert.equal(heard.got.length, 0);
      assert.deepEqual(mine.got.at(-1), { addonId: 'private' });
    } finally {
      await foreign.close();
    }
  });

  it('survives a quick unsubscribe and resubscribe on one channel', async () => {
    const first = inbox();
    const off = await a.subscribe('flap', first.handler);
    const offPromise = off();
    const second = inbox();
    await a.subscribe('flap', second.handler);
    await offPromise;
    await b.publish('flap', { ok: true });
    await tick();
    assert.deepEqual(second.got, [{ ok: true }]);
    assert.equal(first.got.length, 0);
  });
});
