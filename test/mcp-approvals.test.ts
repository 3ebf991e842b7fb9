import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { decideApproval } from '@toolport/core';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import type { Client } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const SLOW_NOTES = new Set(['n4', 'n5']);

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({
    delete_note: async (b) => {
      // The calls allowed while a server stops take a while, so the drain must wait for them.
      if (SLOW_NOTES.has(b.arguments.id)) await sleep(500);
      return { text: `Deleted ${b.arguments.id}.` };
    },
  });
  hook.onConfirm((b) => ({
    confirm: { message: `Delete the note ${b.arguments.id}?`, info: [{ name: 'Note', value: b.arguments.id }], style: 'destructive' },
  }));
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

async function setup() {
  const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'apr');
  const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  return { person, addonId: person.addonId, app };
}

async function pendingApproval(person: Client) {
  for (let i = 0; i < 200; i++) {
    const res = await person.get('/api/approvals?status=pending');
    if (res.body.length) return res.body[0];
    await sleep(50);
  }
  throw new Error('no approval appeared');
}

describe('destructive calls through MCP wait for the person', () => {
  it('allow runs the tool once, with the exact arguments shown, and progress says where to approve', async () => {
    const { person, addonId, app } = await setup();
    const progress: string[] = [];
    const before = hook.calls().length;
    const call = app.client.callTool(
      { name: `${addonId}__delete_note`, arguments: { id: 'n1' } },
      undefined,
      { onprogress: (p) => progress.push(p.message ?? '') },
    );
    const approval = await pendingApproval(person.client);
    assert.equal(approval.app, 'Claude');
    assert.equal(approval.tool, 'delete_note');
    assert.deepEqual(approval.arguments, { id: 'n1' });
    assert.equal(approval.confirm.message, 'Delete the note n1?');
    assert.equal(hook.calls().length, before, 'nothing ran before the decision');

    const decided = await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
    assert.equal(decided.status, 200);
    const result = await call;
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.deepEqual(result.content, [{ type: 'text', text: 'Deleted n1.' }]);
    const ran = hook.calls().slice(before);
    assert.equal(ran.length, 1);
    assert.equal(ran[0]!.raw.includes('"arguments":{"id":"n1"}'), true, 'the approved arguments, byte for byte');
    assert.ok(progress.some((m) => m.includes(tp.url)), `progress names where: ${JSON.stringify(progress)}`);

    const again = await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' });
    assert.equal(again.status, 409);
    const log = await person.client.get('/api/calls');
    assert.equal(log.body.items[0].outcome, 'ok');
    assert.equal(log.body.items[0].decision, 'allowed');
    assert.equal(log.body.items[0].decidedBy, 'dashboard');
  });

  it('deny refuses the call with a sentence the model can relay, and nothing runs', async () => {
    const { person, addonId, app } = await setup();
    const before = hook.calls().length;
    const call = app.client.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n2' } });
    const approval = await pendingApproval(person.client);
    assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' })).status, 200);
    const result = await call;
    assert.equal(result.isError, true);
    assert.match((result.content as any[])[0].text, /denied/);
    assert.equal(hook.calls().length, before);
    assert.equal((await person.client.get('/api/calls')).body.items[0].outcome, 'denied');
  });

  for (const form of ['plain JSON', 'streamed (progress token)'] as const) {
    it(`an app that hangs up while its call waits ends the call as cancelled, and nothing runs: ${form}`, async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'apr');
      const provider = new TestOAuthProvider('Hangs up');
      const { client } = await connectApp(person.user.mcpUrl, person.client, { provider });
      await client.close();
      const before = hook.calls().length;
      // The request itself is all that holds the call; a streamed one has had its headers already.
      const meta = form === 'plain JSON' ? {} : { _meta: { progressToken: 'hang-up' } };
      const hangUp = new AbortController();
      const held = fetch(person.user.mcpUrl, {
        method: 'POST',
        signal: hangUp.signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${provider.saved!.access_token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: `${person.addonId}__delete_note`, arguments: { id: 'n9' }, ...meta } }),
      })
        .then((res) => res.text())
        .catch((err: Error) => err);
      const approval = await pendingApproval(person.client);
      hangUp.abort();
      assert.ok((await held) instanceof Error);
      let found: { status: string; decidedBy?: string } | undefined;
      for (let i = 0; i < 100 && !found; i++) {
        await sleep(50);
        const all = (await person.client.get('/api/approvals?status=all')).body as Array<{ id: string; status: string }>;
        found = all.find((a) => a.id === approval.id && a.status !== 'pending');
      }
      assert.equal(found?.status, 'cancelled');
      const late = await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' });
      assert.equal(late.status, 409);
      assert.equal(hook.calls().length, before, 'nothing ran');
    });
  }

  it('an app that cancels a waiting call (notifications/cancelled) ends it as cancelled, and nothing runs', async () => {
    const { person, addonId, app } = await setup();
    const before = hook.calls().length;
    const cancel = new AbortController();
    // The SDK's client sends notifications/cancelled for the request when its signal aborts: a
    // separate POST, which reaches the held call through the process's calls in flight.
    const call = app.client.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n6' } }, undefined, { signal: cancel.signal }).catch((err: Error) => err);
    const approval = await pendingApproval(person.client);
    cancel.abort('the person changed their mind');
    assert.ok((await call) instanceof Error);
    let found: { status: string; decidedBy?: string } | undefined;
    for (let i = 0; i < 100 && !found; i++) {
      await sleep(50);
      const all = (await person.client.get('/api/approvals?status=all')).body as Array<{ id: string; status: string; decidedBy?: string }>;
      found = all.find((a) => a.id === approval.id && a.status !== 'pending');
    }
    assert.equal(found?.status, 'cancelled');
    assert.equal(found?.decidedBy, 'app');
    assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' })).status, 409);
    assert.equal(hook.calls().length, before, 'nothing ran');
  });

  it('a server that stops lets a call allowed meanwhile run and answer before it goes', async () => {
    // Its own server: this one is stopped. A held call's handler has returned (the answer is written
    // later on Node's response), so only that response tells the drain the call is still in flight.
    const own = await startToolport();
    try {
      const person = await personWithNotes(own.url, hook, { delete_note: true }, 'apr');
      const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
      const before = hook.calls().length;
      // One plain call and one streamed (a progress token): both are written after their handler returned.
      const progress: string[] = [];
      const calls = [
        client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n4' } }),
        client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n5' } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') }),
      ];
      const approvals: Array<{ id: string }> = [];
      for (let i = 0; i < 200 && approvals.length < 2; i++) {
        approvals.splice(0, approvals.length, ...((await person.client.get('/api/approvals?status=pending')).body as Array<{ id: string }>));
        if (approvals.length < 2) await sleep(50);
      }
      assert.equal(approvals.length, 2, 'both calls wait for the person');
      const stopping = own.close();
      await sleep(200);
      // New requests are refused while it drains: the person's allow reaches the services directly.
      for (const approval of approvals) {
        const decided = await decideApproval({ ctx: { svc: own.svc, actor: { kind: 'person', userId: person.user.id } }, id: approval.id, input: { decision: 'allow' } });
        assert.equal(decided.status, 'allowed');
      }
      const results = await Promise.all(calls);
      assert.deepEqual(results.map((r) => r.content), [[{ type: 'text', text: 'Deleted n4.' }], [{ type: 'text', text: 'Deleted n5.' }]], JSON.stringify(results));
      assert.ok(progress.length > 0, 'the streamed call heard where to approve');
      assert.equal(hook.calls().length, before + 2);
      await stopping;
    } finally {
      await own.close();
      await own.backing.drop();
    }
  });

  it('revoking the app while it waits ends the call as revoked', async () => {
    const { person, addonId, app } = await setup();
    const call = app.client.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n3' } });
    await pendingApproval(person.client);
    const conn = (await person.client.get('/api/connections')).body[0];
    assert.equal((await person.client.delete(`/api/connections/${conn.id}`)).status, 204);
    const result = await call;
    assert.equal(result.isError, true);
    assert.match((result.content as any[])[0].text, /revoked/);
  });
});
