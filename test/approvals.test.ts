import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq, sql, type SQL } from 'drizzle-orm';
import { createApprovals } from '@toolport/core';
import { approvals as approvalsTable, oauthClients, oauthGrants } from '../packages/core/src/db/schema/index';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';
import { approvalsOf, ask, pendingFor, sleep } from './helpers/approvals';
import { claimDecided, orphansDecided } from '../packages/core/src/approvals/records';

let tp: Toolport;
before(async () => {
  tp = await startToolport();
});
after(async () => {
  await tp?.stop();
});

const approvals = () => approvalsOf(tp);
/** Rows of a raw query: PGlite answers `{ rows }`, postgres.js an array. */
const rowsOf = <T>(result: unknown): T[] => ((result as { rows?: T[] }).rows ?? [...(result as T[])]);
/** An approval row written straight to the database, as one left behind by another process. */
async function leftBehind(userId: string, label: string, values: { expiresAt?: SQL; holderId?: string; takeover?: boolean }) {
  const [row] = await tp.svc.db
    .insert(approvalsTable)
    .values({
      id: `apr_${label}${Date.now()}`,
      userId,
      callId: `call_${label}${Date.now()}`,
      appName: 'Claude',
      addonId: 'notes',
      toolName: 'delete_note',
      arguments: '{"id":"1"}',
      expiresAt: sql`now() + interval '30 seconds'`,
      ...values,
    })
    .returning();
  return row!;
}
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
    assert.deepEqual(decision, { status: 'allowed', approvalId: shown.id, decidedBy: 'dashboard', decidedAt: new Date(res.body.decidedAt) });
    assert.equal(
      asked.progress[0],
      `Waiting for the person to approve in the Toolport dashboard or on their phone: ${tp.url}/approvals/${shown.id}. No answer within 30 seconds is no; the call is answered within 55 seconds in all.`,
    );
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

  it('repeats its progress while it waits; a call without a progress token expires on time all the same', async () => {
    const p = await newPerson(tp.url);
    // One timer serves both: with a progress token it wakes for each message, without one only at
    // the deadline (no wake every 5 s for a message nobody asked for).
    const quick = createApprovals(tp.svc, { ttlSeconds: 2, progressEveryMs: 200, sweepEveryMs: 0 });
    try {
      const started = Date.now();
      const heard = ask(quick, p.user.id);
      const silent = ask(quick, p.user.id, { progress: false });
      const [withProgress, without] = await Promise.all([heard.decision, silent.decision]);
      const took = Date.now() - started;
      assert.deepEqual([withProgress.status, without.status], ['expired', 'expired']);
      assert.ok(took >= 1_500 && took < 4_000, `both expired after about 2 s, not ${took} ms`);
      // At 0 ms, then every 200 ms until about 2 s.
      assert.ok(heard.progress.length >= 6 && heard.progress.length <= 12, `progress every 200 ms: ${heard.progress.length}`);
      assert.ok(heard.progress.every((m) => m === heard.progress[0]));
      assert.equal(silent.progress.length, 0);
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
    const row = await leftBehind(p.user.id, 'orphan', { expiresAt: sql`now() - interval '1 second'` });
    assert.deepEqual((await p.client.get('/api/approvals?status=pending')).body, [], 'an overdue one is not shown as pending');
    const res = await p.client.post(`/api/approvals/${row.id}/decision`, { decision: 'allow' });
    assert.equal(res.status, 409);
    assert.equal(res.body.decision.status, 'expired');
    assert.equal((await rowOf(row.id)).decidedBy, 'timeout');
  });

  it('renews one lease row for all the calls a process holds, never the approvals themselves', async () => {
    const p = await newPerson(tp.url);
    const asked = [ask(approvals(), p.user.id), ask(approvals(), p.user.id), ask(approvals(), p.user.id)];
    const shown = await Promise.all(asked.map((a) => pendingFor(p.client, a.nonce)));
    const ids = shown.map((s) => s.id);
    // xmin changes whenever Postgres rewrites a row.
    const versions = async () =>
      rowsOf<{ id: string; xmin: string; holder: string | null }>(
        await tp.svc.db.execute(sql`select id, xmin::text as xmin, holder_id as holder from approvals where id in (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) order by id`),
      );
    const before = await versions();
    const holders = new Set(before.map((r) => r.holder));
    assert.equal(holders.size, 1, 'the three calls name one holder, this process');
    const holder = [...holders][0]!;
    assert.match(holder, /^hld_/);
    const leaseOf = async () =>
      rowsOf<{ xmin: string; live: boolean }>(await tp.svc.db.execute(sql`select xmin::text as xmin, held_until > now() as live from approval_holders where id = ${holder}`))[0]!;
    const lease = await leaseOf();
    assert.equal(lease.live, true);
    await sleep(3_600); // one renewal (every 3 s)
    assert.notEqual((await leaseOf()).xmin, lease.xmin, 'the lease row was renewed');
    assert.deepEqual(await versions(), before, 'the waiting approvals were not rewritten');
    for (const s of shown) await p.client.post(`/api/approvals/${s.id}/decision`, { decision: 'deny' });
    await Promise.all(asked.map((a) => a.decision));
  });

  it('keeps the waiting approvals of a holder whose lease lapsed (its process died) for the person; a live process finishes the decided call', async () => {
    const p = await newPerson(tp.url);
    const holder = `hld_gone${Date.now()}`;
    await tp.svc.db.execute(sql`insert into approval_holders (id, held_until) values (${holder}, now() - interval '1 second')`);
    // An app whose grant is gone by the time it is finished: the call is answered as revoked, never sent.
    const { id } = await leftBehind(p.user.id, 'held', { holderId: holder, takeover: true });
    const pending = (await p.client.get('/api/approvals?status=pending')).body as Array<{ id: string }>;
    assert.deepEqual(pending.map((a) => a.id), [id], 'still shown as waiting: the person can decide it');
    const res = await p.client.post(`/api/approvals/${id}/decision`, { decision: 'allow' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'allowed');
    // This process's sweep (every 5 s) takes it over and keeps its answer for the app's retry.
    const until = Date.now() + 15_000;
    while (!(await rowOf(id)).result) {
      assert.ok(Date.now() < until, 'the call was taken over and answered');
      await sleep(200);
    }
    const row = await rowOf(id);
    assert.match(String(row.runBy), /^hld_/);
    assert.notEqual(row.runBy, holder);
    assert.match(JSON.stringify(row.result), /access was revoked/);
  });

  it('a process never takes over its own calls, even with its lease lapsed: its wait finishes them', async () => {
    const p = await newPerson(tp.url);
    // This very process's holder row, its lease lapsed (a stall), holding an allowed call.
    const holder = (tp.svc.approvals as unknown as { holderId: string }).holderId;
    await tp.svc.db.execute(
      sql`insert into approval_holders (id, held_until) values (${holder}, now() - interval '1 second') on conflict (id) do update set held_until = now() - interval '1 second'`,
    );
    const row = await leftBehind(p.user.id, 'self', { holderId: holder, takeover: true });
    await tp.svc.db.execute(sql`update approvals set status = 'allowed', decided_by = 'dashboard', decided_at = now() where id = ${row.id}`);
    await sleep(6_000); // more than one of this process's sweeps
    assert.equal((await rowOf(row.id)).runBy, null, 'its own sweep did not take it');
    assert.deepEqual(await orphansDecided(tp.svc, 100, holder).then((ids) => ids.filter((id) => id === row.id)), []);
    assert.equal(await claimDecided(tp.svc, row.id, holder, { orphan: true }), undefined);
    assert.deepEqual(await orphansDecided(tp.svc, 100, 'hld_another').then((ids) => ids.filter((id) => id === row.id)), [row.id]);
    // Taken by another process: its holder then finds it taken, and finishes nothing itself.
    assert.equal((await claimDecided(tp.svc, row.id, 'hld_another', { orphan: true }))?.runBy, 'hld_another');
    assert.equal(await claimDecided(tp.svc, row.id, holder), undefined);
  });

  it('takes over no call of an older release, nor one decided long ago', async () => {
    const p = await newPerson(tp.url);
    const holder = `hld_old${Date.now()}`;
    await tp.svc.db.execute(sql`insert into approval_holders (id, held_until) values (${holder}, now() - interval '1 second')`);
    const old = await leftBehind(p.user.id, 'oldrelease', { holderId: holder });
    const stale = await leftBehind(p.user.id, 'stale', { holderId: holder, takeover: true });
    await tp.svc.db.execute(sql`update approvals set status = 'allowed', decided_by = 'dashboard', decided_at = now() where id = ${old.id}`);
    await tp.svc.db.execute(sql`update approvals set status = 'allowed', decided_by = 'dashboard', decided_at = now() - interval '2 minutes' where id = ${stale.id}`);
    await sleep(6_000); // more than one sweep
    for (const id of [old.id, stale.id]) {
      const row = await rowOf(id);
      assert.equal(row.runBy, null, `${id} was not taken over`);
      assert.equal(row.result, null);
    }
  });

  it('sweeps overdue approvals in the background so the dashboard shows them decided', async () => {
    const p = await newPerson(tp.url);
    const { id } = await leftBehind(p.user.id, 'swept', { expiresAt: sql`now() - interval '1 second'` });
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
