// Issue #26, connected accounts, the person's side: the person connects an account at a provider
// the add-on declares, in Chromium, against a real OAuth provider (oidc-provider, with its own login
// and consent pages), by the authorization-code flow with PKCE and `state`; the tokens are sealed
// at rest; disconnecting (and uninstalling) revokes them at the provider. Every bad callback and
// every bad token endpoint is refused with a sentence, stores nothing, and quotes no code or token.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { and, eq } from 'drizzle-orm';
import type { Browser, Page } from 'playwright-core';
import { accountLinkStates, connectedAccounts } from '../packages/core/src/db/schema/index';
import { openAccountTokens } from '../packages/core/src/installs/connected-accounts';
import { captureLog } from './helpers/log';
import { startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import { Client } from './helpers/http';
import { accountsCallbackOf, connectInBrowser, personWithAccount, startOAuthProvider, type OAuthProvider } from './helpers/oauth-provider';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let provider: OAuthProvider;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let bad: { url: string; hits: string[]; close(): Promise<void> };
const { log, logged } = captureLog();
/** Every token, code and secret the test saw: none may be in a log line or a page. */
const secrets = new Set<string>();

type Person = Awaited<ReturnType<typeof personWithAccount>>;

/**
 * A token endpoint that answers wrong, one way per path: what a broken or hostile provider does.
 * `/echo` repeats what it was sent in its error description.
 */
async function startBadTokenEndpoint() {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      hits.push(path);
      const sent = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      switch (path) {
        case '/garbage':
          return res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome!</body></html>');
        case '/redirect':
          return res.writeHead(302, { location: provider.tokenUrl }).end();
        case '/no-token':
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token_type: 'bearer', expires_in: 3600 }));
        case '/mac':
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'tok-mac-123456789', token_type: 'mac' }));
        case '/echo':
          return res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: 'invalid_grant', error_description: `the code ${sent.get('code')} with verifier ${sent.get('code_verifier')} is \u202eno good\n` }));
        case '/huge':
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'x'.repeat(100_000) }));
        case '/broken':
          return res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
        case '/slow':
          return; // never answers
        default:
          return res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

before(async () => {
  tp = await startToolport({ log });
  [hook, provider, { browser, close: closeBrowser }, bad] = await Promise.all([
    startAddonServer({ search_notes: () => ({ text: 'none' }) }),
    startOAuthProvider({ redirectUri: accountsCallbackOf(tp.url) }),
    launchBrowser(),
    startBadTokenEndpoint(),
  ]);
  secrets.add(provider.clientSecret);
});
after(async () => {
  await closeBrowser?.();
  await bad?.close();
  await provider?.close();
  await hook?.close();
  await tp?.stop();
});

/** A Chromium tab signed in to Toolport as `person` (their session cookie), as after signing in on the dashboard. */
async function tabOf(person: { client: Client }): Promise<Page> {
  const context = await browser.newContext();
  const value = person.client.cookies.get('tp_session');
  assert.ok(value, 'the person has a session');
  await context.addCookies([{ name: 'tp_session', value, url: tp.url }]);
  return context.newPage();
}

/** The person presses Connect (what the dashboard's button posts) and gets the provider's URL. */
async function pressConnect(person: Person): Promise<URL> {
  const res = await person.client.post(`/api/installs/${person.addonId}/accounts/${person.provider}/connect`, {});
  assert.equal(res.status, 200, res.text);
  return new URL(res.body.authorizationUrl);
}

/**
 * Through the provider's login and consent in Chromium, in a browser NOT signed in to Toolport: the
 * callback refuses it (and keeps the state), so the test holds the callback URL, with its code, to
 * send in any session. The tab shows the sign-in sentence.
 */
async function callbackUrlFor(person: Person, login = 'bob'): Promise<string> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const landed = await connectInBrowser(page, (await pressConnect(person)).href, login);
  assert.equal(landed.pathname, cbPath(person));
  assert.equal(await page.locator('p.error').textContent(), 'Sign in to Toolport with the account that pressed Connect, then press Connect again.');
  await context.close();
  secrets.add(landed.searchParams.get('code')!);
  return landed.href;
}

