// Issue #25, in-app approval: an app that declared URL-mode elicitation (MCP 2025-11-25) is offered
// the call's own approval page; its own answer never approves; the person decides on the page (or
// anywhere else), with an optional reason for a deny that reaches the model. Also across processes.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { stillWaiting, until } from './helpers/wait';
import { spawnToolport } from './helpers/process';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, watchErrors } from './helpers/browser';
import { axeSerious, dashboardAs, sidewaysScroll, signInWhereSent } from './helpers/dashboard';
import type { Client } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { createBacking, freePort, startToolport, TARGET, type Backing, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: async (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, info: [{ name: 'Note', value: b.arguments.id }], style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

type Answer = 'accept' | 'accept-content' | 'decline' | 'cancel';
const RESULTS: Record<Answer, ElicitResult> = {
  accept: { action: 'accept' },
  // An app that answers "accept" with content, as if it had filled in a form: still nothing.
  'accept-content': { action: 'accept', content: { approved: true, decision: 'allow' } },
  decline: { action: 'decline' },
  cancel: { action: 'cancel' },
};

interface Elicited { mode?: string; elicitationId?: string; url?: string; message: string }

/**
 * An SDK v1 app declaring URL-mode elicitation, which answers every elicitation with `answer`.
 * `route` may send a POST elsewhere (another API process) by what it carries.
 */
async function inAppApp(
  mcpUrl: string,
  person: Client,
  answer: Answer,
  opts: { name?: string; provider?: TestOAuthProvider; route?: (body: any) => string | undefined } = {},
) {
  const elicitations: Elicited[] = [];
  const completed: string[] = [];
  /** The app's POSTs of responses (its elicitation answers), with what Toolport answered. */
  const answers: Array<{ body: any; status: number; text: string }> = [];
  const fetchVia = async (url: string | URL, init?: RequestInit) => {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    const to = (body && opts.route?.(body)) ?? url;
    const res = await fetch(to, init);
    if (body?.jsonrpc === '2.0' && !('method' in body)) answers.push({ body, status: res.status, text: await res.clone().text() });
    return res;
  };
  const app = await connectApp(mcpUrl, person, {
    name: opts.name ?? 'Claude',
    provider: opts.provider,
    capabilities: { elicitation: { url: {} } },
    fetch: fetchVia,
    prepare: (client) => {
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicitations.push(req.params as Elicited);
        return RESULTS[answer];
      });
      client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
        completed.push(n.params.elicitationId);
      });
    },
  });
  return { ...app, elicitations, completed, answers };
}

const textOf = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join('\n');

