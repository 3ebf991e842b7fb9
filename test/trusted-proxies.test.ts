import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from './helpers/http';
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
