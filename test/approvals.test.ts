import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { createApprovals } from '@toolport/core';
import { approvals as approvalsTable, oauthClients, oauthGrants } from '../packages/core/src/db/schema/index';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { startToolport, TARGET, type Toolport } from './helpers/target';
import { ask, destructiveTool, openEvents, pendingFor, sleep } from './approvals-helpers';

let tp: Toolport;
before(async () => {
  tp = await startToolport();
});
after(async () => {
  await tp?.stop();
});

const approvals = () => {
  assert.ok(tp.svc.approvals, 'svc.approvals is wired');
  return tp.svc.approvals;
};
const rowOf = async (id: string) => (await tp.svc.db.select().from(approvalsTable).where(eq(approvalsTable.id, id)))[0]!;

describe('approvals: deciding', () => {
  it('records an allow from the dashboard and resumes the call with it', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    assert.match(shown.id, /^apr_/);
    assert.equal(shown.app, 'Claude');
    assert.equal(shown.addon, 'notes');
    assert.equal(shown.tool, 'delete_note');
    assert.deepEqual(shown.arguments, JSON.parse(asked.argumentsText));
    assert.equal(shown.confirm, null);
    const left = Date.parse(shown.expiresAt) - Date.now();
    assert.ok(left > 20_000 && left <= 31_000, `expires in about 30 s, not ${left} ms`);
    assert.equal((await rowOf(shown.id)).arguments, asked.argumentsText, 'the exact JSON text is stored');

    const res = await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'allowed');
    assert.equal(res.body.decidedBy, 'dashboard');
    assert.ok(res.body.decidedAt);

    const decision = await asked.decision;
    assert.deepEqual(decision, { status: 'allowed', approvalId: shown.id, decidedBy: 'dashboard', confirm: null });
    assert.equal(asked.progress[0], `Waiting for the person to approve in the Toolport dashboard or on their phone: ${tp.url}/approvals`);
    assert.deepEqual((await p.client.get('/api/approvals?status=pending')).body, []);
  });

  it('records a deny, and a second decision is 409 with the recorded one', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    const res = await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'denied');
    assert.equal((await asked.decision).status, 'denied');

    const again = await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    assert.equal(again.status, 409);
    assert.equal(again.headers.get('content-type'), 'application/problem+json');
    assert.equal(again.body.decision.status, 'denied');
    assert.equal(again.body.decision.decidedBy, 'dashboard');
    assert.equal(again.body.decision.decidedAt, res.body.decidedAt);
    assert.equal((await rowOf(shown.id)).status, 'denied', 'unchanged');
  });

  it('lets exactly one of 10 racing allow/deny decisions win; the call gets the winner', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => p.client.post(`/api/approvals/${shown.id}/decision`, { decision: i % 2 ? 'deny' : 'allow' })),
    );
    const won = replies.filter((r) => r.status === 200);
    const lost = replies.filter((r) => r.status === 409);
    assert.equal(won.length, 1, replies.map((r) => r.status).join(','));
    assert.equal(lost.length, 9);
    const winner = won[0]!.body.status;
    for (const l of lost) assert.equal(l.body.decision.status, winner);
    assert.equal((await asked.decision).status, winner);
    assert.equal((await rowOf(shown.id)).status, winner);
  });

  it('answers another person’s approval with 404 and changes nothing', async () => {
    const owner = await newPerson(tp.url);
    const intruder = await newPerson(tp.url);
    const asked = ask(approvals(), owner.user.id);
    const shown = await pendingFor(owner.client, asked.nonce);
    const res = await intruder.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    assert.equal(res.status, 404);
    assert.deepEqual((await intruder.client.get('/api/approvals?status=all')).body, []);
    assert.equal((await rowOf(shown.id)).status, 'pending');
    assert.equal((await owner.client.post('/api/approvals/apr_nope/decision', { decision: 'allow' })).status, 404);
    assert.equal((await new Client(tp.url).post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' })).status, 401);
    assert.equal((await owner.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'maybe' })).status, 422);
    assert.equal((await rowOf(shown.id)).status, 'pending');
    assert.equal((await owner.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' })).status, 200);
    assert.equal((await asked.decision).status, 'denied');
  });

  it('lists the last decided ones with status=all', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    const waiting = ask(approvals(), p.user.id);
    await pendingFor(p.client, waiting.nonce);
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    const all = (await p.client.get('/api/approvals?status=all')).body as any[];
    assert.deepEqual(all.map((a) => a.status).sort(), ['allowed', 'pending']);
    assert.equal(all.find((a) => a.status === 'allowed').id, shown.id);
    assert.equal((await p.client.get('/api/approvals?status=bogus')).status, 422);
    const ac = (await pendingFor(p.client, waiting.nonce)).id;
    await p.client.post(`/api/approvals/${ac}/decision`, { decision: 'deny' });
    await waiting.decision;
  });
});

