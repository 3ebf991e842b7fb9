import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { verifyAccessToken } from '@toolport/core';
import { keyStore } from '../packages/core/src/oauth/keys';
import { Client, newPerson } from './helpers/http';
import type { Toolport } from './helpers/target';
import { authorizeQuery, connect, hiddenFields, pkce, postForm, redeem, REDIRECT, personWithClient, register, rejectsWithCode, oauthToolport } from './helpers/oauth-flow';

/**
 * The OAuth and token suite (issue #10): what an attacker can try against the authorization server
 * and the token checks, and the answer each gets. Each case is a row of docs/security.md. Cases that
 * test/oauth.test.ts and test/oauth-tokens.test.ts already prove are not repeated here.
 */
let tp: Toolport;
oauthToolport((started) => (tp = started));

const HTTPS_REDIRECT = 'https://app.example.com/cb';
const setup = async (label?: string) => {
  const p = await personWithClient(tp.url, label);
  return { ...p, app: await register(tp.url, { redirect_uris: [REDIRECT, HTTPS_REDIRECT] }) };
};
const challengeOf = (verifier: string) => createHash('sha256').update(verifier, 'utf8').digest('base64url');

/** Authorize with a chosen challenge and allow: the code. */
async function codeFor(person: Client, clientId: string, resource: string, challenge: string, redirectUri = REDIRECT) {
  const page = await person.get(
    authorizeQuery({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', resource, scope: 'tools', state: 's' }),
  );
  assert.equal(page.status, 200, page.text.slice(0, 300));
  const decided = await postForm(person, '/oauth/authorize/decision', { ...hiddenFields(page.text), decision: 'allow' });
  const code = new URL(decided.headers.get('location')!).searchParams.get('code');
  assert.ok(code);
  return code;
}

const refresh = (clientId: string, token: string, extra: Record<string, string> = {}) =>
  postForm(new Client(tp.url), '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId, ...extra });

describe('OAuth: authorization codes', () => {
  it('lets exactly one of parallel redemptions take the code; the others are invalid_grant and end what it gave', async () => {
    const { client, user, app } = await setup();
    const { verifier, challenge } = pkce();
    const code = await codeFor(client, app.client_id, user.mcpUrl, challenge);
    const form = { code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: app.client_id };
    const results = await Promise.all(Array.from({ length: 5 }, () => redeem(tp.url, form)));
    const winners = results.filter((r) => r.status === 200);
    assert.ok(winners.length <= 1, `${winners.length} winners`);
    assert.ok(results.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.body.error === 'invalid_grant'));
    // Exactly one request took the code; every other one met a code already used.
    const replays = results.filter((r) => r.status === 400 && /already used/.test(r.body.error_description));
    assert.equal(replays.length, results.length - 1, JSON.stringify(results.map((r) => r.body)));
    // A code used more than once was intercepted: whatever it gave is revoked (OAuth 2.1 §4.1.3).
    for (const w of winners) {
      await rejectsWithCode(verifyAccessToken(tp.svc, w.body.access_token, user.mcpUrl), 'UNAUTHORIZED');
      assert.equal((await refresh(app.client_id, w.body.refresh_token)).body.error, 'invalid_grant');
    }
    assert.equal((await client.get('/api/connections')).body.length, 0);
  });

  it('treats an invalid replay (wrong verifier, other client, no verifier) of a redeemed code like a valid one: refused, and the tokens end', async () => {
    const { client, user, app } = await setup();
    const other = await register(tp.url);
    for (const replay of [
      (f: Record<string, string>) => ({ ...f, code_verifier: pkce().verifier }),
      (f: Record<string, string>) => ({ ...f, client_id: other.client_id }),
      ({ code_verifier: _v, ...f }: Record<string, string>) => f,
    ]) {
      const { verifier, challenge } = pkce();
      const form = { code: await codeFor(client, app.client_id, user.mcpUrl, challenge), code_verifier: verifier, redirect_uri: REDIRECT, client_id: app.client_id };
      const ok = await redeem(tp.url, form);
      assert.equal(ok.status, 200);
      const again = await redeem(tp.url, replay(form));
      assert.equal(again.status, 400);
      assert.equal(again.body.error, 'invalid_grant');
      await rejectsWithCode(verifyAccessToken(tp.svc, ok.body.access_token, user.mcpUrl), 'UNAUTHORIZED');
    }
  });

  it('spends a code on a failed attempt: the right verifier afterwards is refused too', async () => {
    const { client, user, app } = await setup();
    const { verifier, challenge } = pkce();
    const form = { code: await codeFor(client, app.client_id, user.mcpUrl, challenge), code_verifier: verifier, redirect_uri: REDIRECT, client_id: app.client_id };
    assert.equal((await redeem(tp.url, { ...form, code_verifier: pkce().verifier })).body.error, 'invalid_grant');
    const late = await redeem(tp.url, form);
    assert.equal(late.status, 400);
    assert.equal(late.body.error, 'invalid_grant');
  });
});

describe('OAuth: PKCE', () => {
  it('refuses a downgrade: the challenge itself as verifier (plain), a lowercase method, no verifier', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const code = await codeFor(client, app.client_id, user.mcpUrl, challenge);
    const plain = await redeem(tp.url, { code, code_verifier: challenge, redirect_uri: REDIRECT, client_id: app.client_id });
    assert.equal(plain.body.error, 'invalid_grant');
    const code2 = await codeFor(client, app.client_id, user.mcpUrl, pkce().challenge);
    const none = await redeem(tp.url, { code: code2, redirect_uri: REDIRECT, client_id: app.client_id });
    assert.equal(none.status, 400);
    assert.equal(none.body.error, 'invalid_request');
    for (const method of ['s256', 'plain', 'S512', '']) {
      const res = await client.get(
        authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: method, resource: user.mcpUrl, state: 'd' }),
      );
      assert.equal(res.status, 302, method);
      assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request', method);
    }
    // A challenge that is not a SHA-256 digest in base64url (too short, padded, standard base64).
    for (const bad of [challenge.slice(0, 42), `${challenge}=`, challenge.replace(/^./, '+'), `${challenge}A`]) {
      const res = await client.get(
        authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: bad, code_challenge_method: 'S256', resource: user.mcpUrl }),
      );
      assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request', bad);
    }
  });

  it('refuses a code_challenge that got a code before, from the same app or another (issue #40)', async () => {
    const { client, user, app } = await setup('reuse');
    const { challenge } = pkce();
    await codeFor(client, app.client_id, user.mcpUrl, challenge);
    const other = await register(tp.url);
    for (const clientId of [app.client_id, other.client_id]) {
      const again = await client.get(
        authorizeQuery({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl, state: 'again' }),
      );
      assert.equal(again.status, 302);
      const location = new URL(again.headers.get('location')!);
      assert.equal(location.searchParams.get('error'), 'invalid_request');
      assert.match(location.searchParams.get('error_description')!, /^This code_challenge was used for an earlier authorization: make a new code_verifier/);
      assert.equal(location.searchParams.get('state'), 'again');
    }
    // A fresh challenge is welcome.
    assert.ok(await codeFor(client, app.client_id, user.mcpUrl, pkce().challenge));
  });

  it('takes verifiers of 43 to 128 unreserved characters only, even when their hash matches (RFC 7636 §4.1)', async () => {
    const { client, user, app } = await setup();
    const good = ['a'.repeat(43), `${'A-._~'.repeat(25)}xyz`, 'Z'.repeat(128)];
    const bad = ['a'.repeat(42), 'b'.repeat(129), `${'c'.repeat(42)}+`, `${'d'.repeat(42)}/`, `${'e'.repeat(42)}=`, `${'f'.repeat(42)} `, `${'g'.repeat(42)}é`, `${'h'.repeat(42)}%41`];
    for (const verifier of [...good, ...bad]) {
      const code = await codeFor(client, app.client_id, user.mcpUrl, challengeOf(verifier));
      const res = await redeem(tp.url, { code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: app.client_id });
      if (good.includes(verifier)) assert.equal(res.status, 200, `${verifier}: ${res.text}`);
      else assert.equal(res.body.error, 'invalid_grant', verifier);
    }
  });
});

