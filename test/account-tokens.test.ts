// Issue #26, connected accounts on the call path: a tool that names a provider in its `accounts`
// gets the person's fresh access token in each delivery (and only that tool), renewed at the
// provider when it expires soon, one renewal at a time across processes; a call whose account is
// missing or refused answers with the link to connect it (and, for an app that declared URL-mode
// elicitation, offers that link), before anyone is asked. Against a real OAuth provider
// (oidc-provider, rotating refresh tokens: a second renewal with a consumed one revokes the grant),
// with the account connected in Chromium. On Postgres + Redis two Toolport servers share the work.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { ADDONS_CHANNEL } from '@toolport/core';
import { connectedAccounts } from '../packages/core/src/db/schema/index';
import { openAccountTokens } from '../packages/core/src/installs/connected-accounts';
import { captureLog } from './helpers/log';
import { until } from './helpers/wait';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import type { Client } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { accountOf, accountsCallbackOf, connectInBrowser, personWithAccount, startOAuthProvider, type OAuthProvider } from './helpers/oauth-provider';
import { createBacking, TARGET, startToolport, type Backing, type Toolport } from './helpers/target';

/** The provider's access tokens live 5 minutes: one is renewed in its last minute. */
const TOKEN_TTL_S = 300;
/** How far the servers' clocks move to put a fresh token in its last minute (less than Toolport's own 10-minute access tokens). */
const INTO_LAST_MINUTE_MS = (TOKEN_TTL_S - 50) * 1000;

let backing: Backing;
/** The server people connect on; `other` shares its database and Redis (on Postgres + Redis, another server). */
let tp: Toolport;
let other: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let provider: OAuthProvider;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let junk: Awaited<ReturnType<typeof startTokenEndpointProxy>>;
const { log, logged } = captureLog();
/** Every token the test saw: none may be in a log line, an answer or the call log. */
const tokens = new Set<string>();

before(async () => {
  backing = await createBacking({ label: 'tp_acct_tokens' });
  tp = await startToolport({ backing, keepBacking: true, log });
  // The same deployment behind another port: the same public URL, so an app's token is good at both.
  other = TARGET === 'services' ? await startToolport({ backing, keepBacking: true, log, env: { PUBLIC_URL: tp.url } }) : tp;
  [hook, provider, { browser, close: closeBrowser }, junk] = await Promise.all([
    startAddonServer({
      // The add-on uses the token it was sent at the provider, as a real one would.
      search_notes: async (b) => {
        const token = b.accounts?.notes_cloud?.accessToken;
        if (typeof token !== 'string') return { error: 'no account' };
        const me = await provider.userinfo(token);
        return me.status === 200 ? { text: `notes of ${me.body.sub}` } : { error: `the provider answered ${me.status}` };
      },
      add_note: () => ({ text: 'added' }),
      delete_note: () => ({ text: 'deleted' }),
    }),
    startOAuthProvider({ redirectUri: accountsCallbackOf(tp.url), accessTokenTtlSeconds: TOKEN_TTL_S }),
    launchBrowser(),
    startTokenEndpointProxy(),
  ]);
});
after(async () => {
  await closeBrowser?.();
  for (const c of closing) await c.close();
  await junk?.close();
  await provider?.close();
  await hook?.close();
  if (other !== tp) await other?.stop();
  await tp?.stop();
  await backing?.drop();
});

/**
 * The provider's token endpoint as the add-on declares it, passed through to the real one (after
 * `delayMs`: with 300 ms, calls arriving together at two servers surely overlap one renewal), or
 * (as a provider that broke does) answering a web page, or hanging up before it answers. `hits`
 * counts every request; the provider still answers, and counts, every one passed through.
 */
