// Issue #39: a 2026-07-28 call held for the person outlives the request that started it. Its answer
// is kept on the approval, so the app's retry gets it on any API process, as often as it retries
// within the window, and the add-on is sent the call once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { stillWaiting, until } from './helpers/wait';
import { connectAppV2 } from './helpers/mcp-v2';
import { spawnToolport } from './helpers/process';
import { createBacking, freePort, startToolport, TARGET, type Backing, type Toolport } from './helpers/target';

let hook: Awaited<ReturnType<typeof startAddonServer>>;
let backing: Backing | undefined;
let tp: Toolport | undefined;
const procs: ChildProcess[] = [];
/** Where the first round goes, and where the retries go: two API processes on services, one embedded. */
let a = '';
let b = '';

before(async () => {
  hook = await startAddonServer({
    delete_note: async (body) => (body.arguments.id === 'locked' ? { error: 'That note is locked.' } : { text: `Deleted ${body.arguments.id}.` }),
  });
  // Described, so the person is asked (a confirm answered with null would skip the approval).
  hook.onConfirm((body) => ({ confirm: { message: `Delete the note ${body.arguments.id}?`, style: 'destructive' } }));
  if (TARGET === 'services') {
    backing = await createBacking();
    const [pa, pb, pw] = [await freePort(), await freePort(), await freePort()];
    a = `http://127.0.0.1:${pa}`;
    b = `http://127.0.0.1:${pb}`;
    const spawn = (role: 'api' | 'worker', port: number) => spawnToolport(procs, { env: backing!.env, role, port, publicUrl: a });
    await Promise.all([spawn('api', pa), spawn('api', pb), spawn('worker', pw)]);
  } else {
    tp = await startToolport();
    a = b = tp.url;
  }
});
after(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await backing?.drop();
  await tp?.stop();
  await hook?.close();
});

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
};