/** The callback fetched with `cookie` (or none): its status, page sentence and where it redirects. */
async function callback(url: string, person?: { client: Client }) {
  const value = person?.client.cookies.get('tp_session');
  const res = await fetch(url, { redirect: 'manual', headers: value ? { cookie: `tp_session=${value}`, accept: 'text/html' } : { accept: 'text/html' } });
  const text = await res.text();
  const sentence = /<p class="error">([^<]*)<\/p>/.exec(text)?.[1]?.replace(/&#39;/g, "'").replace(/&quot;/g, '"') ?? '';
  const link = /<a href="([^"]*)"/.exec(text)?.[1] ?? null;
  return { status: res.status, location: res.headers.get('location'), text, sentence, link };
}

/** The callback path Toolport gives this person's add-on and provider (each its own). */
const cbPath = (person: { addonId: string; provider?: string }) => `/accounts/callback/${person.addonId}/${person.provider ?? 'notes_cloud'}`;

const rowsOf = (person: Person) =>
  tp.svc.db.select().from(connectedAccounts).where(and(eq(connectedAccounts.userId, person.user.id), eq(connectedAccounts.addonId, person.addonId)));

/** Connects an account end to end in Chromium; returns the tokens stored for it. */
async function connectedPerson(login = 'alice', opts: Parameters<typeof personWithAccount>[3] = {}) {
  const person = await personWithAccount(tp.url, hook, provider, opts);
  const page = await tabOf(person);
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/accounts/callback/') && u.searchParams.get('code')) secrets.add(u.searchParams.get('code')!);
  });
  const landed = await connectInBrowser(page, (await pressConnect(person)).href, login);
  await page.context().close();
  const [row] = await rowsOf(person);
  assert.ok(row, 'the account is stored');
  const tokens = openAccountTokens(tp.svc, row);
  secrets.add(tokens.accessToken);
  if (tokens.refreshToken) secrets.add(tokens.refreshToken);
  return { person, landed, row, tokens };
}