describe('approvals: no answer, cancellation, revocation', () => {
  it('expires with no answer (no is the default), then refuses a late decision with 409 expired', async () => {
    const p = await newPerson(tp.url);
    const quick = createApprovals(tp.svc, { ttlSeconds: 1, sweepEveryMs: 0 });
    try {
      const asked = ask(quick, p.user.id);
      const shown = await pendingFor(p.client, asked.nonce);
      const started = Date.now();
      const decision = await asked.decision;
      assert.equal(decision.status, 'expired');
      assert.equal(decision.decidedBy, 'timeout');
      assert.ok(Date.now() - started < 3_000);
      const row = await rowOf(shown.id);
      assert.equal(row.status, 'expired');
      const late = await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
      assert.equal(late.status, 409);
      assert.equal(late.body.decision.status, 'expired');
    } finally {
      await quick.close();
    }
  });

  it('keeps the contract’s 30 s by default and expires on the database clock', async () => {
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    const row = await rowOf(shown.id);
    const [{ seconds }] = (await tp.svc.db
      .select({ seconds: sql<number>`extract(epoch from ${approvalsTable.expiresAt} - ${approvalsTable.createdAt})::float8` })
      .from(approvalsTable)
      .where(eq(approvalsTable.id, row.id))) as [{ seconds: number }];
    assert.ok(Math.abs(Number(seconds) - 30) < 0.5, `expires_at - created_at = ${seconds}`);
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
    await asked.decision;
  });

  it('expires a pending approval whose holder died: a late decision meets 409 expired', async () => {
    const p = await newPerson(tp.url);
    // A row left behind by a process that no longer exists, already past its expiry.
    const [row] = await tp.svc.db
      .insert(approvalsTable)
      .values({
        id: `apr_orphan${Date.now()}`,
        userId: p.user.id,
        callId: `call_orphan${Date.now()}`,
        appName: 'Claude',
        addonId: 'notes',
        toolName: 'delete_note',
        arguments: '{"id":"1"}',
        expiresAt: sql`now() - interval '1 second'`,
      })
      .returning();
    assert.deepEqual((await p.client.get('/api/approvals?status=pending')).body, [], 'an overdue one is not shown as pending');
    const res = await p.client.post(`/api/approvals/${row!.id}/decision`, { decision: 'allow' });
    assert.equal(res.status, 409);
    assert.equal(res.body.decision.status, 'expired');
    assert.equal((await rowOf(row!.id)).decidedBy, 'timeout');
  });

  it('sweeps overdue approvals in the background so the dashboard shows them decided', async () => {
    const p = await newPerson(tp.url);
    const id = `apr_swept${Date.now()}`;
    await tp.svc.db.insert(approvalsTable).values({
      id,
      userId: p.user.id,
      callId: `call_swept${Date.now()}`,
      appName: 'Claude',
      addonId: 'notes',
      toolName: 'delete_note',
      arguments: '{}',
      expiresAt: sql`now() - interval '1 second'`,
    });
    const until = Date.now() + 12_000;
    while ((await rowOf(id)).status === 'pending') {
      assert.ok(Date.now() < until, 'the sweeper never ran');
      await sleep(200);
    }
    assert.equal((await rowOf(id)).status, 'expired');
  });

  it('ends as cancelled when the app cancels, and records it', async () => {
    const p = await newPerson(tp.url);
    const ac = new AbortController();
    const asked = ask(approvals(), p.user.id, { signal: ac.signal });
    const shown = await pendingFor(p.client, asked.nonce);
    ac.abort();
    const decision = await asked.decision;
    assert.equal(decision.status, 'cancelled');
    assert.equal((await rowOf(shown.id)).status, 'cancelled');
    assert.equal((await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' })).status, 409);
  });

  it('ends as revoked when the person turns AI apps off while waiting', async () => {
    const p = await newPerson(tp.url);
    assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    assert.equal((await p.client.patch('/api/settings', { aiApps: false })).status, 200);
    const decision = await asked.decision;
    assert.equal(decision.status, 'revoked');
    assert.equal((await rowOf(shown.id)).status, 'revoked');
    const late = await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    assert.equal(late.status, 409);
    assert.equal(late.body.decision.status, 'revoked');
  });

  it('ends as revoked when the person revokes the app while it waits; another app’s call waits on', async () => {
    const p = await newPerson(tp.url);
    await p.client.patch('/api/settings', { aiApps: true });
    const grant = async () => {
      const clientId = `cli_${randomBytes(8).toString('hex')}`;
      await tp.svc.db.insert(oauthClients).values({ id: clientId, name: 'Claude', redirectUris: ['https://claude.ai/cb'], metadata: {} });
      const id = `grt_${randomBytes(8).toString('hex')}`;
      await tp.svc.db.insert(oauthGrants).values({ id, userId: p.user.id, clientId, scope: 'tools', resource: p.user.mcpUrl });
      return id;
    };
    const revokedGrant = await grant();
    const otherGrant = await grant();
    const asked = ask(approvals(), p.user.id, { grantId: revokedGrant });
    const other = ask(approvals(), p.user.id, { grantId: otherGrant });
    const shown = await pendingFor(p.client, asked.nonce);
    const otherShown = await pendingFor(p.client, other.nonce);
    assert.equal((await p.client.delete(`/api/connections/${revokedGrant}`)).status, 204);
    const decision = await asked.decision;
    assert.equal(decision.status, 'revoked');
    assert.equal(decision.decidedBy, 'revocation');
    assert.equal((await rowOf(shown.id)).status, 'revoked');
    await sleep(200);
    assert.equal((await rowOf(otherShown.id)).status, 'pending');
    await p.client.post(`/api/approvals/${otherShown.id}/decision`, { decision: 'allow' });
    assert.equal((await other.decision).status, 'allowed');
  });

  it('leaves other waiting calls alone when AI apps stay on', async () => {
    const p = await newPerson(tp.url);
    await p.client.patch('/api/settings', { aiApps: true });
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce);
    await p.client.patch('/api/settings', { aiApps: true });
    await sleep(200);
    assert.equal((await rowOf(shown.id)).status, 'pending');
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'allow' });
    assert.equal((await asked.decision).status, 'allowed');
  });
});

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
      assert.deepEqual(decision.confirm, confirm);
    } finally {
      await stream.close();
    }
  });

  it('skips the approval when the add-on answers confirm: null', async () => {
    hook.onConfirm(() => ({ confirm: null }));
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
    assert.deepEqual(await asked.decision, { status: 'skipped', confirm: null });
    assert.deepEqual((await p.client.get('/api/approvals?status=all')).body, [], 'nothing recorded, nothing to approve');
  });

  it('falls back to the plain approval (never to skipping) when the add-on fails', async () => {
    hook.onConfirm(() => ({ status: 500, body: { oops: true } }));
    const p = await newPerson(tp.url);
    const asked = ask(approvals(), p.user.id, { tool: destructiveTool({ addonId, confirm: true }) });
    const shown = await pendingFor(p.client, asked.nonce, 15_000);
    assert.equal(shown.confirm, null);
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
      const until = Date.now() + 5_000;
      for (;;) {
        const again = await openEvents(tp.url, p.client);
        if (again.res.status === 200) {
          streams.push(again);
          break;
        }
        await again.close();
        assert.ok(Date.now() < until, 'a closed stream never freed its place');
        await sleep(50);
      }
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
        assert.ok(Date.now() - started < 5_000, 'woken by the bus, not by the expiry');
        await stream.waitFor((e) => e.event === 'approval.decided' && e.data.id === shown.id);
      } finally {
        await stream.close();
      }
    } finally {
      await second.stop();
    }
  });
});
