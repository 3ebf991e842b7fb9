import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { launchBrowser, newContext, registerServiceWorker } from './helpers/browser';
import { pendingOf } from './helpers/approvals';
import { Client } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { signInWhereSent } from './helpers/dashboard';
import { startPushService, subscribeDevice } from './helpers/push-service';
import { startToolport, type Toolport } from './helpers/target';

const DISMISSED = 'The person dismissed the approval request without allowing it, so the call did not run. Do not retry it unless they ask you to.';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let push: Awaited<ReturnType<typeof startPushService>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  push = await startPushService();
  hook = await startAddonServer({ delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await push?.close();
  await tp?.stop();
});

async function statusOf(person: Client, approvalId: string) {
  const all = await person.get('/api/approvals?status=all');
  return (all.body as any[]).find((a) => a.id === approvalId);
}

/** Hands `payload` to the worker as a push service would, until its notification shows (or not). */
async function showPush(page: Page, cdp: CDPSession, registrationId: string, payload: { approvalId: string }) {
  const readShown = () =>
    page.evaluate(async (tag) => {
      const reg = await navigator.serviceWorker.ready;
      for (let i = 0; i < 10; i++) {
        const [n] = await reg.getNotifications({ tag });
        if (n) return { title: n.title, body: n.body };
        await new Promise((r) => setTimeout(r, 100));
      }
      return null;
    }, payload.approvalId);
  let shown = null;
  // A push can reach a worker still starting up and be dropped; a push service retries too.
  for (let attempt = 0; attempt < 5 && !shown; attempt++) {
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: tp.url, registrationId, data: JSON.stringify(payload) });
    shown = await readShown();
  }
  return shown;
}

/** A page whose window the service worker controls: the one it navigates, as on a phone with the dashboard open. */
async function controlledPage() {
  const page = await (await newContext(browser, tp.url)).newPage();
  const worker = await registerServiceWorker(page, tp.url);
  await page.reload();
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  return { page, ...worker };
}

/** The person taps the notification tagged `tag` (its body, or an action): the event the browser fires, to the running worker. */
async function tap(page: Page, tag: string, action = '') {
  const [worker] = page.context().serviceWorkers();
  assert.ok(worker, 'the service worker is running');
  await worker.evaluate(
    async ([tag, action]) => {
      const scope = self as any;
      const [n] = await scope.registration.getNotifications({ tag });
      scope.dispatchEvent(new scope.NotificationEvent('notificationclick', { notification: n, action }));
    },
    [tag, action] as const,
  );
}

describe('dismissing the approval’s notification answers it', () => {
  it('ends the held MCP call as dismissed, through the real service worker', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'dismiss');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const device = await subscribeDevice(person, push);
    const page = await (await newContext(browser, tp.url)).newPage();
    try {
      const { cdp, registrationId } = await registerServiceWorker(page, tp.url);
      const ran = hook.calls().length;
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });

      // What Toolport sent the device, decrypted, handed to the worker as the push service would.
      const payload = await device.payload();
      const shown = await showPush(page, cdp, registrationId, payload);
      assert.ok(shown, 'the worker showed the notification');
      assert.equal(shown.title, 'Claude wants to run “Delete a note”');
      assert.ok(shown.body.startsWith('Delete a note · Notes: Delete the note n1? '), shown.body);

      // Headless Chromium has no notification to swipe away, and a script's close() is not the
      // person's (the spec fires no notificationclose for it). So the worker is handed the event
      // the browser fires when the person closes it, carrying the real notification and its data.
      const [worker] = page.context().serviceWorkers();
      assert.ok(worker, 'the service worker is running');
      await worker.evaluate(async (tag) => {
        const scope = self as any;
        const [n] = await scope.registration.getNotifications({ tag });
        n.close();
        scope.dispatchEvent(new scope.NotificationEvent('notificationclose', { notification: n }));
      }, payload.approvalId);

      const result = (await calling) as { isError?: boolean; content: Array<{ type: string; text: string }> };
      assert.equal(result.isError, true);
      assert.deepEqual(result.content, [{ type: 'text', text: DISMISSED }]);
      assert.equal(hook.calls().length, ran, 'the dismissed call never reached the add-on');

      const decided = await statusOf(person.client, payload.approvalId);
      assert.equal(decided.status, 'dismissed');
      assert.equal(decided.decidedBy, 'push');
      const [logged] = (await person.client.get('/api/calls')).body.items;
      assert.equal(logged.outcome, 'dismissed');
      assert.equal(logged.decision, 'dismissed');
      assert.equal(logged.decidedBy, 'push');
      await cdp.detach();
    } finally {
      await page.context().close();
      await app.client.close();
    }
  });

  it('refuses a dismissal of someone else’s approval, and it changes nothing', async () => {
    const alice = await personWithNotes(tp.url, hook, { delete_note: true }, 'dismiss');
    const bob = await personWithNotes(tp.url, hook, { delete_note: true }, 'dismiss');
    const aliceApp = await connectApp(alice.user.mcpUrl, alice.client, { name: 'Claude' });
    const bobApp = await connectApp(bob.user.mcpUrl, bob.client, { name: 'Claude' });
    const aliceDevice = await subscribeDevice(alice, push);
    const bobDevice = await subscribeDevice(bob, push);
    try {
      const aliceCall = aliceApp.client.callTool({ name: `${alice.addonId}__delete_note`, arguments: { id: 'a1' } });
      const bobCall = bobApp.client.callTool({ name: `${bob.addonId}__delete_note`, arguments: { id: 'b1' } });
      const mine = await aliceDevice.payload();
      const theirs = await bobDevice.payload();
      assert.equal((await pendingOf(alice.client, 'a1')).id, mine.approvalId);
      assert.equal((await pendingOf(bob.client, 'b1')).id, theirs.approvalId);

      // No cookie: the token is the capability, and it names one approval.
      const anon = new Client(tp.url);
      const dismiss = (approvalId: string, token: string) => anon.post('/api/push/decision', { approvalId, decision: 'dismiss', token });
      const refused = [
        await dismiss(theirs.approvalId, mine.actionToken), // my token, Bob's approval
        await dismiss(theirs.approvalId, randomBytes(32).toString('base64url')), // a forged token
        await dismiss(theirs.approvalId, ''),
      ];
      for (const r of refused) {
        assert.equal(r.status, 401, r.text);
        assert.match(r.headers.get('content-type') ?? '', /problem\+json/);
      }
      // Bob's own session cannot dismiss from the dashboard either: a card is allowed or denied.
      const viaDashboard = await bob.client.post(`/api/approvals/${theirs.approvalId}/decision`, { decision: 'dismiss' });
      assert.equal(viaDashboard.status, 422);
      assert.equal((await statusOf(bob.client, theirs.approvalId)).status, 'pending', 'Bob’s approval is untouched');
      assert.equal((await statusOf(alice.client, theirs.approvalId)), undefined, 'and Alice never sees it');

      // Alice's own dismissal counts, once.
      const ok = await dismiss(mine.approvalId, mine.actionToken);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.status, 'dismissed');
      assert.equal(ok.body.decidedBy, 'push');
      const aliceResult = (await aliceCall) as { isError?: boolean; content: Array<{ text: string }> };
      assert.equal(aliceResult.content[0]!.text, DISMISSED);
      const late = await anon.post('/api/push/decision', { approvalId: mine.approvalId, decision: 'allow', token: mine.actionToken });
      assert.equal(late.status, 409);
      assert.equal(late.body.decision.status, 'dismissed');

      // Bob still decides his own.
      const denied = await anon.post('/api/push/decision', { approvalId: theirs.approvalId, decision: 'deny', token: theirs.actionToken });
      assert.equal(denied.status, 200, denied.text);
      const bobResult = (await bobCall) as { content: Array<{ text: string }> };
      assert.match(bobResult.content[0]!.text, /denied/);
    } finally {
      await aliceApp.client.close();
      await bobApp.client.close();
    }
  });
});