describe('connecting an account', () => {
  it('in Chromium: Connect, the provider’s login and consent, back on the add-on’s page; sealed at rest; shown without a token', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    const before = await person.client.get(`/api/installs/${person.addonId}/accounts`);
    assert.equal(before.status, 200, before.text);
    assert.deepEqual(before.body, [{
      provider: 'notes_cloud', title: 'Notes Cloud', scopes: ['openid', 'profile', 'notes'], ready: true,
      connected: false, status: null, failure: null, connectedAt: null, refreshedAt: null,
    }]);

    const url = await pressConnect(person);
    assert.equal(url.origin + url.pathname, provider.authorizationUrl);
    const q = url.searchParams;
    assert.deepEqual(
      { response_type: q.get('response_type'), client_id: q.get('client_id'), redirect_uri: q.get('redirect_uri'), scope: q.get('scope'), method: q.get('code_challenge_method') },
      { response_type: 'code', client_id: provider.clientId, redirect_uri: `${tp.url}${cbPath(person)}`, scope: 'openid profile notes', method: 'S256' },
    );
    assert.match(q.get('state')!, /^tpls_[A-Za-z0-9_-]{43}$/);
    assert.match(q.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
    // Only the state's digest is stored, and the verifier sealed.
    const states = await tp.svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.userId, person.user.id));
    assert.equal(states.length, 1);
    assert.ok(!JSON.stringify(states).includes(q.get('state')!), 'the state is stored by digest');

    const page = await tabOf(person);
    const seen: string[] = [];
    page.on('request', (r) => seen.push(r.url()));
    const landed = await connectInBrowser(page, url.href, 'alice');
    await page.context().close();
    assert.equal(landed.pathname, `/addons/${person.addonId}`);
    assert.equal(landed.searchParams.get('connected'), 'notes_cloud');
    const back = seen.find((u) => new URL(u).pathname === cbPath(person));
    assert.ok(back, `the browser came back through ${cbPath(person)}`);
    secrets.add(new URL(back).searchParams.get('code')!);

    const after = await person.client.get(`/api/installs/${person.addonId}/accounts`);
    assert.equal(after.body[0].connected, true);
    assert.equal(after.body[0].status, 'connected');
    assert.equal(after.body[0].failure, null);
    assert.ok(Date.parse(after.body[0].connectedAt) > 0);
    const all = await person.client.get('/api/accounts');
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body.map((a: Record<string, unknown>) => [a.addonId, a.addonName, a.provider, a.title, a.status, a.scope]), [
      [person.addonId, 'Notes', 'notes_cloud', 'Notes Cloud', 'connected', 'openid profile notes'],
    ]);

    // The row holds the tokens sealed; opened, the access token is good at the provider.
    const [row] = await rowsOf(person);
    assert.ok(row);
    const tokens = openAccountTokens(tp.svc, row);
    secrets.add(tokens.accessToken);
    assert.ok(tokens.refreshToken, 'a refresh token was stored');
    secrets.add(tokens.refreshToken);
    const raw = JSON.stringify(row);
    assert.ok(!raw.includes(tokens.accessToken) && !raw.includes(tokens.refreshToken), 'no plaintext token in the row');
    assert.ok(row.expiresAt && Math.abs(row.expiresAt.getTime() - Date.now() - 3600_000) < 600_000, 'expires in about an hour, as the provider said');
    const me = await provider.userinfo(tokens.accessToken);
    assert.deepEqual([me.status, me.body.sub], [200, 'alice']);
    for (const text of [after.text, all.text]) assert.ok(!text.includes(tokens.accessToken) && !text.includes(tokens.refreshToken), 'no token in an answer');
    // The state is used: none of the person's links is open any more.
    const open = await tp.svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.userId, person.user.id));
    assert.ok(open.every((s) => s.usedAt !== null));
  });

  it('the callback refuses another person’s session and no session without using the state up; the right person finishes; a replay is refused', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    const other = await personWithAccount(tp.url, hook, provider);
    const url = await callbackUrlFor(person);

    const stranger = await callback(url, other);
    assert.equal(stranger.status, 403);
    assert.match(stranger.sentence, /started by another Toolport account/);
    assert.equal(stranger.link, '/', 'another person is not told which add-on');
    assert.deepEqual(await rowsOf(person), []);
    assert.deepEqual(await rowsOf(other), []);

    const signedOut = await callback(url);
    assert.equal(signedOut.status, 401);
    assert.match(signedOut.sentence, /Sign in to Toolport with the account that pressed Connect/);
    assert.equal(signedOut.link, `/addons/${person.addonId}?connect=notes_cloud`);
    assert.deepEqual(await rowsOf(person), []);

    const mine = await callback(url, person);
    assert.equal(mine.status, 302, mine.text);
    assert.equal(mine.location, `/addons/${person.addonId}?connected=notes_cloud`);
    assert.equal((await rowsOf(person)).length, 1);
    const stored = (await rowsOf(person))[0]!;

    const replay = await callback(url, person);
    assert.equal(replay.status, 409);
    assert.match(replay.sentence, /already used\. Open the add-on's page in Toolport and press Connect again\./);
    assert.equal(replay.link, `/addons/${person.addonId}?connect=notes_cloud`);
    assert.deepEqual((await rowsOf(person))[0], stored, 'the account is unchanged');
    for (const r of [stranger, signedOut, mine, replay]) assert.ok(!r.text.includes(new URL(url).searchParams.get('code')!), 'the page never shows the code');
  });

  it('a made-up, malformed or missing state is refused with a sentence', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    for (const state of [`tpls_${randomBytes(32).toString('base64url')}`, 'abc', '']) {
      const r = await callback(`${tp.url}${cbPath(person)}?code=made-up-code-123&state=${state}`, person);
      assert.equal(r.status, 400, `${state}: ${r.text}`);
      assert.match(r.sentence, /unknown or has expired|does not come from a Connect button of Toolport/);
      assert.ok(!r.text.includes('made-up-code-123'));
    }
    const none = await callback(`${tp.url}${cbPath(person)}?code=x`, person);
    assert.equal(none.status, 400);
    assert.deepEqual(await rowsOf(person), []);
  });

  it("a code sent back to another add-on's callback address is refused, and its state used up (the mix-up attack)", async () => {
    // A malicious add-on's authorization page forwards the person to another add-on's provider; that
    // provider sends the code to the address registered for the other add-on, with the malicious
    // flow's state. The state names the malicious add-on: nothing is sent to its token endpoint.
    const person = await personWithAccount(tp.url, hook, provider);
    const other = await personWithAccount(tp.url, hook, provider);
    const state = (await pressConnect(person)).searchParams.get('state')!;
    const tokenRequests = provider.requests.filter((r) => r.path === '/token').length;
    const r = await callback(`${tp.url}${cbPath(other)}?code=mixed-up-code-123&state=${state}`, person);
    assert.equal(r.status, 400, r.text);
    assert.match(r.sentence, /came back to the address of another add-on's account/);
    assert.ok(!r.text.includes('mixed-up-code-123'));
    assert.equal(provider.requests.filter((x) => x.path === '/token').length, tokenRequests, 'no token request');
    const again = await callback(`${tp.url}${cbPath(person)}?code=mixed-up-code-123&state=${state}`, person);
    assert.equal(again.status, 409, 'the state was used up');
    assert.deepEqual(await rowsOf(person), []);
  });

  it('an expired state is refused, and a callback without a code', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    const expired = (await pressConnect(person)).searchParams.get('state')!;
    await tp.svc.db.update(accountLinkStates).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(accountLinkStates.userId, person.user.id));
    const late = await callback(`${tp.url}${cbPath(person)}?code=some-code-4567&state=${expired}`, person);
    assert.equal(late.status, 410, late.text);
    assert.match(late.sentence, /expired \(it lasts 10 minutes\)/);

    const state = (await pressConnect(person)).searchParams.get('state')!;
    const noCode = await callback(`${tp.url}${cbPath(person)}?state=${state}`, person);
    assert.equal(noCode.status, 400);
    assert.equal(noCode.sentence, 'Notes Cloud sent no authorization code back. Press Connect again.');
    assert.deepEqual(await rowsOf(person), []);
  });

  it('the person cancelling at the provider (error=access_denied) is told so on Toolport’s page, with a link back', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    const page = await tabOf(person);
    const landed = await connectInBrowser(page, (await pressConnect(person)).href, 'alice', { cancel: true });
    assert.equal(landed.pathname, cbPath(person));
    assert.equal(landed.searchParams.get('error'), 'access_denied');
    await page.getByRole('heading', { level: 1, name: 'The account was not connected' }).waitFor();
    assert.equal(
      await page.locator('p.error').textContent(),
      'Notes Cloud was not connected: you did not allow access there (Notes Cloud answered access_denied). Press Connect again to retry.',
    );
    assert.equal(await page.getByRole('link', { name: 'Back to the add-on' }).getAttribute('href'), `/addons/${person.addonId}?connect=notes_cloud`);
    await page.context().close();
    assert.deepEqual(await rowsOf(person), []);

    // Another error, with hidden characters and a long description: bounded and cleaned.
    const state = (await pressConnect(person)).searchParams.get('state')!;
    const r = await callback(`${tp.url}${cbPath(person)}?state=${state}&error=server_error&error_description=${encodeURIComponent(`down\u202e\u0007${'x'.repeat(5000)}`)}`, person);
    assert.equal(r.status, 400);
    assert.match(r.sentence, /^Notes Cloud did not connect the account: it answered server_error \(downx+…\)\./);
    assert.ok(r.sentence.length < 600, `bounded: ${r.sentence.length}`);
  });
});

