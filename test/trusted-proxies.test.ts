import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from './helpers/http';
import { authorizeQuery, connect, personWithClient, pkce, REDIRECT } from './helpers/oauth-flow';
import { startToolport, type Toolport } from './helpers/target';

let direct: Toolport;
let proxied: Toolport;
before(async () => {
  direct = await startToolport();
  proxied = await startToolport({ env: { TRUSTED_PROXIES: '1' } });
});
after(async () => {
  await direct?.stop();
  await proxied?.stop();
});

// 20 failed sign-ins from one address lock that address (emails differ, so only the address counts).
async function failFrom(tp: Toolport, forwardedFor: string, n: number) {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await new Client(tp.url).post(
      '/api/session/login',
      { email: `nobody-${forwardedFor}-${i}@example.com`, password: 'wrong password' },
      { 'x-forwarded-for': forwardedFor },
    );
    statuses.push(res.status);
  }
  return statuses;
}

describe('client addresses behind a load balancer', () => {
  it('behind one trusted proxy, throttles by the forwarded address, each address on its own', async () => {
    const first = await failFrom(proxied, '203.0.113.7', 21);
    assert.deepEqual(first.slice(0, 20), Array(20).fill(401));
    assert.equal(first[20], 429);
    assert.deepEqual(await failFrom(proxied, '198.51.100.9', 1), [401], 'another client behind the same proxy is not locked');
  });

  it('without trusted proxies, a forged X-Forwarded-For does not escape the throttle', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push(...(await failFrom(direct, `192.0.2.${i}`, 1)));
    assert.equal(statuses[20], 429, 'every attempt counted against the one real address');
  });

  it('reports a bad TRUSTED_PROXIES at start', async () => {
    const { parseConfig } = await import('@toolport/core');
    assert.throws(() => parseConfig({ TRUSTED_PROXIES: 'many' }), /TRUSTED_PROXIES/);
    assert.equal(parseConfig({ TRUSTED_PROXIES: '2' }).trustedProxies, 2);
    assert.equal(parseConfig({}).trustedProxies, 0);
  });
});

describe('dynamic client registration by network (issue #40)', () => {
  const registerFrom = (address: string) =>
    new Client(proxied.url).post('/oauth/register', { client_name: 'Flood', redirect_uris: [REDIRECT] }, { 'x-forwarded-for': address });

  it('counts an IPv6 /64 as one network: 25 addresses of one /64 register 20 clients', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 25; i++) statuses.push((await registerFrom(`2001:db8:77:1:${i.toString(16)}::${i}`)).status);
    assert.deepEqual(statuses, [...Array(20).fill(201), ...Array(5).fill(429)]);
    const refused = await registerFrom('2001:db8:77:1::ffff');
    assert.equal(refused.body.error_description, 'Too many client registrations from this network. Try again later.');
    assert.equal((await registerFrom('2001:db8:77:2::1')).status, 201, 'the next /64 is another network');
    assert.equal((await registerFrom('198.51.100.77')).status, 201, 'an IPv4 address is its own');
  });

  it('removes a registration nobody let in within a day, never one a person let in', async () => {
    const unused = (await registerFrom('198.51.100.80')).body.client_id as string;
    const person = await personWithClient(proxied.url, 'dcr-used');
    const used = person.app.client_id;
    await connect(proxied.url, person.client, used, person.user.mcpUrl);
    const authorizePage = (clientId: string) =>
      person.client.get(authorizeQuery({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: person.user.mcpUrl }));
    assert.equal((await authorizePage(unused)).status, 200, 'a day has not passed: the consent page');

    const realClock = proxied.svc.clock;
    proxied.svc.clock = { now: () => new Date(Date.now() + 25 * 3600_000) };
    try {
      assert.equal((await registerFrom('198.51.100.81')).status, 201);
    } finally {
      proxied.svc.clock = realClock;
    }
    const gone = await authorizePage(unused);
    assert.equal(gone.status, 400);
    assert.match(gone.text, /This app is not registered with Toolport/);
    assert.equal((await authorizePage(used)).status, 200, 'the app the person let in stays registered');
  });
});