describe('OAuth: redirect URIs', () => {
  it('matches redirect URIs exactly: trailing slash, case, userinfo, traversal, other port, query, fragment all stop at an error page', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const tricks = [
      `${HTTPS_REDIRECT}/`,
      'https://APP.example.com/cb',
      'https://app.example.com/CB',
      'https://app.example.com/cb/../cb',
      'https://app.example.com/x/../cb',
      'https://app.example.com/cb/..%2f..%2fevil',
      'https://app.example.com/cb%2f..%2fevil',
      'https://app.example.com:8443/cb',
      'https://app.example.com:443/cb',
      'https://app.example.com/cb?next=https://evil.example',
      'https://app.example.com/cb#x',
      'https://app.example.com.evil.example/cb',
      'https://app.example.com@evil.example/cb',
      'https://evil.example@app.example.com/cb',
      'https://evil.example/cb',
      'http://app.example.com/cb',
      '//evil.example/cb',
      'http://127.0.0.1:9999/callback/',
      'http://127.0.0.1:9999/Callback',
      'http://127.0.0.1:9999/callback/../callback',
      'http://127.0.0.1:9999@evil.example/callback',
      'http://localhost:9999/callback',
      'http://[::1]:9999/callback',
      'http://127.0.0.2:9999/callback',
      'HTTP://127.0.0.1:9999/callback',
      'http://127.0.0.1:09999/callback',
    ];
    for (const redirect_uri of tricks) {
      const res = await client.get(
        authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl, state: 'r' }),
      );
      assert.equal(res.status, 400, redirect_uri);
      assert.equal(res.headers.get('location'), null, redirect_uri);
    }
    // The loopback exception (RFC 8252 §7.3) is the port only, and only for the registered spelling.
    const port = await client.get(
      authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: 'http://127.0.0.1:40000/callback', code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl }),
    );
    assert.equal(port.status, 200);
  });

  it('refuses dangerous schemes and hosts at registration, however they are spelled', async () => {
    const c = new Client(tp.url);
    for (const uri of [
      'JAVASCRIPT:alert(1)',
      ' javascript:alert(1)',
      'java\tscript:alert(1)',
      'javascript://app.example.com/%0aalert(1)',
      'vbscript:msgbox(1)',
      'data:text/html;base64,PHNjcmlwdD4=',
      'DATA:text/html,x',
      'file:///etc/passwd',
      'FILE://localhost/etc/passwd',
      'blob:https://app.example.com/uuid',
      'about:blank',
      'ws://127.0.0.1/cb',
      'http://10.0.0.1/cb',
      'http://192.168.1.1/cb',
      'http://localhost.evil.example/cb',
      'http://127.0.0.1.nip.io/cb',
      'http://0.0.0.0/cb',
      'https://app.example.com\\@evil.example/cb',
    ]) {
      const res = await c.post('/oauth/register', { redirect_uris: [uri] });
      assert.equal(res.status, 400, uri);
      assert.equal(res.body.error, 'invalid_redirect_uri', uri);
    }
  });

  it('answers invalid_target for any spelling of an MCP URL but the exact one', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const u = new URL(user.mcpUrl);
    for (const resource of [
      `${user.mcpUrl}/`,
      `${user.mcpUrl}?x=1`,
      `${user.mcpUrl}#f`,
      user.mcpUrl.replace('/mcp', '/MCP'),
      `${u.protocol}//localhost:${u.port}${u.pathname}`,
      user.mcpUrl.replace('http:', 'https:'),
      `${u.origin}/u/${u.pathname.split('/')[2]}x/mcp`,
    ]) {
      const res = await client.get(
        authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource, state: 't' }),
      );
      assert.equal(res.status, 302, resource);
      assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_target', resource);
    }
  });
});