describe('a token endpoint that answers wrong', () => {
  const cases: Array<{ path: string; status: number; sentence: RegExp }> = [
    { path: '/garbage', status: 503, sentence: /^Notes Cloud was not connected\. Notes Cloud answered with something that is not a token answer/ },
    { path: '/redirect', status: 503, sentence: /Notes Cloud's token endpoint answered with a redirect \(HTTP 302\), which Toolport does not follow/ },
    { path: '/no-token', status: 503, sentence: /Notes Cloud answered without a usable token: there is no access_token/ },
    { path: '/mac', status: 503, sentence: /the token type is not Bearer/ },
    { path: '/echo', status: 503, sentence: /^Notes Cloud was not connected\. Notes Cloud refused: invalid_grant \(the code … with verifier … is no good\)\.$/ },
    { path: '/huge', status: 503, sentence: /answered with more than 64 KB/ },
    { path: '/broken', status: 503, sentence: /Notes Cloud failed to answer \(HTTP 500\)\. Try again later\./ },
    { path: '/slow', status: 503, sentence: /Notes Cloud did not answer within 10 seconds/ },
  ];
  for (const c of cases) {
    it(`${c.path}: a sentence naming the provider, nothing stored, no code quoted`, { timeout: 60_000 }, async () => {
      const person = await personWithAccount(tp.url, hook, provider, { edit: (a) => { a.tokenUrl = `${bad.url}${c.path}`; } });
      const state = (await pressConnect(person)).searchParams.get('state')!;
      const code = `code-${randomBytes(12).toString('base64url')}`;
      secrets.add(code);
      const before = provider.requests.filter((r) => r.path === '/token').length;
      const r = await callback(`${tp.url}${cbPath(person)}?code=${code}&state=${state}`, person);
      assert.equal(r.status, c.status, r.text);
      assert.match(r.sentence, c.sentence);
      assert.equal(r.link, `/addons/${person.addonId}?connect=notes_cloud`);
      assert.ok(!r.text.includes(code), 'the code is not repeated');
      assert.ok(bad.hits.includes(c.path), 'the bad endpoint was asked');
      assert.equal(provider.requests.filter((x) => x.path === '/token').length, before, 'a redirect is not followed');
      assert.deepEqual(await rowsOf(person), []);
    });
  }

  it('on a private address while WEBHOOK_ALLOW_PRIVATE is off: refused before any request', { timeout: 120_000 }, async () => {
    // The add-on is registered where loopback is allowed (its webhook is on 127.0.0.1), then the
    // same database is served with private addresses refused.
    const first = await startToolport({ keepBacking: true, log });
    let second: Toolport | undefined;
    try {
      const person = await personWithAccount(first.url, hook, provider, { edit: (a) => { a.tokenUrl = `${bad.url}/garbage`; } });
      await first.stop();
      second = await startToolport({ backing: first.backing, env: { WEBHOOK_ALLOW_PRIVATE: 'false' }, log });
      const client = new Client(second.url);
      client.cookies = person.client.cookies;
      const started = await client.post(`/api/installs/${person.addonId}/accounts/notes_cloud/connect`, {});
      assert.equal(started.status, 200, started.text);
      const state = new URL(started.body.authorizationUrl).searchParams.get('state')!;
      const hits = bad.hits.length;
      const r = await callback(`${second.url}${cbPath(person)}?code=private-code-789&state=${state}`, { client });
      assert.equal(r.status, 503, r.text);
      assert.match(r.sentence, /Toolport does not call Notes Cloud's token endpoint: it leads to a private network address/);
      assert.equal(bad.hits.length, hits, 'nothing reached the private address');
      const rows = await second.svc.db.select().from(connectedAccounts).where(eq(connectedAccounts.userId, person.user.id));
      assert.deepEqual(rows, []);
    } finally {
      if (second) await second.stop();
      else await first.stop().catch(() => {});
    }
  });
});

describe('what Connect refuses', () => {
  it('a provider without a stored client (409 with a sentence), an undeclared provider and an add-on not installed (404)', async () => {
    const person = await personWithAccount(tp.url, hook, provider, { storeClient: false });
    const listed = await person.client.get(`/api/installs/${person.addonId}/accounts`);
    assert.equal(listed.body[0].ready, false);
    const noClient = await person.client.post(`/api/installs/${person.addonId}/accounts/notes_cloud/connect`, {});
    assert.equal(noClient.status, 409);
    assert.match(noClient.body.detail, /^The developer of Notes has not set up Notes Cloud yet/);
    const undeclared = await person.client.post(`/api/installs/${person.addonId}/accounts/github/connect`, {});
    assert.equal(undeclared.status, 404);
    assert.equal(undeclared.body.detail, 'Notes does not use an account at "github".');
    const notInstalled = await person.client.post('/api/installs/no-such-addon/accounts/notes_cloud/connect', {});
    assert.equal(notInstalled.status, 404);
    const form = await person.client.request('POST', `/api/installs/${person.addonId}/accounts/notes_cloud/connect`, 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(form.status, 415, 'a cross-site form cannot start a link');
  });

  it('keeps at most 10 links open per person: the oldest are dropped', async () => {
    const person = await personWithAccount(tp.url, hook, provider);
    const states: string[] = [];
    for (let i = 0; i < 12; i++) states.push((await pressConnect(person)).searchParams.get('state')!);
    const open = await tp.svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.userId, person.user.id));
    assert.equal(open.length, 10);
    const dropped = await callback(`${tp.url}${cbPath(person)}?code=c-123456789&state=${states[0]}`, person);
    assert.equal(dropped.status, 400);
    assert.match(dropped.sentence, /unknown or has expired/);
  });
});

describe('disconnecting', () => {
  it('forgets the account and revokes its tokens at the provider (RFC 7009): userinfo and introspection refuse them', async () => {
    const { person, tokens } = await connectedPerson('carol');
    assert.equal((await provider.introspect(tokens.accessToken)).active, true);
    const res = await person.client.delete(`/api/installs/${person.addonId}/accounts/notes_cloud`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { revoked: true });
    assert.deepEqual(await rowsOf(person), []);
    assert.equal((await provider.userinfo(tokens.accessToken)).status, 401);
    assert.equal((await provider.introspect(tokens.accessToken)).active, false);
    assert.equal((await provider.introspect(tokens.refreshToken!)).active, false);
    const listed = await person.client.get(`/api/installs/${person.addonId}/accounts`);
    assert.equal(listed.body[0].connected, false);
    const again = await person.client.delete(`/api/installs/${person.addonId}/accounts/notes_cloud`);
    assert.equal(again.status, 404);
    assert.match(again.text, /No Notes Cloud account is connected for Notes\./);
  });

  it('without a revocation endpoint: forgotten, revoked null', async () => {
    const { person } = await connectedPerson('dave', { edit: (a) => { delete a.revocationUrl; } });
    const res = await person.client.delete(`/api/installs/${person.addonId}/accounts/notes_cloud`);
    assert.deepEqual([res.status, res.body], [200, { revoked: null }]);
    assert.deepEqual(await rowsOf(person), []);
  });

  it('uninstalling the add-on disconnects and revokes its accounts', async () => {
    const { person, tokens } = await connectedPerson('erin');
    assert.equal((await person.client.delete(`/api/installs/${person.addonId}`)).status, 204);
    assert.deepEqual(await rowsOf(person), []);
    assert.equal((await provider.introspect(tokens.accessToken)).active, false);
    assert.equal((await provider.introspect(tokens.refreshToken!)).active, false);
    assert.deepEqual((await person.client.get('/api/accounts')).body, []);
  });
});

describe('secrets', () => {
  it('no token, code or client secret in any log line written during this file', () => {
    assert.ok(secrets.size > 10, `collected ${secrets.size}`);
    assert.ok(logged.length > 0);
    const all = logged.join('\n');
    for (const s of secrets) assert.ok(!all.includes(s), `a log line holds ${s.slice(0, 6)}…`);
  });
});
