import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import { hashPassword } from '../packages/core/src/crypto';
import { users } from '../packages/core/src/db/schema/index';
import { newId } from '../packages/core/src/ids';
import { spawnToolport } from './helpers/process';
import { Client, newPerson, type Reply } from './helpers/http';
import { createBacking, freePort, startToolport, TARGET, type Backing, type Toolport } from './helpers/target';
import { authorizeQuery, hiddenFields, pkce, postForm, register, REDIRECT } from './helpers/oauth-flow';
import { launchBrowser, newContext, signInOnDashboard } from './helpers/browser';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';

/**
 * Sign-in limits under concurrency (docs/security.md, "Sign-in"): wrong passwords are counted before
 * the password is checked, per account and client address, so no burst gets more than the allowance
 * checked, and an attacker's address never locks the person out from their own.
 */
const ALLOWED_FAILURES = 5; // per account and address, per 15 minutes
const ADDRESS_FAILURES = 20; // per address, across accounts
const UNKNOWN_DEVICE_FAILURES = 10; // per account, from every browser it has not seen, together

let tp: Toolport;
before(async () => { tp = await startToolport({ env: { TRUSTED_PROXIES: '1' } }); });
after(async () => { await tp?.stop(); });

const login = (url: string, email: string, password: string, from?: string) =>
  new Client(url).post('/api/session/login', { email, password }, from ? { 'x-forwarded-for': from } : {});

/** 99 wrong passwords and the right one, all at once; the right one is sent last. */
async function burst(urls: string[], email: string, password: string, from?: string) {
  const attempts = Array.from({ length: 100 }, (_, i) => (i === 99 ? password : `wrong password ${i}`));
  const replies = await Promise.all(attempts.map((p, i) => login(urls[i % urls.length]!, email, p, from)));
  return { replies, right: replies[99]! };
}

function assertBounded(t: TestContext, replies: Reply[], right: Reply) {
  const count = (s: number) => replies.filter((r) => r.status === s).length;
  const seen = `statuses seen: 401 × ${count(401)}, 429 × ${count(429)}, 200 × ${count(200)}`;
  t.diagnostic(seen);
  assert.equal(count(401) + count(429) + count(200), replies.length, seen);
  assert.ok(count(401) <= ALLOWED_FAILURES, `at most ${ALLOWED_FAILURES} wrong passwords checked; ${seen}`);
  assert.ok(count(401) >= 1, seen);
  assert.ok(replies.slice(0, 99).every((r) => r.status !== 200), 'no wrong password gets in');
  assert.ok(count(429) >= replies.length - ALLOWED_FAILURES - 1, seen);
  for (const r of replies.filter((x) => x.status === 429)) {
    assert.equal(r.body.detail.startsWith('Too many failed sign-ins'), true, r.body.detail);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
  }
  // Sent last, the right password finds the allowance spent: refused like the others, never after
  // the 99 wrong ones were all checked (what the old read-then-write lock did).
  assert.equal(right.status, 429, seen);
}

