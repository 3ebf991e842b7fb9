import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADDONS_CHANNEL, createInProcessBus, type Services } from '@toolport/core';
import { BoundedMap, cacheKind, Caches } from '../packages/core/src/caches';
import { typedBus } from '../packages/core/src/events/bus';
import { ChangeFeed } from '../packages/core/src/events/changes';
import { systemClock } from '../packages/core/src/clock';

describe('the caches of one services', () => {
  it('one eviction policy: at most max entries, the oldest written out first, none older than the TTL', () => {
    let now = 0;
    const map = new BoundedMap<string, number | null>(2, 1000, () => now);
    map.set('a', 1);
    map.set('b', null);
    assert.equal(map.get('b'), null, 'a cached null is a hit');
    map.set('a', 2); // written again: now the newest
    map.set('c', 3);
    assert.equal(map.size, 2);
    assert.equal(map.has('b'), false, 'the oldest written went first');
    assert.equal(map.get('a'), 2);
    now = 999;
    assert.equal(map.get('c'), 3, 'a hit does not renew: still 1 ms to live');
    now = 1000;
    assert.equal(map.get('c'), undefined);
    assert.equal(map.has('a'), false);
    map.set('d', 4, 500);
    assert.equal(map.get('d'), 4, 'aged from when it was read');
    now = 1500;
    assert.equal(map.get('d'), undefined);
  });

  it('makes each kind once, and on close ends its subscriptions and empties its maps', async () => {
    const bus = typedBus(createInProcessBus());
    const caches = new Caches({ bus, changes: new ChangeFeed(bus), clock: systemClock } as Services);
    let made = 0;
    const heard: string[] = [];
    const kind = cacheKind('test', (_svc, scope) => {
      made++;
      const map = scope.map<string, string>(10);
      const ready = scope.subscribe(ADDONS_CHANNEL, (m) => {
        heard.push(m.addonId);
        map.delete(m.addonId);
      });
      return { map, ready };
    });
    assert.equal(caches.peek(kind), undefined, 'peek makes none');
    const cache = caches.get(kind);
    assert.equal(caches.get(kind), cache);
    assert.equal(made, 1);
    await cache.ready;
    cache.map.set('notes', 'target');
    cache.map.set('todo', 'target');
    await bus.publish(ADDONS_CHANNEL, { addonId: 'notes' });
    assert.deepEqual(heard, ['notes']);
    assert.equal(cache.map.has('notes'), false);

    await caches.close();
    assert.equal(cache.map.size, 0, 'emptied');
    await bus.publish(ADDONS_CHANNEL, { addonId: 'todo' });
    assert.deepEqual(heard, ['notes'], 'no longer following the bus');
    assert.equal(caches.peek(kind), undefined);
    await bus.close();
  });
});