describe('OAuth: access tokens', () => {
  /** A token with our real signing key and chosen header and claims. */
  async function mint(claims: JWTPayload, header: Record<string, unknown> = {}) {
    const { kid, key } = await keyStore(tp.svc).signingKey();
    return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid, ...header }).sign(key);
  }

  it('refuses a token for person A\'s URL on person B\'s URL, and every key confusion', async () => {
    const a = await setup('aud-a');
    const b = await setup('aud-b');
    const tokens = await connect(tp.url, a.client, a.app.client_id, a.user.mcpUrl);
    await verifyAccessToken(tp.svc, tokens.access_token, a.user.mcpUrl);
    await rejectsWithCode(verifyAccessToken(tp.svc, tokens.access_token, b.user.mcpUrl), 'UNAUTHORIZED');
    // The real claims re-audienced to B, signed by our key, still name A's grant: refused.
    const claims = decodeJwt(tokens.access_token);
    await rejectsWithCode(verifyAccessToken(tp.svc, await mint({ ...claims, aud: b.user.mcpUrl }), b.user.mcpUrl), 'UNAUTHORIZED');
    // A second audience next to the right one is refused: aud must be exactly this URL.
    await rejectsWithCode(verifyAccessToken(tp.svc, await mint({ ...claims, aud: [a.user.mcpUrl, b.user.mcpUrl] }), a.user.mcpUrl), 'UNAUTHORIZED');

    const { kid } = decodeProtectedHeader(tokens.access_token);
    const stranger = await generateKeyPair('ES256', { extractable: true });
    const strangerJwk = await exportJWK(stranger.publicKey);
    const signWithStranger = (header: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', ...header }).sign(stranger.privateKey);
    for (const forged of [
      await signWithStranger({ kid }), // an unknown key under our kid
      await signWithStranger({ kid: 'kid_attacker' }),
      await signWithStranger({ kid: 'https://evil.example/jwks.json' }),
      await signWithStranger({ kid: '../../../../dev/null' }),
      await signWithStranger({}), // no kid
      await signWithStranger({ kid: 'kid_attacker', jwk: strangerJwk }), // a key carried in the header
      await signWithStranger({ kid, jku: 'https://evil.example/jwks.json' }),
    ]) {
      await rejectsWithCode(verifyAccessToken(tp.svc, forged, a.user.mcpUrl), 'UNAUTHORIZED');
    }
  });

  it('refuses expired and not-yet-valid tokens, a life longer than issued, and a wrong type, issuer or missing claim', async () => {
    const { client, user, app } = await setup();
    const tokens = await connect(tp.url, client, app.client_id, user.mcpUrl);
    const claims = decodeJwt(tokens.access_token);
    const now = Math.floor(Date.now() / 1000);
    // Our key, the real claims: accepted, so each refusal below is for the one thing changed.
    await verifyAccessToken(tp.svc, await mint({ ...claims, jti: randomUUID() }), user.mcpUrl);
    const { iat: _iat, ...noIat } = claims;
    const { gid: _gid, ...noGid } = claims;
    for (const [why, token] of [
      ['expired', await mint({ ...claims, iat: now - 700, exp: now - 100 })],
      ['nbf in the future', await mint({ ...claims, nbf: now + 600 })],
      ['iat in the future', await mint({ ...claims, iat: now + 600, exp: now + 1200 })],
      ['a day-long life', await mint({ ...claims, iat: now - 3600, exp: now + 86_400 })],
      ['no iat', await mint(noIat)],
      ['no grant', await mint(noGid)],
      ['another issuer', await mint({ ...claims, iss: 'https://evil.example' })],
      ['issuer with a trailing slash', await mint({ ...claims, iss: `${tp.config.publicUrl}/` })],
      ['typ JWT', await mint(claims, { typ: 'JWT' })],
      ['another person as sub', await mint({ ...claims, sub: 'usr_other' })],
      ['another client', await mint({ ...claims, client_id: 'cli_other' })],
    ] as const) {
      await rejectsWithCode(verifyAccessToken(tp.svc, token, user.mcpUrl), 'UNAUTHORIZED').catch((err) => {
        throw new Error(`${why}: ${err.message}`);
      });
    }
  });
});