describe('sign-in limits against many addresses (device cookies)', () => {
  it('1,000 wrong passwords from 100 addresses check at most the account’s allowance for unknown browsers, and the owner’s browser still signs in', async (t) => {
    await ensureDashboardBuilt();
    const owner = await newPerson(tp.url, 'devices');
    const { browser, close } = await launchBrowser();
    try {
      // The owner's browser signed in before, behind the deployment's proxy, and signed out again.
      const ctx = await newContext(browser, tp.url);
      await ctx.setExtraHTTPHeaders({ 'x-forwarded-for': '198.51.100.7' });
      const page = await ctx.newPage();
      await signInOnDashboard(page, owner.email, owner.password);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();

      const statuses: number[] = [];
      for (let batch = 0; batch < 20; batch++) {
        const replies = await Promise.all(
          Array.from({ length: 50 }, (_, i) => login(tp.url, owner.email, `guess ${batch}-${i}`, `203.0.113.${(batch * 50 + i) % 100}`)),
        );
        statuses.push(...replies.map((r) => r.status));
      }
      const count = (s: number) => statuses.filter((x) => x === s).length;
      t.diagnostic(`1,000 guesses from 100 addresses: 401 × ${count(401)}, 429 × ${count(429)}`);
      assert.equal(count(200), 0);
      assert.ok(count(401) <= UNKNOWN_DEVICE_FAILURES, `at most ${UNKNOWN_DEVICE_FAILURES} passwords checked (401 × ${count(401)})`);
      assert.equal(count(401) + count(429), 1000);
      // Even the right password, from a browser the account has not seen, waits.
      const stranger = await login(tp.url, owner.email, owner.password, '192.0.2.200');
      assert.equal(stranger.status, 429);
      assert.match(stranger.body.detail, /from browsers it has not seen before\. Sign in from a browser you have used with Toolport before, reset your password, or try again in \d+ minutes?\.$/);

      // The owner's browser is not locked out.
      await signInOnDashboard(page, owner.email, owner.password);
      // A forged device cookie (another account's, or made up) is an unknown browser.
      const forged = await new Client(tp.url).post('/api/session/login', { email: owner.email, password: owner.password }, {
        'x-forwarded-for': '192.0.2.201',
        cookie: `tp_device=${(await ctx.cookies()).find((c) => c.name === 'tp_device')!.value.replace(/\.[^.]+$/, '.forged')}`,
      });
      assert.equal(forged.status, 429);
      const othersCookie = await new Client(tp.url).post('/api/session/login', { email: owner.email, password: owner.password }, {
        'x-forwarded-for': '192.0.2.202',
        cookie: `tp_device=${(await newPerson(tp.url, 'other-device')).client.cookies.get('tp_device')}`,
      });
      assert.equal(othersCookie.status, 429, 'another account’s device cookie is not this account’s');
    } finally {
      await close();
    }
  });
});