async function startTokenEndpointProxy(delayMs = 0) {
  const state = { mode: 'pass' as 'pass' | 'junk' | 'hang-up', hits: 0 };
  const server: Server = createServer((req, res) => {
    state.hits++;
    if (state.mode === 'junk') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Welcome!</html>');
    if (state.mode === 'hang-up') return void req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      const answer = await fetch(provider.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type']), authorization: String(req.headers.authorization ?? ''), accept: 'application/json' },
        body: Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
    state,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

type Person = Awaited<ReturnType<typeof personWithAccount>>;

/** Notes with the account declared; search_notes and delete_note need it, add_note does not. */
async function notesPerson(tokenUrl?: string): Promise<Person> {
  const person = await personWithAccount(tp.url, hook, provider, {
    tools: { search_notes: true, add_note: true, delete_note: true },
    toolAccounts: true,
    edit: (a) => tokenUrl && (a.tokenUrl = tokenUrl),
  });
  // add_note needs no account: a release takes it off that tool.
  const res = await person.dev.client.put(`/api/addons/${person.addonId}`, manifestOf(person, tokenUrl));
  assert.equal(res.status, 200, res.text);
  return person;
}

/** The add-on's manifest as notesPerson registers it, the account's token URL replaced if given. */
function manifestOf(person: Person, tokenUrl?: string) {
  const account = accountOf(provider, 'notes_cloud');
  if (tokenUrl) account.tokenUrl = tokenUrl;
  const m = notesManifest(person.addonId, hook.url, { visibility: 'public', accounts: [account] });
  for (const t of m.tools) if (t.name !== 'add_note') (t as Record<string, unknown>).accounts = ['notes_cloud'];
  return m;
}

/** The person presses Connect and goes through the provider's login and consent in Chromium. */
async function connectAccount(person: Person, login: string) {
  const res = await person.client.post(`/api/installs/${person.addonId}/accounts/notes_cloud/connect`, {});
  assert.equal(res.status, 200, res.text);
  const context = await browser.newContext();
  const session = person.client.cookies.get('tp_session');
  assert.ok(session, 'the person has a session');
  await context.addCookies([{ name: 'tp_session', value: session, url: tp.url }]);
  const landed = await connectInBrowser(await context.newPage(), res.body.authorizationUrl, login);
  await context.close();
  assert.equal(landed.pathname, `/addons/${person.addonId}`);
  assert.equal(landed.searchParams.get('connected'), 'notes_cloud');
  const stored = await storedTokens(person);
  tokens.add(stored.accessToken);
  if (stored.refreshToken) tokens.add(stored.refreshToken);
  return stored;
}

async function rowOf(person: Person) {
  const [row] = await tp.svc.db
    .select()
    .from(connectedAccounts)
    .where(and(eq(connectedAccounts.userId, person.user.id), eq(connectedAccounts.addonId, person.addonId)));
  return row;
}
async function storedTokens(person: Person) {
  const row = await rowOf(person);
  assert.ok(row, 'the account is stored');
  return openAccountTokens(tp.svc, row);
}

/** An app of the person's, and a raw tools/call at either server with its bearer token. */
async function appOf(person: Person) {
  const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  const path = new URL(person.user.mcpUrl).pathname;
  let rpc = 0;
  const call = async (tool: string, at: Toolport = tp, args: Record<string, unknown> = {}) => {
    // At that server's own port (both have the deployment's one public URL).
    const res = await fetch(`http://127.0.0.1:${at.config.port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${app.provider.saved!.access_token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: `${person.addonId}__${tool}`, arguments: args } }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    for (const t of tokens) assert.ok(!text.includes(t), 'no token in an answer');
    const result = (await JSON.parse(text)).result as { content: Array<{ text: string }>; isError?: boolean };
    return { text: result.content.map((b) => b.text).join('\n'), isError: result.isError ?? false };
  };
  return { ...app, call };
}

/** The provider's token endpoint, as often as it was asked (the code exchange and every renewal). */
const tokenRequests = () => provider.requests.filter((r) => r.method === 'POST' && r.path === '/token').length;

/** Both servers' clocks `ms` ahead while `run` runs. */
async function later<T>(ms: number, run: () => Promise<T>): Promise<T> {
  const servers = [...new Set([tp, other])];
  const clocks = servers.map((s) => s.svc.clock);
  for (const s of servers) s.svc.clock = { now: () => new Date(Date.now() + ms) };
  try {
    return await run();
  } finally {
    servers.forEach((s, i) => (s.svc.clock = clocks[i]!));
  }
}

const deliveredTokens = (person: Person, since: number) =>
  hook.calls().slice(since).filter((d) => d.body.addon === person.addonId).map((d) => d.body.accounts?.notes_cloud?.accessToken as string | undefined);

async function accountView(person: Person) {
  const res = await person.client.get(`/api/installs/${person.addonId}/accounts`);
  assert.equal(res.status, 200, res.text);
  return res.body[0] as { connected: boolean; status: string | null; failure: string | null; refreshedAt: string | null };
}

async function loggedCall(person: { client: Client }, addonId: string, tool: string) {
  const res = await person.client.get('/api/calls');
  assert.equal(res.status, 200, res.text);
  // Newest first: the last call of that tool.
  return (res.body.items as Array<{ addon: string; tool: string; outcome: string; detail: string | null }>).find((c) => c.addon === addonId && c.tool === tool)!;
}

/** No token the test saw is in a log line of either server or in the call log. */
async function noTokenLogged() {
  assert.ok(tokens.size > 0);
  for (const t of tokens) for (const l of logged) assert.ok(!l.includes(t), `a log line carries a token: ${l.slice(0, 200)}`);
  await tp.svc.logs.flushed();
  if (other !== tp) await other.svc.logs.flushed();
  const text = JSON.stringify(await tp.svc.db.execute(sql`select * from calls`));
  for (const t of tokens) assert.ok(!text.includes(t), 'the call log carries no token');
}

/** Servers a test started, closed after the file even when it failed. */
const closing: Array<{ close(): Promise<void> }> = [];

const link = (person: Person) => `${tp.url}/addons/${person.addonId}?connect=notes_cloud`;

describe('a tool’s connected account on the call path', () => {
  it('not connected: the call answers with a sentence and the link, before anyone is asked; nothing is delivered', async () => {
    const person = await notesPerson();
    const app = await appOf(person);
    const before = hook.received.length;
    for (const tool of ['search_notes', 'delete_note']) {
      const r = await app.call(tool, tp, tool === 'delete_note' ? { id: 'n1' } : {});
      assert.equal(r.isError, true);
      assert.equal(r.text, `The add-on "Notes" needs a Notes Cloud account before it can run, and none is connected. Connect one in Toolport: ${link(person)}`);
    }
    assert.equal(hook.received.length, before, 'nothing reached the add-on, not even tool.confirm');
    const approvals = await person.client.get('/api/approvals?status=pending');
    assert.deepEqual(approvals.body, [], 'nobody was asked');
    // A tool of the add-on that needs no account runs as ever, and carries none.
    const added = await app.call('add_note', tp, { text: 'hello' });
    assert.deepEqual(added, { text: 'added', isError: false });
    assert.equal('accounts' in hook.calls().at(-1)!.body, false, 'a tool that needs no account gets no `accounts`');
    const logged = await loggedCall(person, person.addonId, 'search_notes');
    assert.equal(logged.outcome, 'needs_setup');
    assert.equal(logged.detail, 'account notes_cloud: not connected');
    await app.client.close();
  });

  it('connected in Chromium: the token delivered works at the provider; renewed once in its last minute, then the new one is sent', async () => {
    const person = await notesPerson();
    const first = await connectAccount(person, 'alice');
    const app = await appOf(person);
    const exchanges = tokenRequests();
    const since = hook.calls().length;

    assert.deepEqual(await app.call('search_notes'), { text: 'notes of alice', isError: false });
    const [sent] = deliveredTokens(person, since);
    assert.equal(sent, first.accessToken, 'a fresh token is sent as stored');
    assert.deepEqual(Object.keys(hook.calls().at(-1)!.body.accounts), ['notes_cloud'], 'only the tool’s own provider');
    assert.equal(tokenRequests(), exchanges, 'no renewal while the token has more than a minute left');
    assert.equal((await accountView(person)).refreshedAt, null);

    const renewed = await later(INTO_LAST_MINUTE_MS, async () => {
      assert.deepEqual(await app.call('search_notes'), { text: 'notes of alice', isError: false });
      assert.equal(tokenRequests(), exchanges + 1, 'renewed once at the provider');
      const stored = await storedTokens(person);
      tokens.add(stored.accessToken);
      if (stored.refreshToken) tokens.add(stored.refreshToken);
      // The renewed token lives a whole TTL from now: the next call sends it as it is.
      assert.deepEqual(await app.call('search_notes'), { text: 'notes of alice', isError: false });
      assert.equal(tokenRequests(), exchanges + 1, 'not renewed again');
      return stored;
    });
    const [, second, third] = deliveredTokens(person, since);
    assert.notEqual(second, first.accessToken, 'the renewed token was sent');
    assert.equal(second, renewed.accessToken);
    assert.equal(third, renewed.accessToken);
    assert.notEqual(renewed.refreshToken, first.refreshToken, 'the provider rotated the refresh token and Toolport kept the new one');
    const view = await accountView(person);
    assert.equal(view.status, 'connected');
    assert.ok(view.refreshedAt && Date.parse(view.refreshedAt) > Date.now(), 'refreshedAt is the (moved) server time of the renewal');
    await noTokenLogged();
    await app.client.close();
  });

  it(`renews once when ${TARGET === 'services' ? 'two servers' : 'one server'} get 8 calls at once in the token’s last minute`, async () => {
    const slow = await startTokenEndpointProxy(300);
    closing.push(slow);
    const person = await notesPerson(slow.url);
    const first = await connectAccount(person, 'bob');
    const app = await appOf(person);
    // Each server has the person's tools at hand, so the calls below reach the renewal together.
    for (const at of [tp, other]) assert.deepEqual(await app.call('search_notes', at), { text: 'notes of bob', isError: false });
    if (other !== tp) assert.notEqual(other.config.port, tp.config.port, 'two servers');
    const exchanges = tokenRequests();
    const since = hook.calls().length;
    const results = await later(INTO_LAST_MINUTE_MS, () =>
      Promise.all(Array.from({ length: 8 }, (_, i) => app.call('search_notes', i % 2 ? other : tp))),
    );
    assert.deepEqual(results, Array.from({ length: 8 }, () => ({ text: 'notes of bob', isError: false })));
    // With rotating refresh tokens a second renewal would have sent a consumed one, and the provider would have revoked the grant.
    assert.equal(tokenRequests(), exchanges + 1, 'one renewal at the provider for all eight calls');
    const sent = new Set(deliveredTokens(person, since));
    const now = await storedTokens(person);
    tokens.add(now.accessToken);
    if (now.refreshToken) tokens.add(now.refreshToken);
    assert.deepEqual([...sent], [now.accessToken], 'every call carried the one renewed token');
    assert.notEqual(now.accessToken, first.accessToken);
    assert.equal((await provider.userinfo(now.accessToken)).status, 200, 'the grant is intact at the provider');
    const row = await rowOf(person);
    assert.equal(row!.status, 'connected');
    assert.equal(row!.refreshLeaseUntil, null, 'the lease was let go');
    await noTokenLogged();
    await app.client.close();
  });

  it('a refresh token revoked at the provider: the call answers with the reconnect link, and the account shows failed', async () => {
    const person = await notesPerson();
    const { refreshToken } = await connectAccount(person, 'carol');
    assert.ok(refreshToken);
    // The person (or the provider) revokes Toolport's access at the provider (RFC 7009, as the client).
    const revoked = await fetch(provider.revocationUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${provider.clientId}:${provider.clientSecret}`).toString('base64')}` },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }),
    });
    assert.equal(revoked.status, 200);
    const app = await appOf(person);
    const before = hook.received.length;
    const sentence = `The add-on "Notes" can no longer use the Notes Cloud account: Notes Cloud no longer accepts Toolport's access to this account (it answered invalid_grant when asked to renew it). Connect it again in Toolport: ${link(person)}`;
    await later(INTO_LAST_MINUTE_MS, async () => {
      assert.deepEqual(await app.call('search_notes'), { text: sentence, isError: true });
      const asked = tokenRequests();
      // From now on the call answers at once, before anyone is asked, and the provider is not asked again.
      assert.deepEqual(await app.call('delete_note', other, { id: 'n1' }), { text: sentence, isError: true });
      assert.equal(tokenRequests(), asked);
    });
    assert.equal(hook.received.length, before, 'nothing reached the add-on');
    const view = await accountView(person);
    assert.equal(view.status, 'failed');
    assert.equal(view.failure, "Notes Cloud no longer accepts Toolport's access to this account (it answered invalid_grant when asked to renew it).");
    assert.equal((await loggedCall(person, person.addonId, 'search_notes')).detail, 'account notes_cloud: failed');
    await noTokenLogged();
    await app.client.close();
  });

  it('a provider that answers garbage or hangs up fails the call with a sentence; the account stays connected', async () => {
    junk.state.mode = 'pass';
    const person = await notesPerson(junk.url);
    await connectAccount(person, 'dave');
    const app = await appOf(person);
    const exchanges = tokenRequests();
    try {
      junk.state.mode = 'junk';
      assert.deepEqual(await later(INTO_LAST_MINUTE_MS, () => app.call('search_notes')), {
        text: "The call did not run: Toolport could not renew its access to the Notes Cloud account. Notes Cloud answered with something that is not a token answer (neither JSON nor a form). Tell the add-on's developer.",
        isError: true,
      });
      junk.state.mode = 'hang-up';
      const hungUp = await later(INTO_LAST_MINUTE_MS, () => app.call('search_notes'));
      assert.equal(hungUp.isError, true);
      assert.match(hungUp.text, /^The call did not run: Toolport could not renew its access to the Notes Cloud account\. .*Notes Cloud.*Try again later\.$/);
      const view = await accountView(person);
      assert.deepEqual([view.status, view.failure], ['connected', null], 'not marked failed');
      // The endpoint answering again, the next call renews and runs.
      junk.state.mode = 'pass';
      assert.deepEqual(await later(INTO_LAST_MINUTE_MS, () => app.call('search_notes')), { text: 'notes of dave', isError: false });
      assert.equal(tokenRequests(), exchanges + 1, 'the provider itself was asked once');
      assert.equal((await loggedCall(person, person.addonId, 'search_notes')).outcome, 'ok');
      await noTokenLogged();
    } finally {
      junk.state.mode = 'pass';
      await app.client.close();
    }
  });

  it('a release that moves the token endpoint: the refresh token is not sent there, and the account needs reconnecting', async () => {
    const person = await notesPerson();
    await connectAccount(person, 'erin');
    const app = await appOf(person);
    let heard!: () => void;
    const announced = new Promise<void>((r) => (heard = r));
    const off = await tp.svc.bus.subscribe(ADDONS_CHANNEL, (m) => (m as { addonId?: string }).addonId === person.addonId && heard());
    junk.state.mode = 'junk';
    const hits = junk.state.hits;
    try {
      const res = await person.dev.client.put(`/api/addons/${person.addonId}`, manifestOf(person, junk.url));
      assert.equal(res.status, 200, res.text);
      await announced;
      const answer = await later(INTO_LAST_MINUTE_MS, () => app.call('search_notes'));
      assert.deepEqual(answer, {
        text: `The add-on "Notes" can no longer use the Notes Cloud account: Notes now renews Notes Cloud access at another address than when you connected it, so Toolport stopped using this connection. Connect it again in Toolport: ${link(person)}`,
        isError: true,
      });
      assert.equal(junk.state.hits, hits, 'nothing was sent to the new address');
      assert.equal((await accountView(person)).status, 'failed');
      await noTokenLogged();
    } finally {
      await off();
      junk.state.mode = 'pass';
      await app.client.close();
    }
  });

  it('the developer has not set the provider up: the call says so, offers no link the person could not use, delivers nothing', async () => {
    const person = await notesPerson();
    const removed = await person.dev.client.delete(`/api/addons/${person.addonId}/accounts/notes_cloud/client`);
    assert.equal(removed.status, 204, removed.text);
    const elicitations: unknown[] = [];
    const app = await connectApp(person.user.mcpUrl, person.client, {
      name: 'Claude',
      provider: new TestOAuthProvider('Claude'),
      capabilities: { elicitation: { url: {} } },
      prepare: (client) => client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicitations.push(req.params);
        return { action: 'accept' };
      }),
    });
    const before = hook.received.length;
    const result = (await app.client.callTool({ name: `${person.addonId}__search_notes`, arguments: {} })) as { content: Array<{ text: string }>; isError?: boolean };
    assert.equal(result.isError, true);
    assert.equal(
      result.content[0]!.text,
      'The add-on "Notes" needs a Notes Cloud account, and its developer has not set up connecting one yet, so the call did not run. Try again later.',
    );
    assert.deepEqual(elicitations, [], 'no link to a Connect button that is switched off');
    assert.equal(hook.received.length, before, 'nothing reached the add-on');
    const logged = await loggedCall(person, person.addonId, 'search_notes');
    assert.equal(logged.outcome, 'needs_setup');
    assert.equal(logged.detail, 'account notes_cloud: not set up by its developer');
    await app.client.close();
  });

  it('an app that declared URL elicitation is offered the connect link; its "accept" connects nothing', async () => {
    const person = await notesPerson();
    const elicitations: Array<{ mode?: string; elicitationId?: string; url?: string; message: string }> = [];
    const answers: Array<{ body: any; status: number }> = [];
    const app = await connectApp(person.user.mcpUrl, person.client, {
      name: 'Claude',
      provider: new TestOAuthProvider('Claude'),
      capabilities: { elicitation: { url: {} } },
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
        if (body?.jsonrpc === '2.0' && !('method' in body)) answers.push({ body, status: res.status });
        return res;
      },
      prepare: (client) => client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicitations.push(req.params as (typeof elicitations)[number]);
        return { action: 'accept' };
      }),
    });
    const result = (await app.client.callTool({ name: `${person.addonId}__search_notes`, arguments: {} })) as { content: Array<{ text: string }>; isError?: boolean };
    assert.equal(result.isError, true);
    assert.equal(result.content[0]!.text, `The add-on "Notes" needs a Notes Cloud account before it can run, and none is connected. Connect one in Toolport: ${link(person)}`);
    assert.equal(elicitations.length, 1);
    const [e] = elicitations;
    assert.equal(e!.mode, 'url');
    assert.equal(e!.url, link(person));
    assert.match(e!.elicitationId ?? '', /^con_[A-Za-z0-9_-]+$/);
    assert.match(e!.message, /Notes needs your Notes Cloud account/);
    const answered = await until('the app’s answer', () => answers[0], 10_000);
    assert.equal(answered.status, 202, 'the app’s answer is taken');
    assert.deepEqual(answered.body.result, { action: 'accept' });
    assert.equal((await accountView(person)).connected, false, 'the app’s accept connected nothing');
    // A made-up id under that prefix is refused; nothing is connected either way.
    const forged = await fetch(person.user.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${app.provider.saved!.access_token}`, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'toolport-account:apr_x', result: { action: 'accept' } }),
    });
    assert.equal(forged.status, 400);
    await app.client.close();
  });
});

