import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallCancel, createInProcessBus, createLogger, type Services } from '@toolport/core';
import { InFlight } from '../apps/api/src/routes/mcp/cancellation';
import { typedBus } from '../packages/core/src/events/bus';

describe('CallCancel: the light cancel signal of a call in flight', () => {
  it('calls each listener once, in order, with an abort event, and keeps the reason', () => {
    const cancel = new CallCancel();
    const heard: string[] = [];
    const first = (e: Event) => heard.push(`first ${e.type}`);
    cancel.addEventListener('abort', first);
    cancel.addEventListener('abort', first); // as an EventTarget: the same listener once
    cancel.addEventListener('abort', { handleEvent: (e) => heard.push(`object ${e.type}`) });
    assert.equal(cancel.aborted, false);
    const reason = new Error('cancelled by the app');
    cancel.abort(reason);
    cancel.abort(new Error('again'));
    assert.deepEqual(heard, ['first abort', 'object abort']);
    assert.equal(cancel.aborted, true);
    assert.equal(cancel.reason, reason);
  });

  it('a removed listener is not called; one added after the abort is not called either', () => {
    const cancel = new CallCancel();
    let calls = 0;
    const listener = () => calls++;
    cancel.addEventListener('abort', listener);
    cancel.removeEventListener('abort', listener);
    cancel.abort();
    cancel.addEventListener('abort', listener);
    assert.equal(calls, 0);
    assert.equal((cancel.reason as DOMException).name, 'AbortError');
  });

  it('follows an AbortSignal, aborted now or later', () => {
    const now = new CallCancel();
    now.follow(AbortSignal.abort('gone'));
    assert.equal(now.aborted, true);
    assert.equal(now.reason, 'gone');

    const later = new CallCancel();
    const ctl = new AbortController();
    later.follow(ctl.signal);
    assert.equal(later.aborted, false);
    ctl.abort('hung up');
    assert.equal(later.aborted, true);
    assert.equal(later.reason, 'hung up');
  });

  it('follows another CallCancel until told to stop', () => {
    const call = new CallCancel();
    const asking = new CallCancel();
    const unfollow = asking.follow(call);
    unfollow();
    call.abort('cancelled by the app');
    assert.equal(asking.aborted, false, 'no longer following');

    const call2 = new CallCancel();
    const asking2 = new CallCancel();
    asking2.follow(call2);
    call2.abort('cancelled by the app');
    assert.equal(asking2.reason, 'cancelled by the app');
  });

  it('a throwing listener does not stop the others, and is reported, not swallowed', async () => {
    const cancel = new CallCancel();
    let second = false;
    cancel.addEventListener('abort', () => {
      throw new Error('listener bug');
    });
    cancel.addEventListener('abort', () => (second = true));
    // The test runner fails a test on any uncaught exception: it is put aside while this one is expected.
    const runner = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    try {
      const reported = new Promise<Error>((resolve) => process.once('uncaughtException', resolve));
      cancel.abort();
      assert.equal(second, true);
      assert.equal((await reported).message, 'listener bug');
    } finally {
      for (const listener of runner) process.on('uncaughtException', listener);
    }
  });
});

describe('InFlight: an app\'s cancellation reaches the process holding its call', () => {
  it('ends the call held here at once and one held by another process through the bus; the same request id of another grant goes on', async () => {
    const bus = typedBus(createInProcessBus());
    const svc = { bus, log: createLogger({}, true) } as unknown as Services;
    // Two API processes on one bus: the app's notifications/cancelled reaches either.
    const here = new InFlight(svc);
    const there = new InFlight(svc);
    here.listen();
    there.listen();
    const heldHere = here.add(here.key('grt_a', 7));
    const heldThere = there.add(there.key('grt_a', 'x'));
    const otherGrant = there.add(there.key('grt_b', 7));
    const sameNumberAsText = there.add(there.key('grt_a', '7'));

    here.cancel('grt_a', 7);
    assert.equal(heldHere.aborted, true, 'this process first, before the bus');
    assert.equal((heldHere.reason as Error).message, 'cancelled by the app');
    here.cancel('grt_a', 'x');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(heldThere.aborted, true, 'the other process heard it');
    assert.equal(otherGrant.aborted, false, "another grant's request 7 is another call");
    assert.equal(sameNumberAsText.aborted, false, 'the request id 7 is not the request id "7"');

    // A finished call is out of the registry: a late cancellation reaches nothing.
    const done = there.add(there.key('grt_a', 8));
    there.done(there.key('grt_a', 8), done);
    here.cancel('grt_a', 8);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(done.aborted, false);
    await bus.close();
  });
});