describe('in-app approval by URL elicitation', () => {
  it('offers the call’s page; the app’s accept (with content) approves nothing; the person allows on the page; the call completes', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const app = await inAppApp(person.user.mcpUrl, person.client, 'accept-content');
    const before = hook.calls().length;
    const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
    const e = await until('the elicitation', () => app.elicitations[0]);
    assert.equal(e.mode, 'url');
    assert.match(e.elicitationId ?? '', /^apr_/);
    assert.equal(e.url, `${tp.url}/approvals/${e.elicitationId}`);
    assert.match(e.message, /Delete a note/);
    assert.match(e.message, /Notes/);

    const answered = await until('the app’s answer', () => app.answers[0]);
    assert.equal(answered.status, 202, answered.text);
    assert.deepEqual(answered.body.result, RESULTS['accept-content']);
    await stillWaiting(call);
    const row = await person.client.get(`/api/approvals/${e.elicitationId}`);
    assert.equal(row.status, 200, row.text);
    assert.equal(row.body.status, 'pending', 'the app’s accept decided nothing');
    assert.equal(hook.calls().length, before, 'nothing ran on the app’s accept');

    // No other page (the app's own, say) can frame it and steer the person's click.
    const served = await fetch(e.url!, { headers: { accept: 'text/html' } });
    assert.match(served.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    const tab = await dashboardAs(browser, tp.url, person.client, 'phone');
    try {
      await tab.page.goto(e.url!);
      const card = tab.page.locator(`[data-approval-id="${e.elicitationId}"]`);
      await card.waitFor();
      assert.equal((await card.getByRole('heading', { level: 2 }).textContent())?.trim(), 'Claude wants to run Delete a note · Notes');
      assert.match((await card.locator('.args').textContent()) ?? '', /id\s*n1/);
      await card.getByText('Delete the note n1?').waitFor();
      assert.ok(Number(await card.locator('.countdown').getAttribute('data-seconds')) > 0, 'time left is shown');
      const viewport = await sidewaysScroll(tab.page);
      assert.ok(viewport.scrollWidth <= viewport.clientWidth, `no sideways scroll on a phone: ${JSON.stringify(viewport)}`);
      assert.deepEqual(await axeSerious(tab.page), [], 'axe: the pending page');
      await card.getByRole('button', { name: 'Allow' }).click();
      const result = await call;
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(textOf(result), 'Deleted n1.');
      await tab.page.locator('[data-outcome="allowed"]').waitFor();
      assert.deepEqual(await axeSerious(tab.page), [], 'axe: the decided page');
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
    await until('the completion notification', () => app.completed.includes(e.elicitationId!));
    assert.equal(hook.calls().length, before + 1);
    const log = (await person.client.get('/api/calls')).body.items[0];
    assert.equal(log.outcome, 'ok');
    assert.equal(log.decidedBy, 'dashboard');
    await app.client.close();
  });

  for (const answer of ['decline', 'cancel'] as const) {
    it(`an app that answers ${answer} ends its call as cancelled by the app, and nothing is delivered`, async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
      const app = await inAppApp(person.user.mcpUrl, person.client, answer);
      const before = hook.calls().length;
      const result: any = await app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n2' } });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /declined or cancelled in the app/);
      const id = app.elicitations[0]!.elicitationId!;
      // The app's answer may reach it after the call's result: its 202 and the result race.
      assert.equal((await until('the app’s answer', () => app.answers[0])).status, 202);
      assert.ok(await until('completion', () => app.completed.includes(id)));
      const row = (await person.client.get(`/api/approvals/${id}`)).body;
      assert.equal(row.status, 'cancelled');
      assert.equal(row.decidedBy, 'app');
      const late = await person.client.post(`/api/approvals/${id}/decision`, { decision: 'allow' });
      assert.equal(late.status, 409, 'exactly one decision: the app’s no');
      assert.equal(hook.calls().length, before, 'nothing delivered');
      await app.client.close();
    });
  }

  it('a person not signed in is sent through sign-in, lands back on the page, denies with a reason, and the model reads it', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const app = await inAppApp(person.user.mcpUrl, person.client, 'accept');
    const before = hook.calls().length;
    const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n3' } });
    const e = await until('the elicitation', () => app.elicitations[0]);
    const ctx = await newContext(browser, tp.url, { width: 390, height: 844 });
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    try {
      await page.goto(e.url!);
      await page.waitForURL(/\/signin$/);
      // The person knows why they are asked to sign in, and that the app will not wait long.
      const why = page.locator('[data-waiting-approval]');
      await why.waitFor();
      assert.match((await why.textContent()) ?? '', /An AI app is waiting for your answer.*no answer in time is no/s);
      await signInWhereSent(page, person);
      await page.waitForURL(new RegExp(`/approvals/${e.elicitationId}$`));
      const card = page.locator(`[data-approval-id="${e.elicitationId}"]`);
      await card.waitFor();
      // Hidden characters are refused with the server's sentence, and nothing is recorded.
      await page.getByLabel(/Reason, if you deny/).fill('Not \u202Ethis\u202C one');
      await card.getByRole('button', { name: 'Deny' }).click();
      await page.locator('#deny-reason-error').waitFor();
      assert.match((await page.locator('#deny-reason-error').textContent()) ?? '', /U\+202E/);
      assert.equal((await person.client.get(`/api/approvals/${e.elicitationId}`)).body.status, 'pending');
      assert.deepEqual(await axeSerious(page), [], 'axe: the refused reason');
      await page.getByLabel(/Reason, if you deny/).fill('  Not this one: it holds my trip plan.  ');
      await card.getByRole('button', { name: 'Deny' }).click();
      const result = await call;
      assert.equal(result.isError, true);
      assert.equal(
        textOf(result),
        'The person denied this call. Their reason: "Not this one: it holds my trip plan.". Do not retry it unless they ask you to.',
      );
      await page.locator('[data-outcome="denied"]').waitFor();
      assert.match((await page.locator('[data-outcome] [data-reason]').textContent()) ?? '', /Not this one: it holds my trip plan\./);
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close();
    }
    assert.equal(hook.calls().length, before, 'a denied call never runs');
    const all = (await person.client.get('/api/approvals?status=all')).body as any[];
    const decided = all.find((a) => a.id === e.elicitationId);
    assert.equal(decided.status, 'denied');
    assert.equal(decided.reason, 'Not this one: it holds my trip plan.', 'the decided list shows the reason, trimmed');
    await app.client.close();
  });

  it('refuses a bad reason with a sentence and records nothing; another person’s page is not found', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const app = await inAppApp(person.user.mcpUrl, person.client, 'accept');
    const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n4' } });
    const id = (await until('the elicitation', () => app.elicitations[0])).elicitationId!;
    const decide = (body: unknown) => person.client.post(`/api/approvals/${id}/decision`, body);
    const cases: Array<[string, unknown, RegExp]> = [
      ['10 KB', { decision: 'deny', reason: 'x'.repeat(10 * 1024) }, /at most 500 characters/],
      ['a newline', { decision: 'deny', reason: 'no\nway' }, /control character \(U\+000A\) at character 3/],
      ['an escape', { decision: 'deny', reason: 'no \u001b[31mway' }, /control character \(U\+001B\)/],
      ['a bidi override', { decision: 'deny', reason: 'abc\u202Edef' }, /U\+202E \(a bidi control\)/],
      ['a zero-width space', { decision: 'deny', reason: 'a\u200Bb' }, /U\+200B/],
      ['a line separator', { decision: 'deny', reason: 'no\u2028way' }, /line or paragraph separator \(U\+2028\) at character 3/],
      ['a paragraph separator', { decision: 'deny', reason: 'no\u2029way' }, /U\+2029/],
      ['not text', { decision: 'deny', reason: 42 }, /reason as text/],
      ['a reason with allow', { decision: 'allow', reason: 'because' }, /A reason goes with a deny only/],
    ];
    for (const [what, body, sentence] of cases) {
      const res = await decide(body);
      assert.equal(res.status, 422, `${what}: ${res.status} ${res.text.slice(0, 200)}`);
      assert.match(res.body.detail, sentence, what);
      assert.equal((await person.client.get(`/api/approvals/${id}`)).body.status, 'pending', `${what}: nothing recorded`);
    }
    const other = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    assert.equal((await other.client.get(`/api/approvals/${id}`)).status, 404);
    const tab = await dashboardAs(browser, tp.url, other.client, 'desktop');
    try {
      await tab.page.goto(`/approvals/${id}`);
      await tab.page.getByRole('heading', { name: 'Approval not found' }).waitFor();
    } finally {
      await tab.close();
    }
    await stillWaiting(call);
    // A reason of exactly 500 characters is taken.
    const ok = await decide({ decision: 'deny', reason: 'é'.repeat(500) });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.reason, 'é'.repeat(500));
    assert.match(textOf(await call), /Their reason: "é{500}"/);
    await app.client.close();
  });

  it('refuses an elicitation answer about another person’s call or another app’s, and a malformed one: nothing changes', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const app = await inAppApp(person.user.mcpUrl, person.client, 'accept');
    const before = hook.calls().length;
    const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n5' } });
    const id = (await until('the elicitation', () => app.elicitations[0])).elicitationId!;
    const post = (mcpUrl: string, token: string, body: unknown) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => undefined) }));
    const decline = { jsonrpc: '2.0', id: `toolport-approval:${id}`, result: { action: 'decline' } };

    const stranger = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const strangerApp = await inAppApp(stranger.user.mcpUrl, stranger.client, 'accept', { name: 'Stranger' });
    const theirs = await post(stranger.user.mcpUrl, strangerApp.provider.saved!.access_token, decline);
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error.code, -32602);
    assert.match(theirs.body.error.message, /No call of this app asked about apr_.*nothing changed/);
    // The person's other app cannot answer for this one either.
    const second = await inAppApp(person.user.mcpUrl, person.client, 'accept', { name: 'Other app' });
    const sibling = await post(person.user.mcpUrl, second.provider.saved!.access_token, decline);
    assert.equal(sibling.status, 404);
    const token = app.provider.saved!.access_token;
    for (const [what, body] of [
      ['no action', { jsonrpc: '2.0', id: `toolport-approval:${id}`, result: {} }],
      ['an unknown action', { jsonrpc: '2.0', id: `toolport-approval:${id}`, result: { action: 'allow' } }],
      ['content that is not an object', { jsonrpc: '2.0', id: `toolport-approval:${id}`, result: { action: 'decline', content: 'yes' } }],
      ['an id naming no approval', { jsonrpc: '2.0', id: 'toolport-approval:../../x', result: { action: 'decline' } }],
    ] as const) {
      const res = await post(person.user.mcpUrl, token, body);
      assert.equal(res.status, 400, what);
      assert.equal(res.body.error.code, -32602, what);
      assert.equal(res.body.id, undefined, `${what}: a JSON-RPC error without an id`);
    }
    // A JSON-RPC error from the app (it could not show the link) changes nothing either.
    const failed = await post(person.user.mcpUrl, token, { jsonrpc: '2.0', id: `toolport-approval:${id}`, error: { code: -32603, message: 'no browser' } });
    assert.equal(failed.status, 202);
    await stillWaiting(call);
    assert.equal((await person.client.get(`/api/approvals/${id}`)).body.status, 'pending', 'nothing changed');
    assert.equal(hook.calls().length, before);
    assert.equal((await person.client.post(`/api/approvals/${id}/decision`, { decision: 'allow' })).status, 200);
    assert.equal(textOf(await call), 'Deleted n5.');
    for (const a of [app, strangerApp, second]) await a.client.close();
  });

  it('a client without URL elicitation (or one that stops declaring it) keeps progress messages, which link the call’s page', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'inapp');
    const provider = new TestOAuthProvider('Claude');
    const declared = await inAppApp(person.user.mcpUrl, person.client, 'accept', { provider });
    await declared.client.close();
    // The same grant initializes again without the capability: the grant forgets it.
    const plain = await connectApp(person.user.mcpUrl, person.client, { provider });
    const progress: string[] = [];
    const call = plain.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n6' } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ''),
    });
    const link = await until('a progress message', () => progress[0]);
    const id = /\/approvals\/(apr_[A-Za-z0-9_-]+)/.exec(link)?.[1];
    assert.ok(id, `the progress message links the call's page: ${link}`);
    assert.ok(link.includes(`${tp.url}/approvals/${id}`));
    assert.deepEqual(declared.elicitations, [], 'no elicitation for a client that no longer declares it');
    assert.equal((await person.client.post(`/api/approvals/${id}/decision`, { decision: 'allow' })).status, 200);
    assert.equal(textOf(await call), 'Deleted n6.');
    await plain.client.close();
  });
});

