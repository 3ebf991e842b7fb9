import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApprovals } from '@toolport/core';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { startToolport, TARGET, type Toolport } from './helpers/target';
import { approvalsOf, ask, destructiveTool, openEvents, openEventsWhenFree, pendingFor, sleep } from './helpers/approvals';

let tp: Toolport;
before(async () => {
  tp = await startToolport();
});
after(async () => {
  await tp?.stop();
});

const approvals = () => approvalsOf(tp);


describe('approvals: the add-on’s confirm description', () => {
  let hook: Awaited<ReturnType<typeof startAddonServer>>;
  let addonId: string;
  before(async () => {
    hook = await startAddonServer();
    const dev = await newPerson(tp.url, 'dev');
    const key = await dev.client.post('/api/keys', { name: 'ci' });
    addonId = `cnf-${process.pid % 1000}-${Date.now() % 100000}`;
    const res = await new Client(tp.url, key.body.key).post('/api/addons', notesManifest(addonId, hook.url));
    assert.equal(res.status, 201, res.text);
    hook.setSecret(res.body.signingSecret);
  });
  after(async () => {
    await hook?.close();
  });

  it('shows the description live on /api/events and in the listing', async () => {
    const confirm = { message: 'Delete “Shopping”? This cannot be undone.', info: [{ name: 'Note', value: 'Shopping' }], style: 'destructive' };
    hook.onConfirm(() => ({ confirm }));
    const p = await newPerson(tp.url);
    const stream = await openEvents(tp.url, p.client);
    try {
      assert.equal(stream.res.status, 200);
      assert.match(stream.res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const asked = ask(approvals(), p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
      const live = await stream.waitFor((e) => e.event === 'approval' && e.data.arguments?.id === `note-${asked.nonce}`);
      assert.deepEqual(live.data.confirm, confirm);
      assert.equal(live.data.addon, addonId);
      assert.equal(stream.retry, 3000);
      const confirmCall = hook.received.find((d) => d.body.type === 'tool.confirm' && d.raw.includes(asked.nonce));
      assert.ok(confirmCall, 'the add-on was asked');
      assert.match(confirmCall.headers['webhook-id'] as string, /^call_.*_confirm$/);
      assert.equal(confirmCall.body.user.id, 'usr_pseudonym');

      const res = await p.client.post(`/api/approvals/${live.data.id}/decision`, { decision: 'allow' });
      assert.equal(res.status, 200);
      const decided = await stream.waitFor((e) => e.event === 'approval.decided' && e.data.id === live.data.id);
      assert.equal(decided.data.status, 'allowed');
      const decision = await asked.decision;
      assert.equal(decision.status, 'allowed');
    } finally {
      await stream.close();
    }
  });

  it('skips the approval when the add-on answers confirm: null', async () => {
    hook.onConfirm(() => ({ confirm: null }));
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
    assert.deepEqual(await asked.decision, { status: 'skipped' });
    assert.deepEqual((await p.client.get('/api/approvals?status=all')).body, [], 'nothing recorded, nothing to approve');
  });

  it('falls back to the plain approval (never to skipping) when the add-on fails', async () => {
    hook.onConfirm(() => ({ status: 500, body: { oops: true } }));
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
    const shown = await pendingFor(p.client, asked.nonce, 15_000);
    assert.equal(shown.confirm, null);
    // The card says why it has no description, and still looks destructive (#43).
    assert.equal(shown.confirmMissing, 'failed');
    assert.equal(shown.destructive, true);
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
    assert.equal((await asked.decision).status, 'denied');
  });

  it('falls back to the plain approval when the add-on is too slow to describe the call', async () => {
    hook.onConfirm(() => sleep(3_000).then(() => ({ confirm: null })));
    const quick = createApprovals(tp.svc, { confirmDeadlineMs: 500, sweepEveryMs: 0 });
    try {
      const p = await newPerson(tp.url);
      const asked = ask(quick, p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
      const shown = await pendingFor(p.client, asked.nonce);
      assert.equal(shown.confirm, null);
      assert.equal(shown.confirmMissing, 'slow');
      await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
      assert.equal((await asked.decision).status, 'allowed');
    } finally {
      await quick.close();
    }
  });
});

describe('approvals: the live feed', () => {
  it('sends the pending ones on connect, so a reconnect catches up', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    const stream = await openEvents(tp.url, p.client, { 'last-event-id': 'whatever' });
    try {
      const first = await stream.waitFor((e) => e.event === 'approval' && e.data.id === shown.id);
      assert.equal(first.id, shown.id);
    } finally {
      await stream.close();
    }
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
    await asked.decision;
  });

  it('tells a reconnecting stream (Last-Event-ID) about decisions it missed', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    await asked.decision;
    const fresh = await openEvents(tp.url, p.client);
    const back = await openEvents(tp.url, p.client, { 'last-event-id': shown.id });
    try {
      const missed = await back.waitFor((e) => e.event === 'approval.decided' && e.data.id === shown.id);
      assert.equal(missed.data.status, 'allowed');
      await sleep(100);
      assert.deepEqual(fresh.events, [], 'a first connection gets only what is pending');
    } finally {
      await fresh.close();
      await back.close();
    }
  });

  it('shows a person only their own approvals', async () => {
    const a = await newPerson(tp.url);
    const b = await newPerson(tp.url);
    const stream = await openEvents(tp.url, b.client);
    try {
      const asked = ask(approvals(), a.user.id);
      const shown = await pendingFor(a.client, asked.nonce);
      await a.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
      await asked.decision;
      await sleep(100);
      assert.deepEqual(stream.events, []);
    } finally {
      await stream.close();
    }
  });

  it('refuses a stream without a session, and limits open streams per person', async () => {
    const anon = await fetch(`${tp.url}/api/events`);
    assert.equal(anon.status, 401);
    await anon.body?.cancel();
    const p = await newPerson(tp.url);
    const streams = [];
    try {
      for (let i = 0; i < 10; i++) {
        const s = await openEvents(tp.url, p.client);
        assert.equal(s.res.status, 200);
        streams.push(s);
      }
      const over = await openEvents(tp.url, p.client);
      assert.equal(over.res.status, 429);
      assert.equal(over.res.headers.get('content-type'), 'application/problem+json');
      assert.ok(Number(over.res.headers.get('retry-after')) > 0);
      await over.close();
      // Closing one frees its place.
      await streams.pop()!.close();
      streams.push(await openEventsWhenFree(tp.url, p.client, 'a closed stream never freed its place'));
    } finally {
      for (const s of streams) await s.close();
    }
  });
});

describe('approvals across processes', { skip: TARGET !== 'services' ? 'needs a shared Postgres + Redis (services target)' : false }, () => {
  it('resumes the call held by one server when the person decides through another', async () => {
    const second = await startToolport({ backing: tp.backing, keepBacking: true });
    try {
      const p = await newPerson(tp.url);
      const onSecond = new Client(second.url);
      onSecond.cookies = p.client.cookies;
      const asked = ask(approvals(), p.user.id);
      const shown = await pendingFor(onSecond, asked.nonce);
      const stream = await openEvents(second.url, onSecond);
      try {
        const started = Date.now();
        const res = await onSecond.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
        assert.equal(res.status, 200, res.text);
        const decision = await asked.decision;
        assert.equal(decision.status, 'allowed');
        // Half the 30 s expiry: a busy machine may be slow, but not that slow.
        assert.ok(Date.now() - started < 15_000, 'woken by the bus, not by the expiry');
        await stream.waitFor((e) => e.event === 'approval.decided' && e.data.id === shown.id);
      } finally {
        await stream.close();
      }
    } finally {
      await second.stop();
    }
  });
});