describe('clicking the approval’s notification', () => {
  it('opens the call’s own page, through sign-in, where the person allows it and the call runs', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'click');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const device = await subscribeDevice(person, push);
    const { page, cdp, registrationId } = await controlledPage();
    try {
      const ran = hook.calls().length;
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n2' } });
      const payload = await device.payload();
      assert.ok(await showPush(page, cdp, registrationId, payload), 'the worker showed the notification');

      // The person taps the notification's body (no action button).
      await tap(page, payload.approvalId);

      await page.waitForURL(/\/signin$/);
      await signInWhereSent(page, person);
      await page.waitForURL(new RegExp(`/approvals/${payload.approvalId}$`));
      const card = page.locator(`[data-approval-id="${payload.approvalId}"]`);
      await card.getByRole('button', { name: 'Allow' }).click();

      const result = (await calling) as { isError?: boolean; content: Array<{ type: string; text: string }> };
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.deepEqual(result.content, [{ type: 'text', text: 'Deleted n2.' }]);
      assert.equal(hook.calls().length, ran + 1);
      await page.locator('[data-outcome="allowed"]').waitFor();
      await cdp.detach();
    } finally {
      await page.context().close();
      await app.client.close();
    }
  });
  it('is replaced, once an allowed call did not run, by a notification that only informs and opens the call (#43)', async () => {
    const down = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
    down.onConfirm(() => ({ confirm: { message: 'Delete this note?', style: 'destructive' } }));
    const person = await personWithNotes(tp.url, down, { delete_note: true }, 'after-allow');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const device = await subscribeDevice(person, push);
    const { page, cdp, registrationId } = await controlledPage();
    try {
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n3' } });
      const asked = await device.payload();
      assert.ok(await showPush(page, cdp, registrationId, asked), 'the worker showed the approval');
      // The add-on goes down; the person taps Allow in the notification.
      await down.close();
      await tap(page, asked.approvalId, 'allow');
      assert.equal(((await calling) as { isError?: boolean }).isError, true);

      const told = await device.payload(2);
      const shown = await showPush(page, cdp, registrationId, told);
      assert.deepEqual(shown, { title: '“Delete a note” did not run', body: 'You allowed it · the add-on could not be reached, so it did not run.' });
      const actions = await page.evaluate(async (tag) => {
        const reg = await navigator.serviceWorker.ready;
        return (await reg.getNotifications({ tag })).map((n) => ((n as unknown as { actions?: unknown[] }).actions ?? []).length);
      }, told.approvalId);
      assert.deepEqual(actions, [0], 'one notification, in the approval’s place, with nothing to answer');

      // Tapping it opens the call's own page, through sign-in.
      await tap(page, told.approvalId);
      await page.waitForURL(/\/signin$/);
      await signInWhereSent(page, person);
      await page.waitForURL(new RegExp(`/calls/${told.callId}$`));
      await page.locator('[data-call-page][data-state="ended"] [data-came="no"]').waitFor();
      await cdp.detach();
    } finally {
      await page.context().close();
      await app.client.close();
    }
  });
});