describe('OAuth: refresh tokens and revocation', () => {
  it('refuses another client\'s refresh token and another resource, without ending the owner\'s connection', async () => {
    const { client, user, app } = await setup();
    const other = await register(tp.url);
    const tokens = await connect(tp.url, client, app.client_id, user.mcpUrl);
    assert.equal((await refresh(other.client_id, tokens.refresh_token)).body.error, 'invalid_grant');
    const someoneElse = await newPerson(tp.url);
    assert.equal((await refresh(app.client_id, tokens.refresh_token, { resource: someoneElse.user.mcpUrl })).body.error, 'invalid_target');
    assert.equal((await refresh(app.client_id, tokens.refresh_token, { scope: 'tools admin' })).body.error, 'invalid_scope');
    // None of those spent it or ended the connection.
    const ok = await refresh(app.client_id, tokens.refresh_token);
    assert.equal(ok.status, 200, ok.text);
    await verifyAccessToken(tp.svc, ok.body.access_token, user.mcpUrl);
  });

  it('ignores a revocation by another client (200, nothing ends), and ends the grant for the owner', async () => {
    const { client, user, app } = await setup();
    const other = await register(tp.url);
    const tokens = await connect(tp.url, client, app.client_id, user.mcpUrl);
    for (const token of [tokens.refresh_token, tokens.access_token]) {
      const res = await postForm(new Client(tp.url), '/oauth/revoke', { token, client_id: other.client_id });
      assert.equal(res.status, 200);
    }
    await verifyAccessToken(tp.svc, tokens.access_token, user.mcpUrl);
    assert.equal((await postForm(new Client(tp.url), '/oauth/revoke', { token: tokens.access_token, client_id: app.client_id })).status, 200);
    await rejectsWithCode(verifyAccessToken(tp.svc, tokens.access_token, user.mcpUrl), 'UNAUTHORIZED');
    assert.equal((await refresh(app.client_id, tokens.refresh_token)).body.error, 'invalid_grant');
  });
});