describe('in-app approval across API processes', { skip: TARGET !== 'services' ? 'needs Postgres + Redis (several processes share them)' : false }, () => {
  let backing: Backing;
  const procs: ChildProcess[] = [];
  let a = '';
  let b = '';

  const spawnApi = (role: 'api' | 'worker', publicUrl: string, port: number) => spawnToolport(procs, { env: backing.env, role, port, publicUrl });

  before(async () => {
    backing = await createBacking();
    const [pa, pb, pw] = [await freePort(), await freePort(), await freePort()];
    a = `http://127.0.0.1:${pa}`;
    b = `http://127.0.0.1:${pb}`;
    await Promise.all([spawnApi('api', a, pa), spawnApi('api', a, pb), spawnApi('worker', a, pw)]);
  });
  after(async () => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    await backing?.drop();
  });

  /** The call is held on B; everything else (initialize, the app's answer, the page) is on A. */
  const route = (mcpUrl: string) => (body: any) => (body?.method === 'tools/call' ? mcpUrl.replace(a, b) : undefined);

  for (const answer of ['accept-content', 'decline'] as const) {
    it(`the call waits on one process; the app’s ${answer} and the person's page are on another`, async () => {
      const person = await personWithNotes(a, hook, { delete_note: true }, 'inapp-mp');
      const app = await inAppApp(person.user.mcpUrl, person.client, answer, { route: route(person.user.mcpUrl) });
      const before = hook.calls().length;
      const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: `mp-${answer}` } });
      const e = await until('the elicitation', () => app.elicitations[0]);
      assert.equal(e.url, `${a}/approvals/${e.elicitationId}`);
      const answered = await until('the app’s answer', () => app.answers[0]);
      assert.equal(answered.status, 202, answered.text);
      if (answer === 'decline') {
        const result: any = await call;
        assert.match(textOf(result), /declined or cancelled in the app/);
        assert.equal((await person.client.get(`/api/approvals/${e.elicitationId}`)).body.status, 'cancelled');
        assert.equal(hook.calls().length, before, 'nothing delivered');
        assert.ok(await until('completion', () => app.completed.includes(e.elicitationId!)));
        await app.client.close();
        return;
      }
      await stillWaiting(call);
      assert.equal((await person.client.get(`/api/approvals/${e.elicitationId}`)).body.status, 'pending');
      const tab = await dashboardAs(browser, a, person.client, 'phone');
      try {
        await tab.page.goto(e.url!);
        const card = tab.page.locator(`[data-approval-id="${e.elicitationId}"]`);
        await card.waitFor();
        await card.getByRole('button', { name: 'Allow' }).click();
        const result = await call;
        assert.equal(textOf(result), `Deleted mp-${answer}.`);
        await tab.page.locator('[data-outcome="allowed"]').waitFor();
      } finally {
        await tab.close();
      }
      assert.ok(await until('completion', () => app.completed.includes(e.elicitationId!)));
      assert.equal(hook.calls().length, before + 1);
      await app.client.close();
    });
  }

  // Issue #39, "any API process can answer for any call": the call's holder dies while the person
  // decides; another process sends the allowed call, once, and the app's retry gets its answer.
  it('the process holding the call is killed; the person allows on the page; another process sends it once; the app’s retry gets the answer', async () => {
    const pc = await freePort();
    const c = `http://127.0.0.1:${pc}`;
    const holder = await spawnApi('api', a, pc);
    const person = await personWithNotes(a, hook, { delete_note: true }, 'inapp-kill');
    let callsGoTo = c;
    const app = await inAppApp(person.user.mcpUrl, person.client, 'accept', { route: (body) => (body?.method === 'tools/call' ? person.user.mcpUrl.replace(a, callsGoTo) : undefined) });
    const noteId = `killed-${Date.now()}`;
    const sent = () => hook.calls().filter((d) => d.body.arguments?.id === noteId);
    // Its answer never comes: the process holding it dies (the SDK then waits on a stream it reopens elsewhere).
    const first = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: noteId } }).then(
      () => 'answered',
      () => 'lost',
    );
    const e = await until('the elicitation', () => app.elicitations[0]);
    holder.kill('SIGKILL');

    const tab = await dashboardAs(browser, a, person.client, 'desktop');
    try {
      await tab.page.goto(e.url!);
      const card = tab.page.locator(`[data-approval-id="${e.elicitationId}"]`);
      await card.waitFor();
      await card.getByRole('button', { name: 'Allow' }).click();
      await tab.page.locator('[data-outcome="allowed"]').waitFor();
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
    // Once the holder's lease lapses (10 s), a live process's sweep takes the call over.
    await until('the allowed call reached the add-on', () => sent().length > 0, 30_000);

    callsGoTo = b;
    const retry: any = await app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
    assert.match(textOf(retry), /This app made this exact call \d+ seconds ago; Toolport did not run it or ask the person again/);
    assert.match(textOf(retry), new RegExp(`Deleted ${noteId}\\.`));
    assert.equal(sent().length, 1, 'sent once, by the process that took it over');
    assert.equal(app.elicitations.length, 1, 'the person was asked once');
    const row = await person.client.get(`/api/approvals/${e.elicitationId}`);
    assert.equal(row.body.status, 'allowed');
    await app.client.close();
    assert.equal(await first, 'lost');
  });
});
