import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiRoutes } from './helpers/routes';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Every /api route, enumerated from the app itself (as the tenancy suite does), answers 401
 * problem+json without credentials and with bad ones. A route added without auth fails here unless
 * it is named public below, with the reason.
 */
let tp: Toolport;
before(async () => {
  tp = await startToolport();
});
after(async () => {
  await tp?.stop();
});

const PUBLIC: Record<string, string> = {
  'POST /api/session/signup': 'makes an account: its credentials are the email and password it is given',
  'POST /api/session/login': 'signs in: its credentials are the email and password it is given',
  'POST /api/session/reset-request': 'mails a reset link to an account’s own email; the same answer whether or not one exists',
  'POST /api/session/reset': 'its credential is the one-time link mailed to the account',
  'POST /api/session/verify-email': 'its credential is the one-time link mailed to the account',
  'POST /api/session/passkey/options': 'a one-time challenge for any passkey, before anyone is known; bounded per address',
  'POST /api/session/passkey': 'signs in: its credential is the passkey’s signature over that challenge',
  'GET /api/session': 'who the cookie signs in, or nobody: answers only the cookie’s own person, and 200 signed out so a signed-out dashboard logs no failed request',
  'GET /api/push/key': "the server's public Web Push key, which a browser needs before it subscribes",
  'GET /api/catalog/servers.json': 'approved public listings as MCP registry entries, which registries read without an account',
  'GET /api/catalog/:addonId/server.json': 'one approved public listing as an MCP registry entry, which registries read without an account',
};

/** Routes whose credential travels in the body rather than a cookie or bearer: what to send instead. */
const BODY_CREDENTIAL: Record<string, { none: unknown; bad: unknown }> = {
  // A notification's action: the approval's single-use token is the capability.
  'POST /api/push/decision': { none: { decision: 'allow' }, bad: { approvalId: 'apr_x', decision: 'allow', token: 'forged-token-forged-token-forged-token-0' } },
};

describe('authentication: every /api route', () => {
  it('names only routes that exist as public or as taking their credential in the body', () => {
    const routes = apiRoutes(tp.svc);
    assert.ok(routes.length >= 30, routes.join('\n'));
    assert.deepEqual([...Object.keys(PUBLIC), ...Object.keys(BODY_CREDENTIAL)].filter((r) => !routes.includes(r)), []);
  });

  it('answers 401 problem+json without credentials and with bad credentials on every other route', async () => {
    const anon = new Client(tp.url);
    const badKey = new Client(tp.url, 'tpk_not-a-real-key');
    const badCookie = new Client(tp.url);
    badCookie.cookies.set('tp_session', 'tps_forged');
    const wrong: string[] = [];
    let checked = 0;
    for (const route of apiRoutes(tp.svc)) {
      if (route in PUBLIC) continue;
      const [method, pattern] = route.split(' ') as [string, string];
      const path = pattern.replace(/:[A-Za-z]+/g, 'x');
      const inBody = BODY_CREDENTIAL[route];
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      for (const [who, client, sent] of [
        ['no credentials', anon, inBody?.none ?? body],
        ['a bad API key', badKey, inBody?.bad ?? body],
        ['a forged session cookie', badCookie, inBody?.bad ?? body],
      ] as const) {
        const res = await client.request(method, path, sent);
        checked++;
        if (res.status !== 401 || res.headers.get('content-type') !== 'application/problem+json') {
          wrong.push(`${route} with ${who} → ${res.status} ${res.headers.get('content-type')}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
    assert.ok(checked >= 90, `${checked} requests`);
  });

  it('GET /api/session tells nobody but the cookie\'s own person who is signed in', async () => {
    const forged = new Client(tp.url);
    forged.cookies.set('tp_session', 'tps_forged');
    for (const client of [new Client(tp.url), forged, new Client(tp.url, 'tpk_not-a-real-key')]) {
      const res = await client.get('/api/session');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { person: null });
    }
    const person = await newPerson(tp.url, 'session');
    const mine = await person.client.get('/api/session');
    assert.deepEqual([mine.status, mine.body.person.id, mine.body.person.email], [200, person.user.id, person.email]);
    await person.client.post('/api/session/logout');
    assert.deepEqual((await person.client.get('/api/session')).body, { person: null }, 'signed out');
  });

  it('refuses a revoked API key on the live delivery stream before any stream opens', async () => {
    const person = await newPerson(tp.url, 'revoked');
    const made = await person.client.post('/api/keys', { name: 'dev' });
    assert.equal(made.status, 201, made.text);
    const live = () => fetch(`${tp.url}/api/addons/any-addon/deliveries/live`, { headers: { authorization: `Bearer ${made.body.key}`, accept: 'text/event-stream' } });
    const before = await live();
    assert.equal(before.status, 404, 'the key works until revoked (no such add-on)');
    await before.body?.cancel();
    assert.ok((await person.client.delete(`/api/keys/${made.body.id}`)).status < 300);
    const res = await live();
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
  });
});