describe('OAuth: consent page', () => {
  it('cannot be framed, and is not cached', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const q = authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl });
    const pages = [
      await client.get(q), // consent
      await new Client(tp.url).get(q), // sign-in
      await client.get(authorizeQuery({ client_id: 'cli_nope' })), // error page
    ];
    for (const page of pages) {
      assert.match(page.headers.get('content-type')!, /text\/html/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
      assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
      assert.match(page.headers.get('cache-control')!, /no-store/);
    }
    // The dashboard's own CSP (frame-ancestors 'none') is checked in test/dashboard.test.ts.
  });

  it('refuses a sign-in form without its CSRF cookie, or from another site', async () => {
    const { app, user, email, password } = await setup();
    const { challenge } = pkce();
    const q = authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl });
    const browser = new Client(tp.url);
    const login = await browser.get(q);
    const fields = hiddenFields(login.text);
    assert.ok(fields.csrf_token);
    const stranger = new Client(tp.url); // no CSRF cookie: a form posted from elsewhere
    const forged = await postForm(stranger, '/oauth/login', { ...fields, email, password });
    assert.equal(forged.status, 403);
    assert.equal(stranger.cookies.size, 0);
    const foreign = await postForm(browser, '/oauth/login', { ...fields, email, password }, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    const ok = await postForm(browser, '/oauth/login', { ...fields, email, password });
    assert.equal(ok.status, 303);
  });
});

