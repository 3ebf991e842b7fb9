import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { approvals as approvalsTable, pushSubscriptions } from '../packages/core/src/db/schema/index';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';
import { ask, destructiveTool, pendingFor, sleep } from './helpers/approvals';
import { revealText } from '../apps/dashboard/src/app/unicode';
import { decryptPush, newBrowserKeys, startPushService } from './helpers/push-service';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { until } from './helpers/wait';

let tp: Toolport;
let push: Awaited<ReturnType<typeof startPushService>>;
before(async () => {
  // push.example.com stands for a browser's push service here (the default list is the real ones).
  tp = await startToolport({ env: { PUSH_HOSTS: 'push.example.com,*.push.example.net' } });
  push = await startPushService();
});
after(async () => {
  await push?.close();
  await tp?.stop();
});

const approvals = () => tp.svc.approvals!;
const subscriptionsOf = (userId: string) => tp.svc.db.select().from(pushSubscriptions).where(eq(pushSubscriptions.userId, userId));

async function pushesTo(path: string, count: number, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = push.received.filter((r) => r.path === path);
    if (got.length >= count) return got;
    assert.ok(Date.now() < until, `expected ${count} push(es) to ${path}, got ${got.length}`);
    await sleep(25);
  }
}

describe('web push', () => {
  it('publishes one VAPID public key, the same across requests', async () => {
    const a = await new Client(tp.url).get('/api/push/key');
    assert.equal(a.status, 200);
    const key = Buffer.from(a.body.publicKey, 'base64url');
    assert.equal(key.length, 65);
    assert.equal(key[0], 4);
    assert.equal((await new Client(tp.url).get('/api/push/key')).body.publicKey, a.body.publicKey);
  });

  it('checks subscriptions: a session, https (http only to loopback in development), real keys', async () => {
    const p = await newPerson(tp.url);
    const { keys } = newBrowserKeys();
    assert.equal((await new Client(tp.url).post('/api/push/subscribe', { endpoint: `${push.base}/x`, keys })).status, 401);
    const http = await p.client.post('/api/push/subscribe', { endpoint: 'http://push.example.com/x', keys });
    assert.equal(http.status, 422);
    assert.equal(http.body.errors[0].path, '/endpoint');
    const ftp = await p.client.post('/api/push/subscribe', { endpoint: 'ftp://push.example.com/x', keys });
    assert.equal(ftp.status, 422);
    const long = await p.client.post('/api/push/subscribe', { endpoint: `https://push.example.com/${'a'.repeat(3000)}`, keys });
    assert.equal(long.status, 422);
    const badKeys = await p.client.post('/api/push/subscribe', { endpoint: 'https://push.example.com/x', keys: { p256dh: 'AAAA', auth: 'short' } });
    assert.equal(badKeys.status, 422);
    assert.deepEqual(badKeys.body.errors.map((e: any) => e.path).sort(), ['/keys/auth', '/keys/p256dh']);
    assert.deepEqual(await subscriptionsOf(p.user.id), []);
    // Only at a push service (PUSH_HOSTS): not a host anyone may choose, not a look-alike.
    for (const elsewhere of ['https://attacker.example/x', 'https://push.example.com.attacker.example/x', 'https://push.example.net/x']) {
      const refused = await p.client.post('/api/push/subscribe', { endpoint: elsewhere, keys });
      assert.equal(refused.status, 422, elsewhere);
      assert.match(refused.body.errors[0].message, /push service|private address/, elsewhere);
    }
    assert.equal((await p.client.post('/api/push/subscribe', { endpoint: 'https://eu.push.example.net/x', keys })).status, 201, 'a subdomain of a *. entry');
    assert.equal((await p.client.request('DELETE', '/api/push/subscribe', { endpoint: 'https://eu.push.example.net/x' })).status, 204);
    const ok = await p.client.post('/api/push/subscribe', { endpoint: 'https://push.example.com/ok', keys });
    assert.equal(ok.status, 201, ok.text);
    const gone = await p.client.request('DELETE', '/api/push/subscribe', { endpoint: 'https://push.example.com/ok' });
    assert.equal(gone.status, 204);
    assert.deepEqual(await subscriptionsOf(p.user.id), []);
  });

  it('sends the approval encrypted to the person’s device, and its action token decides it once', async () => {
    const p = await newPerson(tp.url);
    const browser = newBrowserKeys();
    const path = `/push/${randomBytes(6).toString('hex')}`;
    const sub = await p.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: browser.keys });
    assert.equal(sub.status, 201, sub.text);

    const asked = ask(approvals(), p.user.id);
    const [msg] = await pushesTo(path, 1);
    assert.equal(msg!.headers['content-encoding'], 'aes128gcm');
    assert.equal(msg!.headers.ttl, '30');
    assert.equal(msg!.headers.urgency, 'high');
    const vapidKey = (await new Client(tp.url).get('/api/push/key')).body.publicKey;
    assert.match(String(msg!.headers.authorization), new RegExp(`^vapid t=[\\w-]+\\.[\\w-]+\\.[\\w-]+, k=${vapidKey}$`));

    const payload = JSON.parse(decryptPush(msg!.body, browser.ecdh, browser.auth));
    const shown = await pendingFor(p.client, asked.nonce);
    assert.equal(payload.approvalId, shown.id);
    assert.equal(payload.expiresAt, shown.expiresAt);
    assert.equal(payload.title, 'Claude wants to run “Delete a note”');
    assert.ok(payload.body.startsWith('Delete a note · Notes: '), payload.body);
    assert.ok(payload.body.includes(asked.nonce), 'the arguments are summarised');
    assert.equal(typeof payload.actionToken, 'string');

    // No cookie anywhere below: the token is the capability.
    const anon = new Client(tp.url);
    const forged = await anon.post('/api/push/decision', { approvalId: payload.approvalId, decision: 'allow', token: randomBytes(32).toString('base64url') });
    assert.equal(forged.status, 401);
    const otherId = await anon.post('/api/push/decision', { approvalId: 'apr_other', decision: 'allow', token: payload.actionToken });
    assert.equal(otherId.status, 401);
    const [still] = await tp.svc.db.select().from(approvalsTable).where(eq(approvalsTable.id, shown.id));
    assert.equal(still!.status, 'pending', 'a forged token changed nothing');

    const res = await anon.post('/api/push/decision', { approvalId: payload.approvalId, decision: 'allow', token: payload.actionToken });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'allowed');
    assert.equal(res.body.decidedBy, 'push');
    const decision = await asked.decision;
    assert.equal(decision.status, 'allowed');
    assert.equal(decision.decidedBy, 'push');

    const replay = await anon.post('/api/push/decision', { approvalId: payload.approvalId, decision: 'deny', token: payload.actionToken });
    assert.equal(replay.status, 409);
    assert.equal(replay.body.decision.status, 'allowed');
  });

  it('names the tool by its title and add-on, and spells out hidden characters exactly as the dashboard does', async () => {
    const p = await newPerson(tp.url);
    const browser = newBrowserKeys();
    const path = `/push/${randomBytes(6).toString('hex')}`;
    assert.equal((await p.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: browser.keys })).status, 201);
    // A right-to-left override in an argument, a Cyrillic а in the app's name, a zero-width space in the add-on's.
    const argumentsText = JSON.stringify({ id: 'invoice\u202Efdp.exe' });
    const appName = 'Cl\u0430ude';
    const decision = approvals().request({
      callId: `call_${randomBytes(16).toString('base64url')}`,
      userId: p.user.id,
      clientId: 'cli_test',
      appName,
      tool: destructiveTool({ addonName: 'Notes\u200B' }),
      argumentsText,
      subject: 'usr_pseudonym',
    });
    const [msg] = await pushesTo(path, 1);
    const payload = JSON.parse(decryptPush(msg!.body, browser.ecdh, browser.auth));
    assert.equal(payload.title, `${revealText(appName, true)} wants to run “Delete a note”`);
    assert.equal(payload.title, 'Cl⟦U+0430⟧ude wants to run “Delete a note”');
    assert.equal(payload.body, `Delete a note · ${revealText('Notes\u200B', true)}: ${revealText(argumentsText)}`);
    assert.equal(payload.body, 'Delete a note · Notes⟦U+200B⟧: {"id":"invoice⟦U+202E⟧fdp.exe"}');
    assert.doesNotMatch(`${payload.title}${payload.body}`, /[\u202E\u200B\u0430]/u, 'no raw hidden or look-alike character');
    await new Client(tp.url).post('/api/push/decision', { approvalId: payload.approvalId, decision: 'deny', token: payload.actionToken });
    assert.equal((await decision).status, 'denied');
  });

  it('follows an allowed call that did not run with a push saying so, which opens the call (#43)', async () => {
    const hook = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
    hook.onConfirm(() => ({ confirm: { message: 'Delete this note?', style: 'destructive' } }));
    const p = await personWithNotes(tp.url, hook, { delete_note: true }, 'push-after');
    const app = (await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' })).client;
    try {
      const browser = newBrowserKeys();
      const path = `/push/${randomBytes(6).toString('hex')}`;
      assert.equal((await p.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: browser.keys })).status, 201);
      const calling = app.callTool({ name: `${p.addonId}__delete_note`, arguments: { id: 'n-gone' } });
      const [asked] = await pushesTo(path, 1);
      const ask1 = JSON.parse(decryptPush(asked!.body, browser.ecdh, browser.auth));
      // The add-on goes down while the person decides, from the notification.
      await hook.close();
      assert.equal((await new Client(tp.url).post('/api/push/decision', { approvalId: ask1.approvalId, decision: 'allow', token: ask1.actionToken })).status, 200);
      assert.equal((await calling).isError, true);
      const [, after] = await pushesTo(path, 2);
      const told = JSON.parse(decryptPush(after!.body, browser.ecdh, browser.auth));
      const { callId } = (await p.client.get(`/api/approvals/${ask1.approvalId}`)).body;
      assert.deepEqual(told, {
        kind: 'outcome',
        approvalId: ask1.approvalId,
        callId,
        title: '“Delete a note” did not run',
        body: 'You allowed it · the add-on could not be reached, so it did not run.',
        url: `${tp.url}/calls/${callId}`,
      });
      assert.equal(after!.headers.urgency, 'normal');
    } finally {
      await app.close();
    }
  });

  it('sends nothing after an allowed call that did what was allowed', async () => {
    const hook = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
    hook.onConfirm(() => ({ confirm: { message: 'Delete this note?', style: 'destructive' } }));
    const p = await personWithNotes(tp.url, hook, { delete_note: true }, 'push-fine');
    const app = (await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' })).client;
    try {
      const browser = newBrowserKeys();
      const path = `/push/${randomBytes(6).toString('hex')}`;
      await p.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: browser.keys });
      const calling = app.callTool({ name: `${p.addonId}__delete_note`, arguments: { id: 'n-fine' } });
      const [asked] = await pushesTo(path, 1);
      const ask1 = JSON.parse(decryptPush(asked!.body, browser.ecdh, browser.auth));
      await new Client(tp.url).post('/api/push/decision', { approvalId: ask1.approvalId, decision: 'allow', token: ask1.actionToken });
      assert.equal((await calling).isError, undefined);
      // The follow-up would be on its way by the time the call's page says it ended.
      const { callId } = (await p.client.get(`/api/approvals/${ask1.approvalId}`)).body;
      await until('the call ended', async () => ((await p.client.get(`/api/calls/${callId}`)).body.state === 'ended' ? true : undefined));
      await sleep(1_000);
      assert.equal(push.received.filter((r) => r.path === path).length, 1);
    } finally {
      await app.close();
      await hook.close();
    }
  });

  it('does not wait for the push service before showing the approval', async () => {
    const p = await newPerson(tp.url);
    const browser = newBrowserKeys();
    // Nobody listens here: a connection that hangs or fails must not hold the call up.
    await p.client.post('/api/push/subscribe', { endpoint: 'http://127.0.0.1:9/nothing', keys: browser.keys });
    const asked = ask(approvals(), p.user.id);
    const shown = await pendingFor(p.client, asked.nonce, 3_000);
    await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
    assert.equal((await asked.decision).status, 'denied');
  });

  it('deletes a subscription the push service says is gone (410)', async () => {
    const p = await newPerson(tp.url);
    const browser = newBrowserKeys();
    const path = `/push/${randomBytes(6).toString('hex')}`;
    await p.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: browser.keys });
    assert.equal((await subscriptionsOf(p.user.id)).length, 1);
    push.answer(410);
    try {
      const asked = ask(approvals(), p.user.id);
      await pushesTo(path, 1);
      const until = Date.now() + 5_000;
      while ((await subscriptionsOf(p.user.id)).length) {
        assert.ok(Date.now() < until, 'the dead subscription was kept');
        await sleep(25);
      }
      const shown = await pendingFor(p.client, asked.nonce);
      await p.client.post(`/api/approvals/${shown.id}/decision`, { decision: 'deny' });
      await asked.decision;
    } finally {
      push.answer(201);
    }
  });
});