/** A person with Notes on, and an app (SDK v2, real OAuth) whose token the rounds are sent with. */
async function setUp(label: string) {
  const person = await personWithNotes(a, hook, { delete_note: true }, label);
  const provider = new TestOAuthProvider('Claude');
  const { client } = await connectAppV2(person.user.mcpUrl, person.client, { provider, capabilities: { elicitation: { url: {} } } });
  await client.close();
  const tool = `${person.addonId}__delete_note`;
  let id = 0;
  /** One tools/call round, to the API process at `origin`. */
  const round = async (origin: string, params: Record<string, unknown>) => {
    const res = await fetch(person.user.mcpUrl.replace(a, origin), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${provider.saved!.access_token}`,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': tool,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: tool, ...params, _meta: ENVELOPE } }),
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as any).result;
  };
  return { person, round };
}

const textOf = (result: any) => (result.content as Array<{ text: string }>).map((c) => c.text).join('\n');
const approvalOf = (result: any) => String(result.inputRequests.approval.params.url).match(/\/approvals\/(apr_[\w-]+)$/)![1]!;

describe('a held call on 2026-07-28', () => {
  it('its retry on another API process gets its answer once the person allows; a second retry the same answer; delivered once', async () => {
    const { person, round } = await setUp('held');
    const before = hook.calls().length;
    const first = await round(a, { arguments: { id: 'h1' } });
    assert.equal(first.resultType, 'input_required', JSON.stringify(first));
    const approvalId = approvalOf(first);
    const retry = round(b, { arguments: { id: 'h1' }, requestState: first.requestState, inputResponses: { approval: { action: 'accept' } } });
    await stillWaiting(retry);
    const decided = await person.client.post(`/api/approvals/${approvalId}/decision`, { decision: 'allow' });
    assert.equal(decided.status, 200, decided.text);
    const answer = await retry;
    assert.equal(answer.resultType, 'complete', JSON.stringify(answer));
    assert.equal(textOf(answer), 'Deleted h1.');
    // The app retries again (its own timeout, a blip): the same answer, and nothing runs twice.
    const again = await round(a, { arguments: { id: 'h1' }, requestState: first.requestState });
    assert.equal(textOf(again), 'Deleted h1.');
    assert.equal(hook.calls().filter((d) => d.body.arguments.id === 'h1').length, 1, 'delivered once');
    assert.equal(hook.calls().length, before + 1);
  });

  it('a deny with a reason reaches the waiting retry as the sentence the model reads; nothing is delivered', async () => {
    const { person, round } = await setUp('held-deny');
    const before = hook.calls().length;
    const first = await round(a, { arguments: { id: 'h2' } });
    const retry = round(b, { arguments: { id: 'h2' }, requestState: first.requestState });
    await stillWaiting(retry);
    const decided = await person.client.post(`/api/approvals/${approvalOf(first)}/decision`, { decision: 'deny', reason: 'Keep that note.' });
    assert.equal(decided.status, 200, decided.text);
    const answer = await retry;
    assert.equal(answer.isError, true);
    assert.match(textOf(answer), /The person denied this call\. Their reason: "Keep that note\."/);
    assert.equal(hook.calls().length, before, 'nothing delivered');
  });
});

describe('the same destructive call again (SDK v1, 2025-11-25)', () => {
  it('while it waits: one approval, one delivery, both answered; just after the allow: that answer again, said to be so', async () => {
    const person = await personWithNotes(a, hook, { delete_note: true }, 'same');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const name = `${person.addonId}__delete_note`;
    const pendingFor = async (id: string) =>
      ((await person.client.get('/api/approvals?status=pending')).body as any[]).filter((p) => p.arguments?.id === id);
    const first = client.callTool({ name, arguments: { id: 'h3' } });
    const [approval] = await until('the approval', async () => (await pendingFor('h3'))[0] && (await pendingFor('h3')));
    // The model calls again (or the app retries) while the person has not decided.
    const second = client.callTool({ name, arguments: { id: 'h3' } });
    await stillWaiting(second);
    assert.equal((await pendingFor('h3')).length, 1, 'the person is asked once');
    const decided = await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal(decided.status, 200, decided.text);
    assert.equal(textOf(await first), 'Deleted h3.');
    const again: any = await second;
    assert.equal(again.isError, undefined, JSON.stringify(again));
    assert.match(again.content[0].text, /^This app made this exact call \d+ seconds ago; Toolport did not run it or ask the person again/);
    assert.equal(again.content[1].text, 'Deleted h3.');
    // Moments later, the same call once more: the same answer at once, nobody asked.
    const third: any = await client.callTool({ name, arguments: { id: 'h3' } });
    assert.equal(third.content[1].text, 'Deleted h3.');
    assert.equal((await pendingFor('h3')).length, 0);
    assert.equal(hook.calls().filter((d) => d.body.arguments.id === 'h3').length, 1, 'delivered once');
    // Other arguments are another call: asked for.
    const other = client.callTool({ name, arguments: { id: 'h4' } });
    await until('its own approval', async () => (await pendingFor('h4'))[0]);
    const [h4] = await pendingFor('h4');
    await person.client.post(`/api/approvals/${h4.id}/decision`, { decision: 'deny' });
    assert.match(textOf(await other), /The person denied this call/);
    const log = (await person.client.get('/api/calls')).body.items as any[];
    assert.equal(log.filter((r) => r.outcome === 'repeated').length, 2, 'the repeats are in the call log as such');
    await client.close();
  });

  /** An app's call of the locked note, allowed by the person; the add-on then fails it. */
  async function allowedThenFailed(label: string) {
    const person = await personWithNotes(a, hook, { delete_note: true }, label);
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const name = `${person.addonId}__delete_note`;
    const pending = async () => ((await person.client.get('/api/approvals?status=pending')).body as any[]).filter((p) => p.arguments?.id === 'locked');
    const first = client.callTool({ name, arguments: { id: 'locked' } });
    const [approval] = await until('the approval', async () => (await pending())[0] && (await pending()));
    await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    return { person, client, name, pending, approval, first };
  }

  it('a repeat of a call whose answer failed is a new call: the person is asked again', async () => {
    const { person, client, name, pending, approval, first } = await allowedThenFailed('same-failed');
    const failed: any = await first;
    assert.equal(failed.isError, true);
    assert.equal(textOf(failed), 'That note is locked.');
    const again = client.callTool({ name, arguments: { id: 'locked' } });
    const [asked] = await until('a new approval', async () => (await pending())[0] && (await pending()));
    assert.notEqual(asked.id, approval.id, 'the person is asked again');
    await person.client.post(`/api/approvals/${asked.id}/decision`, { decision: 'deny' });
    assert.match(textOf(await again), /The person denied this call/);
    assert.equal(hook.calls().filter((d) => d.body.type === 'tool.call' && d.body.arguments.id === 'locked').length, 1);
    await client.close();
  });

  it('a repeat that comes before the failed answer is kept still asks the person again', { skip: TARGET !== 'services' && 'needs a second Postgres session to hold the write' }, async () => {
    // The app hears the failure before its answer is kept on the approval (written behind it); a
    // database lock holds that write, so the repeat is certain to wait for it.
    const db = postgres(backing!.env.DATABASE_URL!, { max: 2, onnotice: () => {} });
    const LOCK = 4242;
    await db.unsafe(`create or replace function test_hold_kept() returns trigger language plpgsql as $$ begin perform pg_advisory_xact_lock(${LOCK}); return new; end $$`);
    await db.unsafe('create trigger test_hold_kept before update on approvals for each row when (new.result is not null and old.result is null) execute function test_hold_kept()');
    const holder = await db.reserve();
    try {
      await holder`select pg_advisory_lock(${LOCK})`;
      const { person, client, name, pending, approval, first } = await allowedThenFailed('same-late');
      assert.equal(textOf(await first), 'That note is locked.');
      await until('the failed answer’s write waits for the lock', async () => (await db`select 1 from pg_locks where locktype = 'advisory' and objid = ${LOCK} and not granted`).length > 0);
      const again = client.callTool({ name, arguments: { id: 'locked' } });
      await stillWaiting(again, 'the repeat waits for the first call’s answer');
      await holder`select pg_advisory_unlock(${LOCK})`;
      const [asked] = await until('a new approval', async () => (await pending())[0] && (await pending()));
      assert.notEqual(asked.id, approval.id, 'the person is asked again');
      await person.client.post(`/api/approvals/${asked.id}/decision`, { decision: 'deny' });
      assert.match(textOf(await again), /The person denied this call/);
      await client.close();
    } finally {
      await holder`select pg_advisory_unlock_all()`;
      holder.release();
      await db.unsafe('drop trigger if exists test_hold_kept on approvals');
      await db.unsafe('drop function if exists test_hold_kept()');
      await db.end();
    }
  });
});
