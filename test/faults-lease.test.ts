import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
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
import { TARGET, UNLIMITED_CALLS } from './helpers/target';
import { LEASE_SECONDS } from '../packages/core/src/approvals/request';

/**
 * docs/faults.md, "Postgres restarted": a short outage must not cost a live API process the calls
 * it holds. Its own file (its own private Postgres and Redis) because it waits out the lease and two
 * sweeps, which test/faults.test.ts has no room left for within a file's time.
 */
const skip = privateServicesSkip(TARGET);

let pg: PrivatePostgres;
let redis: PrivateRedis;
const holders: ToolportProcess[] = [];
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
let token: string;

type Answer = { kind: 'result' | 'tool-error'; text: string } | { kind: 'other'; detail: string };

let rpc = 0;
async function call(api: ToolportProcess, id: string): Promise<Answer> {
  try {
    const res = await fetch(`${api.url}${new URL(person.user.mcpUrl).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: `${person.addonId}__delete_note`, arguments: { id } } }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = await res.text();
    const msg = res.status === 200 ? JSON.parse(body) : undefined;
    if (!msg?.result) return { kind: 'other', detail: `${res.status} ${body.slice(0, 300)}` };
    const text = (msg.result.content ?? []).map((c: { text?: string }) => c.text ?? '').join('');
    return { kind: msg.result.isError ? 'tool-error' : 'result', text };
  } catch (err) {
    return { kind: 'other', detail: String((err as Error).cause ?? err) };
  }
}

/** When each holder's renewals failed and worked again (its own log), to read a failure by. */
const renewals = (h: ToolportProcess, since: number) =>
  h
    .output()
    .split('\n')
    .filter((l) => l.includes('the lease of the waiting approvals'))
    .map((l) => JSON.parse(l))
    .map((e) => `${Date.parse(e.time) - since} ms: ${e.msg}`);

before(async () => {
  if (skip) return;
  const deployment = await startPrivateDeployment('tplease');
  ({ pg, redis } = deployment);
  const env = { ...deployment.env, ...UNLIMITED_CALLS };
  hook = await startAddonServer({ delete_note: async (body) => ({ text: `deleted ${body.arguments.id}` }) });
  hook.onConfirm(async (body) => ({ confirm: { message: `Delete ${body.arguments.id}?`, style: 'destructive' } }));
  // Two API processes (each with its own worker, ROLE=all) with the contract's 30 s wait, so only a
  // lapsed lease, not the expiry, could end these approvals early.
  const first = await spawnToolport('all', env, { readyTimeoutMs: 120_000 });
  holders.push(first, await spawnToolport('all', env, { publicUrl: first.url, readyTimeoutMs: 120_000 }));
  person = await personWithNotes(first.url, hook, { delete_note: true }, 'lease');
  const provider = new TestOAuthProvider('Lease');
  await connectApp(person.user.mcpUrl, person.client, { provider });
  token = provider.saved!.access_token;
});

after(async () => {
  for (const h of holders) await h.kill('SIGKILL').catch(() => {});
  await hook?.close();
  await Promise.allSettled([pg?.stop(), redis?.stop()]);
});

describe('the holder lease on real services', { skip }, () => {
  it('Postgres down ~4 s while two API processes hold calls, probed all along: no live approval is cancelled, each decision is acted on', async (t) => {
    const ids = ['blip-a0', 'blip-a1', 'blip-b0', 'blip-b1'];
    const calls = ids.map((id, i) => call(holders[i < 2 ? 0 : 1]!, id));
    let pending: any[] = [];
    for (let i = 0; i < 300; i++) {
      const listed = (await person.client.get('/api/approvals?status=pending')).body as any[];
      pending = ids.map((id) => listed.find((a) => a.arguments?.id === id)).filter(Boolean);
      if (pending.length === ids.length) break;
      await sleep(50);
    }
    assert.equal(pending.length, ids.length, 'every call waits for the person');
    // Readiness probes and a load balancer's health checks keep asking while it is down: each failed
    // connection makes the shared pool wait longer before its next one.
    let probing = true;
    const probes = (async () => {
      while (probing) {
        await Promise.all(holders.map((h) => fetch(`${h.url}/readyz`, { signal: AbortSignal.timeout(1_000) }).catch(() => {})));
        await sleep(100);
      }
    })();
    try {
      const killing = Date.now();
      await pg.kill();
      await sleep(4_000);
      await pg.start();
      t.diagnostic(`Postgres back ${Date.now() - killing} ms after the kill began`);
      for (const h of holders) t.diagnostic(`api ${h.port} ready again after ${await waitReady(h.url, 30_000)} ms`);
      // Longer than the lease and two sweeps of every process: a holder that lost its lease in the
      // outage would see its calls cancelled by now.
      const until = killing + (LEASE_SECONDS + 12) * 1000;
      while (Date.now() < until) {
        const all = (await person.client.get('/api/approvals?status=all')).body as any[];
        const ended = pending.map((p) => all.find((a) => a.id === p.id)).filter((a) => a && a.status !== 'pending');
        if (ended.length) for (const h of holders) t.diagnostic(`api ${h.port}: ${JSON.stringify(renewals(h, killing))}`);
        assert.deepEqual(ended.map((a) => `${a.arguments.id}: ${a.status} by ${a.decidedBy}`), [], 'the live holders still hold every call');
        await sleep(500);
      }
      for (const h of holders) t.diagnostic(`api ${h.port}: ${JSON.stringify(renewals(h, killing))}`);
    } finally {
      probing = false;
      await probes;
    }
    // One allow and one deny on each holder.
    for (const [i, p] of pending.entries()) {
      const decided = await person.client.post(`/api/approvals/${p.id}/decision`, { decision: i % 2 ? 'deny' : 'allow' });
      assert.equal(decided.status, 200, `${ids[i]}: ${decided.text}`);
    }
    const answers = await Promise.all(calls);
    t.diagnostic(`answers: ${JSON.stringify(answers)}`);
    answers.forEach((a, i) => assert.equal(a.kind, i % 2 ? 'tool-error' : 'result', `${ids[i]}: ${JSON.stringify(a)}`));
    const ran = hook.calls().filter((d) => ids.includes(d.body.arguments.id)).map((d) => d.body.arguments.id);
    assert.deepEqual([...new Set(ran)].sort(), ['blip-a0', 'blip-b0'], 'only the allowed calls reached the add-on');
  });
});