describe('sign-in limits under concurrency', () => {
  it('checks at most 5 of 100 parallel attempts on one account from one address, and refuses the rest with a clear sentence', async (t) => {
    const { email, password, user } = await newPerson(tp.url);
    const from = '203.0.113.10';
    const { replies, right } = await burst([tp.url], email, password, from);
    assertBounded(t, replies, right);

    const refused = await login(tp.url, email, password, from);
    assert.equal(refused.status, 429, 'the address stays refused for this account');
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.match(refused.body.detail, /^Too many failed sign-ins to this account from your network\. Try again in \d+ minutes?\.$/);
    const seconds = Number(refused.headers.get('retry-after'));
    assert.ok(seconds > 0 && seconds <= 15 * 60, `Retry-After ${seconds}`);

    // The OAuth sign-in form shares the count.
    const app = await register(tp.url);
    const q = authorizeQuery({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: user.mcpUrl });
    const browser = new Client(tp.url);
    const form = await browser.get(q, { 'x-forwarded-for': from });
    const page = await postForm(browser, '/oauth/login', { ...hiddenFields(form.text), email, password }, { 'x-forwarded-for': from });
    assert.equal(page.status, 429);
    assert.match(page.text, /Too many failed sign-ins to this account from your network/);
    assert.ok(Number(page.headers.get('retry-after')) > 0);
  });

  it('holds the same bound across two API processes on one database', { skip: TARGET !== 'services' && 'needs Postgres (two processes share it)' }, async (t) => {
    const backing: Backing = await createBacking({ label: 'tp_signin' });
    const procs: ChildProcess[] = [];
    try {
      const ports = [await freePort(), await freePort()];
      const publicUrl = `http://127.0.0.1:${ports[0]}`;
      // Both start at once: starting is most of this test's time.
      await Promise.all(ports.map((port) => spawnToolport(procs, { env: backing.env, role: 'api', port, publicUrl })));
      const urls = ports.map((p) => `http://127.0.0.1:${p}`);
      const { email, password } = await newPerson(urls[0]!);
      // No trusted proxies: both processes count the socket's address, 127.0.0.1.
      const { replies, right } = await burst(urls, email, password);
      assertBounded(t, replies, right);
      const split = urls.map((_, k) => replies.filter((r, i) => i % urls.length === k && r.status === 429).length);
      assert.ok(split.every((n) => n > 0), `both processes refused attempts: ${split}`);
      for (const url of urls) assert.equal((await login(url, email, password)).status, 429, `${url} refuses the right password too`);
    } finally {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
      await backing.drop();
    }
  });

  it('locks the attacker\'s address for the account, never the person at their own address', async () => {
    const { email, password } = await newPerson(tp.url);
    const attacker = '198.51.100.66';
    const person = '192.0.2.23';
    for (let i = 0; i < ALLOWED_FAILURES; i++) assert.equal((await login(tp.url, email, `guess ${i}`, attacker)).status, 401);
    const refused = await login(tp.url, email, password, attacker);
    assert.equal(refused.status, 429, 'the attacker\'s address is refused even the right password');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);

    const mine = await login(tp.url, email, password, person);
    assert.equal(mine.status, 200, 'the person signs in from another address');
    assert.equal(mine.body.user.email, email);
    assert.equal((await login(tp.url, email, 'one typo', person)).status, 401, 'and has their own allowance there');
    assert.equal((await login(tp.url, email, password, person)).status, 200);
    assert.equal((await login(tp.url, email, password, attacker)).status, 429, 'the person\'s sign-in does not unlock the attacker');

    const clock = tp.svc.clock;
    try {
      tp.svc.clock = { now: () => new Date(Date.now() + 15 * 60 * 1000 + 1000) };
      assert.equal((await login(tp.url, email, password, attacker)).status, 200, 'the lock ends with its 15 minutes');
    } finally {
      tp.svc.clock = clock;
    }
  });

  it('does not spend an address\'s allowance on successful sign-ins, and a success resets only its own address\'s count', async () => {
    // 30 people sign in from one address (ten at a time), then the address still has its 20 failures.
    // The accounts are written straight to the database with one hash: sign-ups would cost 30 scrypts.
    const office = '192.0.2.77';
    const password = 'correct horse battery';
    const passwordHash = await hashPassword(password);
    const people = Array.from({ length: 30 }, (_, i) => ({ email: `office-${i}-${process.pid}@example.com`, password }));
    await tp.svc.db.insert(users).values(people.map((p) => ({ id: newId('usr'), email: p.email, passwordHash, userKey: randomBytes(18).toString('base64url') })));
    for (let i = 0; i < people.length; i += 10) {
      const batch = await Promise.all(people.slice(i, i + 10).map((p) => login(tp.url, p.email, p.password, office)));
      assert.deepEqual(batch.map((r) => r.status), Array(10).fill(200));
    }
    const failed = await Promise.all(Array.from({ length: ADDRESS_FAILURES - 1 }, (_, i) => login(tp.url, `nobody-${i}@example.com`, 'wrong password', office)));
    assert.deepEqual(failed.map((r) => r.status), Array(ADDRESS_FAILURES - 1).fill(401));
    assert.equal((await login(tp.url, 'nobody-last@example.com', 'wrong password', office)).status, 401, 'the 20th failure is still checked');
    const stuffed = await login(tp.url, people[0]!.email, password, office);
    assert.equal(stuffed.status, 429, 'then the address is refused, for every account');
    assert.match(stuffed.body.detail, /^Too many failed sign-ins from your network\. Try again in \d+ minutes?\.$/);

    // A typo at home and 4 guesses from elsewhere: the person's success at home starts the count there
    // over (5 fresh failures allowed), and keeps the other address's.
    const { email, password: right } = await newPerson(tp.url);
    const home = '192.0.2.88';
    const other = '192.0.2.99';
    for (let i = 0; i < ALLOWED_FAILURES - 1; i++) assert.equal((await login(tp.url, email, `guess ${i}`, other)).status, 401);
    assert.equal((await login(tp.url, email, 'one typo', home)).status, 401);
    assert.equal((await login(tp.url, email, right, home)).status, 200);
    for (let i = 0; i < ALLOWED_FAILURES; i++) assert.equal((await login(tp.url, email, `again ${i}`, home)).status, 401, `a fresh allowance after the success (${i})`);
    assert.equal((await login(tp.url, email, right, home)).status, 429);
    // Ten failures from browsers the account has not seen, from any addresses, are all it gets
    // (docs/security.md "Sign-in"): the other address's 5th guess is refused unchecked.
    const pooled = await login(tp.url, email, 'last guess', other);
    assert.equal(pooled.status, 429);
    assert.match(pooled.body.detail, /^Too many failed sign-ins to this account from browsers it has not seen before\./);
  });
});
