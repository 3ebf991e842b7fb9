import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { sql } from 'drizzle-orm';
import { exchangeToken, REFRESH_GRACE_MS, verifyAccessToken } from '@toolport/core';
import { Client, newPerson } from './helpers/http';
import type { Toolport } from './helpers/target';
import { authorizeQuery, connect, consent, FORM, hiddenFields, pkce, postForm, redeem, REDIRECT, personWithClient, register, rejectsWithCode, oauthToolport } from './helpers/oauth-flow';

let tp: Toolport;
oauthToolport((started) => (tp = started));

const setup = (label?: string) => personWithClient(tp.url, label);

const userKeyOf = (mcpUrl: string) => /\/u\/([^/]+)\/mcp$/.exec(mcpUrl)![1]!;

const rejects = rejectsWithCode;

describe('metadata', () => {
  it('publishes RFC 8414 metadata with one issuer, byte for byte, at both well-known paths', async () => {
    const c = new Client(tp.url);
    const as = await c.get('/.well-known/oauth-authorization-server');
    assert.equal(as.status, 200);
    const issuer = tp.config.publicUrl;
    assert.equal(as.body.issuer, issuer);
    for (const [k, p] of Object.entries({
      authorization_endpoint: '/oauth/authorize',
      token_endpoint: '/oauth/token',
      registration_endpoint: '/oauth/register',
      revocation_endpoint: '/oauth/revoke',
      jwks_uri: '/oauth/jwks',
    })) assert.equal(as.body[k], `${issuer}${p}`);
    assert.deepEqual(as.body.response_types_supported, ['code']);
    assert.deepEqual(as.body.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(as.body.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(as.body.token_endpoint_auth_methods_supported, ['none', 'client_secret_post', 'client_secret_basic']);
    assert.deepEqual(as.body.scopes_supported, ['tools']);
    assert.equal(as.body.authorization_response_iss_parameter_supported, true);
    assert.equal(as.body.client_id_metadata_document_supported, true);
    const oidc = await c.get('/.well-known/openid-configuration');
    assert.deepEqual(oidc.body, as.body);
  });

  it('publishes RFC 9728 metadata per MCP URL, the same for a made-up one, nothing at the root', async () => {
    const { user } = await newPerson(tp.url);
    const c = new Client(tp.url);
    const prm = await c.get(`/.well-known/oauth-protected-resource/u/${userKeyOf(user.mcpUrl)}/mcp`);
    assert.equal(prm.status, 200);
    assert.equal(prm.body.resource, user.mcpUrl);
    assert.deepEqual(prm.body.authorization_servers, [tp.config.publicUrl]);
    assert.deepEqual(prm.body.scopes_supported, ['tools']);
    assert.deepEqual(prm.body.bearer_methods_supported, ['header']);
    // A made-up MCP URL gets the same answer as a real one (issue #40: a 404 told which URLs exist).
    const madeUp = 'A'.repeat(24);
    const fake = await c.get(`/.well-known/oauth-protected-resource/u/${madeUp}/mcp`);
    assert.equal(fake.status, 200);
    assert.deepEqual({ ...fake.body, resource: undefined }, { ...prm.body, resource: undefined });
    assert.equal(fake.body.resource, `${tp.config.publicUrl}/u/${madeUp}/mcp`);
    assert.equal((await c.get('/.well-known/oauth-protected-resource/u/nope-not-a-key/mcp')).status, 404, 'not the shape of any MCP URL');
    assert.equal((await c.get('/.well-known/oauth-protected-resource')).status, 404);
    assert.equal((await c.get('/.well-known/oauth-protected-resource/u/x/other')).status, 404);
  });

  it('builds the MCP endpoint WWW-Authenticate challenge', async () => {
    const { wwwAuthenticate } = await import('@toolport/core');
    const header = wwwAuthenticate(tp.svc, 'abc', 'invalid_token');
    assert.equal(
      header,
      `Bearer resource_metadata="${tp.config.publicUrl}/.well-known/oauth-protected-resource/u/abc/mcp", scope="tools", error="invalid_token"`,
    );
    assert.ok(!wwwAuthenticate(tp.svc, 'abc').includes('error='));
  });

  it('publishes the signing key as a JWKS of public ES256 keys', async () => {
    const jwks = await new Client(tp.url).get('/oauth/jwks');
    assert.equal(jwks.status, 200);
    assert.ok(jwks.body.keys.length >= 1);
    for (const k of jwks.body.keys) {
      assert.equal(k.kty, 'EC');
      assert.equal(k.alg, 'ES256');
      assert.equal(k.d, undefined, 'no private part');
    }
  });
});

describe('dynamic client registration', () => {
  it('registers a public client and echoes its metadata', async () => {
    const res = await new Client(tp.url).post('/oauth/register', {
      client_name: '  My\u202e App\u0007 ',
      redirect_uris: [REDIRECT, 'https://app.example.com/cb', 'com.example.app:/oauth'],
      grant_types: ['authorization_code', 'refresh_token'],
      unknown_field: 'dropped',
    });
    assert.equal(res.status, 201);
    assert.match(res.body.client_id, /^cli_/);
    assert.equal(typeof res.body.client_id_issued_at, 'number');
    assert.equal(res.body.client_name, 'My App');
    assert.equal(res.body.token_endpoint_auth_method, 'none');
    assert.equal(res.body.client_secret, undefined);
    assert.deepEqual(res.body.redirect_uris, [REDIRECT, 'https://app.example.com/cb', 'com.example.app:/oauth']);
    assert.equal(res.body.unknown_field, undefined);
    const unnamed = await new Client(tp.url).post('/oauth/register', { redirect_uris: [REDIRECT] });
    assert.equal(unnamed.body.client_name, 'Unnamed app');
  });

  it('gives a confidential client a secret, once', async () => {
    const res = await new Client(tp.url).post('/oauth/register', { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' });
    assert.equal(res.status, 201);
    assert.match(res.body.client_secret, /^tpcs_/);
  });

  for (const [why, uri] of [
    ['a fragment', 'https://app.example.com/cb#frag'],
    ['javascript:', 'javascript:alert(1)'],
    ['data:', 'data:text/html,hi'],
    ['file:', 'file:///etc/passwd'],
    ['http on a public host', 'http://app.example.com/cb'],
    ['userinfo', 'https://user:pass@app.example.com/cb'],
    ['userinfo without password', 'https://evil@app.example.com/cb'],
    ['a relative URI', '/cb'],
  ] as const) {
    it(`refuses a redirect URI with ${why}`, async () => {
      const res = await new Client(tp.url).post('/oauth/register', { redirect_uris: [uri] });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_redirect_uri');
      assert.equal(typeof res.body.error_description, 'string');
    });
  }

  it('refuses bad metadata: no URIs, too many, unknown grant or response types, long names, non-JSON', async () => {
    const c = new Client(tp.url);
    assert.equal((await c.post('/oauth/register', { redirect_uris: [] })).body.error, 'invalid_redirect_uri');
    const eleven = Array.from({ length: 11 }, (_, i) => `https://a.example.com/${i}`);
    assert.equal((await c.post('/oauth/register', { redirect_uris: eleven })).body.error, 'invalid_redirect_uri');
    const grant = await c.post('/oauth/register', { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] });
    assert.equal(grant.status, 400);
    assert.equal(grant.body.error, 'invalid_client_metadata');
    assert.equal((await c.post('/oauth/register', { redirect_uris: [REDIRECT], response_types: ['token'] })).body.error, 'invalid_client_metadata');
    assert.equal((await c.post('/oauth/register', { redirect_uris: [REDIRECT], client_name: 'x'.repeat(101) })).body.error, 'invalid_client_metadata');
    assert.equal((await c.post('/oauth/register', { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' })).body.error, 'invalid_client_metadata');
    const broken = await c.request('POST', '/oauth/register', '{"redirect_uris":', { 'content-type': 'application/json' });
    assert.equal(broken.status, 400);
    assert.equal(broken.body.error, 'invalid_client_metadata');
    const big = await c.post('/oauth/register', { redirect_uris: [REDIRECT], client_name: 'y'.repeat(20_000) });
    assert.equal(big.status, 413);
  });
});

describe('registration flood protection', () => {
  it('answers 429 with Retry-After past 20 registrations an hour from one address', async () => {
    const c = new Client(tp.url);
    for (let i = 0; i < 20; i++) assert.equal((await c.post('/oauth/register', { redirect_uris: [REDIRECT] })).status, 201);
    const limited = await c.post('/oauth/register', { redirect_uris: [REDIRECT] });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'too_many_requests');
    const retry = Number(limited.headers.get('retry-after'));
    assert.ok(retry > 3000 && retry <= 3600, String(retry));
  });
});

describe('authorization code flow', () => {
  it('runs signed-out: authorize → login form → consent → allow → code → tokens → verify → rotate → late reuse revokes', async () => {
    const { email, password, user, client: dashboard } = await setup('flow');
    const app = await register(tp.url, { client_name: 'Flow <App>' });
    const browser = new Client(tp.url);
    const { verifier, challenge } = pkce();
    const query = authorizeQuery({
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: user.mcpUrl,
      state: 'state & more',
    });
    const loginForm = await browser.get(query);
    assert.equal(loginForm.status, 200);
    assert.match(loginForm.text, /action="\/oauth\/login"/);
    assert.ok(!/<script/i.test(loginForm.text));
    const loginFields = hiddenFields(loginForm.text);
    assert.ok(loginFields.csrf_token);

    const wrong = await postForm(browser, '/oauth/login', { ...loginFields, email, password: 'not the password' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /email or password is wrong/);
    const noCsrf = await postForm(browser, '/oauth/login', { return_query: loginFields.return_query!, email, password });
    assert.equal(noCsrf.status, 403);

    const signedIn = await postForm(browser, '/oauth/login', { ...loginFields, email, password });
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), query);

    const page = await browser.get(signedIn.headers.get('location')!);
    assert.equal(page.status, 200);
    assert.match(page.text, /Flow &lt;App&gt;/, 'the app name is escaped');
    assert.ok(!page.text.includes('Flow <App>'));
    assert.match(page.text, /unverified/);
    assert.match(page.text.replaceAll('<wbr>', ''), /127\.0\.0\.1:9999/, 'the redirect host is shown (it may wrap after each dot)');
    assert.match(page.text, /value="allow"/);
    assert.match(page.text, /value="deny"/);
    assert.ok(!/<script/i.test(page.text), 'the consent page needs no JavaScript');
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
    assert.match(page.headers.get('cache-control')!, /no-store/);

    const decided = await postForm(browser, '/oauth/authorize/decision', { ...hiddenFields(page.text), decision: 'allow' });
    assert.equal(decided.status, 303);
    const back = new URL(decided.headers.get('location')!);
    assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
    assert.equal(back.searchParams.get('state'), 'state & more');
    assert.equal(back.searchParams.get('iss'), tp.config.publicUrl);
    const code = back.searchParams.get('code')!;
    assert.ok(code);

    const token = await redeem(tp.url, { code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: app.client_id, resource: user.mcpUrl });
    assert.equal(token.status, 200, token.text);
    assert.match(token.headers.get('cache-control')!, /no-store/);
    assert.equal(token.body.token_type, 'Bearer');
    assert.equal(token.body.expires_in, 600);
    assert.equal(token.body.scope, 'tools');
    const header = decodeProtectedHeader(token.body.access_token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'ES256');
    const claims = decodeJwt(token.body.access_token);
    assert.equal(claims.iss, tp.config.publicUrl);
    assert.equal(claims.aud, user.mcpUrl);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.client_id, app.client_id);
    assert.equal(claims.scope, 'tools');
    assert.equal(claims.exp! - claims.iat!, 600);
    assert.ok(claims.jti);

    const ok = await verifyAccessToken(tp.svc, token.body.access_token, user.mcpUrl);
    assert.deepEqual(ok, { identity: { userId: user.id, grantId: claims.gid, clientId: app.client_id, appName: 'Flow <App>' }, scope: 'tools', aiAppsOn: true });
    await rejects(verifyAccessToken(tp.svc, token.body.access_token, `${user.mcpUrl}/`), 'UNAUTHORIZED');

    const conns = await dashboard.get('/api/connections');
    assert.equal(conns.status, 200);
    assert.equal(conns.body.length, 1);
    assert.equal(conns.body[0].id, claims.gid);
    assert.equal(conns.body[0].appName, 'Flow <App>');
    assert.equal(conns.body[0].unverified, true);
    assert.equal(conns.body[0].redirectHost, '127.0.0.1:9999');

    const refresh = (refresh_token: string) =>
      postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token, client_id: app.client_id });
    const rotated = await refresh(token.body.refresh_token);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.refresh_token, token.body.refresh_token);
    await verifyAccessToken(tp.svc, rotated.body.access_token, user.mcpUrl);

    // Presented again at once, it is the app racing itself: the same successor (test below).
    assert.equal((await refresh(token.body.refresh_token)).body.refresh_token, rotated.body.refresh_token);
    const clock = tp.svc.clock;
    tp.svc.clock = { now: () => new Date(Date.now() + REFRESH_GRACE_MS + 1000) };
    const reused = await refresh(token.body.refresh_token).finally(() => (tp.svc.clock = clock));
    assert.equal(reused.status, 400);
    assert.equal(reused.body.error, 'invalid_grant');
    // The whole family is gone: the rotated refresh token and the access tokens.
    assert.equal((await refresh(rotated.body.refresh_token)).body.error, 'invalid_grant');
    await rejects(verifyAccessToken(tp.svc, rotated.body.access_token, user.mcpUrl), 'UNAUTHORIZED');
    assert.equal((await dashboard.get('/api/connections')).body.length, 0);
  });

  it('answers concurrent refreshes of one token with one successor, and keeps the connection', async () => {
    const { client, user, app } = await setup();
    const tokens = await connect(tp.url, client, app.client_id, user.mcpUrl);
    const results = await Promise.all(
      [0, 1, 2, 3, 4].map(() => postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: app.client_id })),
    );
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200], results.map((r) => r.text).join('\n'));
    assert.equal(new Set(results.map((r) => r.body.refresh_token)).size, 1, 'one successor for every racer');
    for (const r of results) await verifyAccessToken(tp.svc, r.body.access_token, user.mcpUrl);
    const next = await postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: results[0]!.body.refresh_token, client_id: app.client_id });
    assert.equal(next.status, 200, next.text);
  });

  it('revokes the family for a reuse after the grace window; within it a straggler gets the current token however often it rotated', async () => {
    const { client, user, app } = await setup();
    const form = (refresh_token: string) => new URLSearchParams({ grant_type: 'refresh_token', refresh_token, client_id: app.client_id });
    const clock = tp.svc.clock;
    try {
      // After the window: a replay.
      const late = await connect(tp.url, client, app.client_id, user.mcpUrl);
      const winner = await exchangeToken(tp.svc, { form: form(late.refresh_token) });
      tp.svc.clock = { now: () => new Date(Date.now() + REFRESH_GRACE_MS + 1000) };
      await assert.rejects(exchangeToken(tp.svc, { form: form(late.refresh_token) }), (err: any) => err.details.oauth === 'invalid_grant' && /revoked/.test(err.message));
      tp.svc.clock = clock;
      await rejects(verifyAccessToken(tp.svc, winner.access_token, user.mcpUrl), 'UNAUTHORIZED');
      await assert.rejects(exchangeToken(tp.svc, { form: form(winner.refresh_token) }), (err: any) => err.details.oauth === 'invalid_grant');

      // Within the window, the chain moved on (the successor was rotated too, as parallel requests
      // of one SDK do): the straggler gets the family's current token, and nothing is revoked.
      const moved = await connect(tp.url, client, app.client_id, user.mcpUrl);
      const second = await exchangeToken(tp.svc, { form: form(moved.refresh_token) });
      const third = await exchangeToken(tp.svc, { form: form(second.refresh_token) });
      const straggler = await exchangeToken(tp.svc, { form: form(moved.refresh_token) });
      assert.equal(straggler.refresh_token, third.refresh_token, 'the current token, not a new branch');
      await verifyAccessToken(tp.svc, third.access_token, user.mcpUrl);
      // The same straggler past the window is a replay: the family ends.
      tp.svc.clock = { now: () => new Date(Date.now() + REFRESH_GRACE_MS + 1000) };
      await assert.rejects(exchangeToken(tp.svc, { form: form(moved.refresh_token) }), (err: any) => err.details.oauth === 'invalid_grant');
      tp.svc.clock = clock;
      await rejects(verifyAccessToken(tp.svc, third.access_token, user.mcpUrl), 'UNAUTHORIZED');
    } finally {
      tp.svc.clock = clock;
    }
  });

  it('burns nothing on a refused refresh: a revoked connection says so every time', async () => {
    const { client, user, app } = await setup();
    const tokens = await connect(tp.url, client, app.client_id, user.mcpUrl);
    const conn = (await client.get('/api/connections')).body[0];
    assert.equal((await client.delete(`/api/connections/${conn.id}`)).status, 204);
    for (let i = 0; i < 3; i++) {
      const res = await postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: app.client_id });
      assert.equal(res.body.error, 'invalid_grant');
      assert.equal(res.body.error_description, 'This connection was revoked.');
    }
    const [row] = await tp.svc.db.execute(sql`select used_at from oauth_refresh_tokens where grant_id = ${conn.id}`).then((r: any) => r.rows ?? r);
    assert.equal(row.used_at, null, 'the refused refresh did not spend the token');
  });

  it('answers Deny with access_denied, state and iss', async () => {
    const { client, user, app } = await setup();
    const { decided, location } = await consent(client, { clientId: app.client_id, resource: user.mcpUrl, decision: 'deny', state: 's1' });
    assert.equal(decided.status, 303);
    assert.equal(location.searchParams.get('error'), 'access_denied');
    assert.equal(location.searchParams.get('state'), 's1');
    assert.equal(location.searchParams.get('iss'), tp.config.publicUrl);
    assert.equal(location.searchParams.get('code'), null);
  });

  it('requires PKCE with S256', async () => {
    const { client, user, app } = await setup();
    const base = { response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, resource: user.mcpUrl, state: 'p' };
    for (const extra of [{}, { code_challenge: pkce().challenge }, { code_challenge: pkce().verifier, code_challenge_method: 'plain' }]) {
      const res = await client.get(authorizeQuery({ ...base, ...extra }));
      assert.equal(res.status, 302);
      const loc = new URL(res.headers.get('location')!);
      assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT);
      assert.equal(loc.searchParams.get('error'), 'invalid_request');
      assert.equal(loc.searchParams.get('state'), 'p');
      assert.equal(loc.searchParams.get('iss'), tp.config.publicUrl);
    }
  });

  it('refuses a wrong code_verifier, and a code redeemed twice revokes what it issued', async () => {
    const { client, user, app } = await setup();
    const first = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const wrong = await redeem(tp.url, { code: first.location.searchParams.get('code')!, code_verifier: pkce().verifier, redirect_uri: REDIRECT, client_id: app.client_id });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, 'invalid_grant');

    const second = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const form = { code: second.location.searchParams.get('code')!, code_verifier: second.verifier, redirect_uri: REDIRECT, client_id: app.client_id };
    const ok = await redeem(tp.url, form);
    assert.equal(ok.status, 200);
    await verifyAccessToken(tp.svc, ok.body.access_token, user.mcpUrl);
    const again = await redeem(tp.url, form);
    assert.equal(again.status, 400);
    assert.equal(again.body.error, 'invalid_grant');
    await rejects(verifyAccessToken(tp.svc, ok.body.access_token, user.mcpUrl), 'UNAUTHORIZED');
    const refreshed = await postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: ok.body.refresh_token, client_id: app.client_id });
    assert.equal(refreshed.body.error, 'invalid_grant');
  });

  it('lets a code expire after 60 seconds', async () => {
    const { client, user, app } = await setup();
    const flow = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const clock = tp.svc.clock;
    tp.svc.clock = { now: () => new Date(Date.now() + 61_000) };
    try {
      const late = await redeem(tp.url, { code: flow.location.searchParams.get('code')!, code_verifier: flow.verifier, redirect_uri: REDIRECT, client_id: app.client_id });
      assert.equal(late.status, 400);
      assert.equal(late.body.error, 'invalid_grant');
    } finally {
      tp.svc.clock = clock;
    }
  });

  it('refuses a token request whose redirect_uri or resource differs from the authorization', async () => {
    const { client, user, app } = await setup();
    const other = await register(tp.url, { redirect_uris: [REDIRECT, 'https://b.example.com/cb'] });
    const a = await consent(client, { clientId: other.client_id, resource: user.mcpUrl });
    const mismatch = await redeem(tp.url, { code: a.location.searchParams.get('code')!, code_verifier: a.verifier, redirect_uri: 'https://b.example.com/cb', client_id: other.client_id });
    assert.equal(mismatch.body.error, 'invalid_grant');
    const b = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const target = await redeem(tp.url, { code: b.location.searchParams.get('code')!, code_verifier: b.verifier, redirect_uri: REDIRECT, client_id: app.client_id, resource: `${tp.url}/u/other/mcp` });
    assert.equal(target.body.error, 'invalid_target');
    const stolen = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const byOther = await redeem(tp.url, { code: stolen.location.searchParams.get('code')!, code_verifier: stolen.verifier, redirect_uri: REDIRECT, client_id: other.client_id });
    assert.equal(byOther.body.error, 'invalid_grant');
  });

  it('shows an error page and never redirects for an unknown client or an unregistered redirect_uri', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const base = { response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl, state: 'x' };
    for (const bad of [
      { client_id: app.client_id, redirect_uri: 'https://evil.example.com/cb' },
      { client_id: app.client_id, redirect_uri: `${REDIRECT}/extra` },
      { client_id: app.client_id, redirect_uri: `${REDIRECT}#frag` },
      { client_id: 'cli_unknown', redirect_uri: REDIRECT },
      { redirect_uri: REDIRECT },
    ]) {
      const res = await client.get(authorizeQuery({ ...base, ...bad }));
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(res.headers.get('location'), null);
      assert.match(res.headers.get('content-type')!, /text\/html/);
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
    }
    // A loopback redirect URI may use another port (RFC 8252 §7.3).
    const port = await client.get(authorizeQuery({ ...base, client_id: app.client_id, redirect_uri: 'http://127.0.0.1:51234/callback' }));
    assert.equal(port.status, 200);
  });

  it('answers invalid_target for another person\'s MCP URL or none at all', async () => {
    const { client, app } = await setup();
    const other = await newPerson(tp.url, 'other');
    const { challenge } = pkce();
    const base = { response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 't' };
    for (const resource of [other.user.mcpUrl, undefined, 'https://elsewhere.example.com/mcp']) {
      const res = await client.get(authorizeQuery({ ...base, resource }));
      assert.equal(res.status, 302);
      const loc = new URL(res.headers.get('location')!);
      assert.equal(loc.searchParams.get('error'), 'invalid_target');
      assert.equal(loc.searchParams.get('state'), 't');
    }
    const scope = await client.get(authorizeQuery({ ...base, resource: undefined, scope: 'admin' }));
    assert.equal(new URL(scope.headers.get('location')!).searchParams.get('error'), 'invalid_scope');
  });

  it('refuses a consent decision with a missing, wrong or foreign CSRF token, or a tampered request', async () => {
    const { client, user, app } = await setup();
    const victim = await setup('victim');
    const { challenge } = pkce();
    const page = await client.get(
      authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl }),
    );
    const fields = hiddenFields(page.text);
    const attempts: Array<[Client, Record<string, string>]> = [
      [client, { ...fields, csrf_token: '' }],
      [client, { ...fields, csrf_token: `${Date.now()}.${randomBytes(32).toString('base64url')}` }],
      [client, { ...fields, code_challenge: pkce().challenge }],
      // The attacker's own form, submitted in the victim's browser: bound to another session.
      [victim.client, { ...fields, resource: victim.user.mcpUrl }],
    ];
    for (const [who, form] of attempts) {
      const { csrf_token, ...rest } = form;
      const res = await postForm(who, '/oauth/authorize/decision', { ...rest, ...(csrf_token ? { csrf_token } : {}), decision: 'allow' });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('location'), null);
    }
    const foreign = await postForm(client, '/oauth/authorize/decision', { ...fields, decision: 'allow' }, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal((await client.get('/api/connections')).body.length, 0);
    assert.equal((await victim.client.get('/api/connections')).body.length, 0);
  });

  it('authenticates confidential clients by their registered method', async () => {
    const { client, user } = await setup();
    const app = await register(tp.url, { token_endpoint_auth_method: 'client_secret_basic' });
    const flow = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const form = { code: flow.location.searchParams.get('code')!, code_verifier: flow.verifier, redirect_uri: REDIRECT };
    const noSecret = await redeem(tp.url, { ...form, client_id: app.client_id });
    assert.equal(noSecret.status, 401);
    assert.equal(noSecret.body.error, 'invalid_client');
    const badBasic = `Basic ${Buffer.from(`${app.client_id}:wrong`).toString('base64')}`;
    const bad = await postForm(new Client(tp.url), '/oauth/token', { grant_type: 'authorization_code', ...form }, { authorization: badBasic });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get('www-authenticate')!, /^Basic/);
    const flow2 = await consent(client, { clientId: app.client_id, resource: user.mcpUrl });
    const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`;
    const ok = await postForm(new Client(tp.url), '/oauth/token', { grant_type: 'authorization_code', code: flow2.location.searchParams.get('code')!, code_verifier: flow2.verifier, redirect_uri: REDIRECT }, { authorization: basic });
    assert.equal(ok.status, 200, ok.text);
  });

  it('answers token endpoint errors in the RFC 6749 format', async () => {
    const c = new Client(tp.url);
    assert.equal((await postForm(c, '/oauth/token', { grant_type: 'password', client_id: 'x' })).body.error, 'unsupported_grant_type');
    assert.equal((await postForm(c, '/oauth/token', { client_id: 'x' })).body.error, 'invalid_request');
    const unknown = await postForm(c, '/oauth/token', { grant_type: 'authorization_code', client_id: 'cli_nope', code: 'x' });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error, 'invalid_client');
    const json = await c.post('/oauth/token', { grant_type: 'authorization_code' });
    assert.equal(json.body.error, 'invalid_request');
    const twice = await c.request('POST', '/oauth/token', 'grant_type=refresh_token&grant_type=refresh_token', FORM);
    assert.equal(twice.body.error, 'invalid_request');
  });
});