describe('OAuth: one issuer everywhere', () => {
  it('names the same issuer in both metadata documents, every person\'s resource metadata, the token, the JWKS and the redirect', async () => {
    const c = new Client(tp.url);
    const issuer = tp.config.publicUrl;
    const as = (await c.get('/.well-known/oauth-authorization-server')).body;
    const oidc = (await c.get('/.well-known/openid-configuration')).body;
    assert.equal(as.issuer, issuer);
    assert.equal(oidc.issuer, issuer);
    for (const key of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'jwks_uri']) {
      assert.ok(as[key].startsWith(`${issuer}/`), key);
    }
    const people = [await setup('iss-a'), await setup('iss-b')];
    for (const p of people) {
      const path = new URL(p.user.mcpUrl).pathname;
      const prm = (await c.get(`/.well-known/oauth-protected-resource${path}`)).body;
      assert.equal(prm.resource, p.user.mcpUrl);
      assert.deepEqual(prm.authorization_servers, [issuer]);
      // The 401 challenge points at that same document.
      const res = await fetch(p.user.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
      assert.ok(res.headers.get('www-authenticate')!.includes(`resource_metadata="${issuer}/.well-known/oauth-protected-resource${path}"`));
    }
    const p = people[0]!;
    const { verifier, challenge } = pkce();
    const page = await p.client.get(
      authorizeQuery({ response_type: 'code', client_id: p.app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: p.user.mcpUrl, state: 'i' }),
    );
    const decided = await postForm(p.client, '/oauth/authorize/decision', { ...hiddenFields(page.text), decision: 'allow' });
    const location = new URL(decided.headers.get('location')!);
    assert.equal(location.searchParams.get('iss'), issuer);
    const tokens = await redeem(tp.url, { code: location.searchParams.get('code')!, code_verifier: verifier, redirect_uri: REDIRECT, client_id: p.app.client_id });
    const claims = decodeJwt(tokens.body.access_token);
    assert.equal(claims.iss, issuer);
    assert.equal(claims.aud, p.user.mcpUrl);
    const jwks = (await c.get(new URL(as.jwks_uri).pathname)).body;
    assert.ok(jwks.keys.some((k: { kid: string }) => k.kid === decodeProtectedHeader(tokens.body.access_token).kid));
  });
});

describe('OAuth: forms as browsers send them', () => {
  const consentPage = async (person: Client, clientId: string, resource: string) => {
    const { challenge } = pkce();
    const page = await person.get(
      authorizeQuery({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource, scope: 'tools', state: 'f' }),
    );
    assert.equal(page.status, 200, page.text.slice(0, 300));
    return hiddenFields(page.text);
  };

  it('takes our own form with Origin null or none, and refuses one another site sent, however it is marked', async () => {
    const { client, user, app } = await setup();
    const own = new URL(tp.url).origin;
    const foreign: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'cross-site', origin: 'null' },
      { 'sec-fetch-site': 'same-site', origin: 'https://sub.example.com' },
      { 'sec-fetch-site': 'cross-site', origin: own }, // a browser's word over a copied Origin
      { origin: 'https://evil.example' },
    ];
    for (const headers of foreign) {
      const res = await postForm(client, '/oauth/authorize/decision', { ...(await consentPage(client, app.client_id, user.mcpUrl)), decision: 'allow' }, headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.match(res.text, /sent from another site/);
    }
    assert.equal((await client.get('/api/connections')).body.length, 0, 'nothing was issued');
    const ours: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'same-origin', origin: 'null' }, // Chromium under no-referrer
      { origin: 'null' }, // a browser without Fetch metadata, privacy mode
      {}, // no Origin at all
      { 'sec-fetch-site': 'same-origin', origin: own },
    ];
    for (const headers of ours) {
      const res = await postForm(client, '/oauth/authorize/decision', { ...(await consentPage(client, app.client_id, user.mcpUrl)), decision: 'allow' }, headers);
      assert.equal(res.status, 303, `${JSON.stringify(headers)}: ${res.text.slice(0, 200)}`);
      assert.ok(new URL(res.headers.get('location')!).searchParams.get('code'));
    }
  });

  it('signs in from the consent page with Origin null, and refuses the sign-in form from another site', async () => {
    const { app, user, email, password } = await setup();
    const { challenge } = pkce();
    const q = authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl });
    const browser = new Client(tp.url);
    const fields = hiddenFields((await browser.get(q)).text);
    const cross = await postForm(browser, '/oauth/login', { ...fields, email, password }, { 'sec-fetch-site': 'cross-site', origin: 'null' });
    assert.equal(cross.status, 403);
    assert.equal(browser.cookies.has('tp_session'), false);
    const ok = await postForm(browser, '/oauth/login', { ...fields, email, password }, { 'sec-fetch-site': 'same-origin', origin: 'null' });
    assert.equal(ok.status, 303, ok.text.slice(0, 200));
  });

  it('sends pages that post forms with Referrer-Policy same-origin, so the browser sends the real Origin', async () => {
    const { client, user, app } = await setup();
    const { challenge } = pkce();
    const q = authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl });
    for (const res of [await client.get(q), await new Client(tp.url).get(q)]) {
      assert.equal(res.headers.get('referrer-policy'), 'same-origin');
      assert.match(res.text, /<meta name="referrer" content="same-origin">/);
    }
    const decided = await postForm(client, '/oauth/authorize/decision', { ...hiddenFields((await client.get(q)).text), decision: 'deny' });
    assert.equal(decided.headers.get('referrer-policy'), 'same-origin', 'the redirect to the app carries no Referer either');
  });

  it('answers a replayed consent form once: one connection, and a clear sentence for the replay', async () => {
    const { client, user, app } = await setup();
    const form = { ...(await consentPage(client, app.client_id, user.mcpUrl)), decision: 'allow' };
    const first = await postForm(client, '/oauth/authorize/decision', form);
    assert.equal(first.status, 303);
    const again = await postForm(client, '/oauth/authorize/decision', form);
    assert.equal(again.status, 409);
    assert.equal(again.headers.get('location'), null);
    assert.match(again.text, /already answered this request/);
    assert.equal((await client.get('/api/connections')).body.length, 1);
    // The first answer's code still works.
    assert.ok(new URL(first.headers.get('location')!).searchParams.get('code'));
  });

  it('never sends a signed-out visitor to an unvouched redirect URI: a bad request is shown on our error page', async () => {
    const { user, app } = await setup();
    const { challenge } = pkce();
    const base = { response_type: 'code', client_id: app.client_id, redirect_uri: HTTPS_REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: user.mcpUrl, state: 'x' };
    for (const bad of [{ scope: 'admin' }, { code_challenge: undefined }, { code_challenge_method: 'plain' }, { resource: 'https://elsewhere.example/mcp' }, { response_type: 'token' }]) {
      const res = await new Client(tp.url).get(authorizeQuery({ ...base, ...bad }));
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(res.headers.get('location'), null, JSON.stringify(bad));
      assert.match(res.headers.get('content-type')!, /text\/html/);
      assert.match(res.text, /sign-in link cannot be used/);
    }
  });

  it('refuses redirect URIs that hand the code to an OS handler, name no host, or hide characters', async () => {
    const c = new Client(tp.url);
    for (const uri of [
      'ms-msdt:/id PCWDiagnostic',
      'ms-msdt:/cb',
      'search-ms:query=x',
      'shell:startup',
      'myapp:/callback',
      'https:///cb',
      'https:///app.example.com/cb',
      'https://app.example.com/c\u202Eb',
      'https://app.example.com/cb\u200B',
      'https://app\u00ADexample.com/cb',
      'com.example.app:/cb\u2066',
    ]) {
      const res = await c.post('/oauth/register', { redirect_uris: [uri] });
      assert.equal(res.status, 400, JSON.stringify(uri));
      assert.equal(res.body.error, 'invalid_redirect_uri', uri);
    }
    const ok = await c.post('/oauth/register', { redirect_uris: ['com.example.app:/oauth', 'https://app.example.com/cb', 'http://127.0.0.1:3000/cb'] });
    assert.equal(ok.status, 201, ok.text);
  });
});
