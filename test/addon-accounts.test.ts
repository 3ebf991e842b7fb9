// Issue #26, connected accounts, first slice: an add-on declares the OAuth providers it needs
// (manifest `accounts`), and its developer stores the OAuth client registered with each provider
// through the developer API. The client secret is sealed at rest and never shown again: not in an
// answer, not in a log. (The person's side, connecting an account, comes later.)
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { loadMasterKeys, resealSecrets, secretBoxes } from '@toolport/core';
import { SecretBox } from '../packages/core/src/crypto';
import { addonOauthClients } from '../packages/core/src/db/schema/index';
import { messagesAt } from './helpers/manifest';
import { captureLog } from './helpers/log';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const { log, logged } = captureLog();
const tag = `${process.pid % 1000}-${randomBytes(2).toString('hex')}`;

const GITHUB = {
  provider: 'github',
  title: 'GitHub',
  authorizationUrl: 'https://github.com/login/oauth/authorize',
  tokenUrl: 'https://github.com/login/oauth/access_token',
  scopes: ['repo', 'read:user'],
};
const CALENDAR = {
  provider: 'calendar',
  title: 'Calendar',
  authorizationUrl: 'https://calendar.example.com/oauth/authorize',
  tokenUrl: 'https://calendar.example.com/oauth/token',
  revocationUrl: 'https://calendar.example.com/oauth/revoke',
  scopes: [],
};

let dev: Awaited<ReturnType<typeof newPerson>>;

before(async () => {
  tp = await startToolport({ log });
  hook = await startAddonServer({});
  dev = await newPerson(tp.url, 'acct-dev');
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

describe('manifest accounts', () => {
  it('are checked, every problem with a sentence at its path', async () => {
    const bad = [
      { ...GITHUB, provider: 'Git Hub' },
      { ...GITHUB, authorizationUrl: 'http://github.com/login/oauth/authorize' },
      { ...GITHUB, provider: 'gitlab', tokenUrl: 'https://client:hunter2@gitlab.com/oauth/token' },
      { ...GITHUB, provider: 'many', scopes: Array.from({ length: 21 }, (_, i) => `s${i}`) },
      { ...GITHUB, provider: 'github', title: 'Again' },
    ];
    const res = await dev.client.post('/api/addons', notesManifest(`acct-bad-${tag}`, hook.url, { accounts: bad }));
    assert.equal(res.status, 422, res.text);
    const at = (path: string) => messagesAt(res.body.errors, path);
    assert.match(at('/accounts/0/provider'), /provider name "Git Hub" is not valid: a lowercase letter/);
    assert.match(at('/accounts/1/authorizationUrl'), /must use https \(http only on localhost, 127\.0\.0\.1 or \[::1\]\)/);
    assert.match(at('/accounts/2/tokenUrl'), /must not carry credentials/);
    assert.doesNotMatch(JSON.stringify(res.body), /hunter2/, 'the refusal does not echo the credentials');
    assert.match(at('/accounts/3/scopes'), /at most 20 scopes \(got 21\)/);
    assert.match(at('/accounts/4/provider'), /provider `github` is already declared by \/accounts\/1/);

    const more = await dev.client.post('/api/addons', notesManifest(`acct-bad2-${tag}`, hook.url, {
      accounts: [
        { ...GITHUB, scopes: ['has space'], revocationUrl: 'https://github.com/revoke#frag' },
        ...Array.from({ length: 5 }, (_, i) => ({ ...GITHUB, provider: `p${i}` })),
      ],
    }));
    assert.equal(more.status, 422, more.text);
    assert.match(JSON.stringify(more.body.errors), /at most 5 providers \(got 6\)/);
    const unknown = await dev.client.post('/api/addons', notesManifest(`acct-bad3-${tag}`, hook.url, {
      accounts: [{ ...GITHUB, scopes: ['has space'], revocationUrl: 'https://github.com/revoke#frag', clientSecret: 'x' }],
    }));
    assert.equal(unknown.status, 422, unknown.text);
    const at3 = (path: string) => messagesAt(unknown.body.errors, path);
    assert.match(at3('/accounts/0/scopes/0'), /no spaces/);
    assert.match(at3('/accounts/0/revocationUrl'), /must not have a fragment/);
    assert.match(at3('/accounts/0/clientSecret'), /developer API/);
  });

  it('accepts a loopback http URL (a provider on the developer machine)', async () => {
    const res = await dev.client.post('/api/addons', notesManifest(`acct-loop-${tag}`, hook.url, {
      accounts: [{ ...GITHUB, authorizationUrl: 'http://127.0.0.1:9999/authorize', tokenUrl: 'http://localhost:9999/token' }],
    }));
    assert.equal(res.status, 201, res.text);
  });
});

describe('the developer OAuth client of a provider', () => {
  const addonId = `acct-notes-${tag}`;
  const secret = `gho_secret_${randomBytes(12).toString('hex')}`;
  const secret2 = `gho_second_${randomBytes(12).toString('hex')}`;
  const bodies: string[] = [];
  const api = async (method: 'get' | 'put' | 'delete', path: string, body?: unknown, who = dev) => {
    const res = method === 'put' ? await who.client.put(path, body) : await who.client[method](path);
    bodies.push(res.text);
    return res;
  };

  before(async () => {
    const res = await dev.client.post('/api/addons', notesManifest(addonId, hook.url, { accounts: [GITHUB, CALENDAR] }));
    assert.equal(res.status, 201, res.text);
  });

  it('lists every declared provider, with its redirect URI and no client yet', async () => {
    const res = await api('get', `/api/addons/${addonId}/accounts`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, [
      { provider: 'github', title: 'GitHub', scopes: ['repo', 'read:user'], redirectUri: `${tp.url}/accounts/callback/${addonId}/github`, clientId: null, hasSecret: false, updatedAt: null },
      { provider: 'calendar', title: 'Calendar', scopes: [], redirectUri: `${tp.url}/accounts/callback/${addonId}/calendar`, clientId: null, hasSecret: false, updatedAt: null },
    ]);
    // The developer API's other door: a `tpk_` key instead of the session; nothing without either.
    const key = await dev.client.post('/api/keys', { name: 'accounts' });
    assert.equal(key.status, 201, key.text);
    const byKey = await new Client(tp.url, key.body.key).get(`/api/addons/${addonId}/accounts`);
    assert.equal(byKey.status, 200, byKey.text);
    assert.deepEqual(byKey.body, res.body);
    assert.equal((await new Client(tp.url).get(`/api/addons/${addonId}/accounts`)).status, 401);
  });

  it('sets, replaces and deletes a client; the secret is sealed and never shown', async () => {
    const set = await api('put', `/api/addons/${addonId}/accounts/github/client`, { clientId: 'Iv1.abc123', clientSecret: secret });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.provider, 'github');
    assert.equal(set.body.clientId, 'Iv1.abc123');
    assert.equal(set.body.hasSecret, true);
    assert.equal(set.body.redirectUri, `${tp.url}/accounts/callback/${addonId}/github`);
    assert.ok(!Number.isNaN(Date.parse(set.body.updatedAt)));

    const [row] = await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId));
    assert.ok(row?.clientSecretEnc, 'the secret is stored');
    assert.equal(row.clientSecretEnc.includes(secret), false, 'not in plaintext');
    assert.equal(row.clientSecretEnc.includes(Buffer.from(secret).toString('base64')), false, 'not merely encoded');

    const listed = await api('get', `/api/addons/${addonId}/accounts`);
    assert.equal(listed.body[0].clientId, 'Iv1.abc123');
    assert.equal(listed.body[0].hasSecret, true);
    assert.equal(listed.body[1].clientId, null);

    // Replaced by a public client (PKCE only): no secret.
    const pub = await api('put', `/api/addons/${addonId}/accounts/github/client`, { clientId: 'public-one' });
    assert.equal(pub.status, 200, pub.text);
    assert.equal(pub.body.hasSecret, false);
    const [pubRow] = await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId));
    assert.equal(pubRow?.clientSecretEnc, null);

    const again = await api('put', `/api/addons/${addonId}/accounts/github/client`, { clientId: 'Iv1.def456', clientSecret: secret2 });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.clientId, 'Iv1.def456');
    assert.equal(again.body.hasSecret, true);

    const del = await api('delete', `/api/addons/${addonId}/accounts/github/client`);
    assert.equal(del.status, 204, del.text);
    const after = await api('get', `/api/addons/${addonId}/accounts`);
    assert.equal(after.body[0].clientId, null);
    assert.equal(after.body[0].hasSecret, false);
    assert.equal((await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId))).length, 0);
    const gone = await api('delete', `/api/addons/${addonId}/accounts/github/client`);
    assert.equal(gone.status, 404, gone.text);
    assert.match(gone.body.detail, /no OAuth client for "GitHub"/);
  });

  it('refuses bad input with a sentence, never echoing the secret', async () => {
    const put = (provider: string, body: unknown) => api('put', `/api/addons/${addonId}/accounts/${provider}/client`, body);
    const undeclared = await put('gitlab', { clientId: 'x', clientSecret: secret });
    assert.equal(undeclared.status, 404, undeclared.text);
    assert.match(undeclared.text, /does not declare the provider \\?"gitlab\\?"/);
    const noId = await put('github', { clientSecret: secret });
    assert.equal(noId.status, 422, noId.text);
    assert.match(noId.text, /Give the `clientId`/);
    const longId = await put('github', { clientId: 'i'.repeat(513) });
    assert.equal(longId.status, 422, longId.text);
    assert.match(longId.text, /at most 512 characters/);
    const longSecret = await put('github', { clientId: 'ok', clientSecret: `s${'x'.repeat(4_096)}` });
    assert.equal(longSecret.status, 422, longSecret.text);
    assert.match(longSecret.text, /at most 4,096 characters/);
    assert.ok(!longSecret.text.includes('xxxxxxxx'));
    const control = await put('github', { clientId: 'ok', clientSecret: 'a\nb' });
    assert.equal(control.status, 422, control.text);
    const big = await put('github', { clientId: 'ok', clientSecret: 'k'.repeat(1_000_000) });
    assert.equal(big.status, 413, big.text.slice(0, 200));
    assert.match(big.text, /The body is larger than/);
    assert.ok(big.text.length < 2_000, 'the refusal does not echo the megabyte');
    assert.equal((await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId))).length, 0, 'nothing was kept');
  });

  it('is the owner’s alone: another developer gets 404, as for an add-on that does not exist', async () => {
    await api('put', `/api/addons/${addonId}/accounts/github/client`, { clientId: 'Iv1.abc123', clientSecret: secret });
    const other = await newPerson(tp.url, 'acct-other');
    for (const res of [
      await api('get', `/api/addons/${addonId}/accounts`, undefined, other),
      await api('put', `/api/addons/${addonId}/accounts/github/client`, { clientId: 'stolen', clientSecret: 'mine' }, other),
      await api('delete', `/api/addons/${addonId}/accounts/github/client`, undefined, other),
      await api('get', `/api/addons/acct-none-${tag}/accounts`),
    ]) {
      assert.equal(res.status, 404, res.text);
      assert.match(res.text, /That add-on/);
    }
    const [row] = await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId));
    assert.equal(row?.clientId, 'Iv1.abc123', 'the owner’s client is untouched');
  });

  it('the secret appears in no answer and no log line', () => {
    assert.ok(bodies.length > 10);
    for (const b of bodies) {
      assert.equal(b.includes(secret), false, b.slice(0, 200));
      assert.equal(b.includes(secret2), false, b.slice(0, 200));
    }
    assert.ok(!logged.some((l) => l.includes(secret) || l.includes(secret2)), 'no secret in any log line');
  });

  // Last: it reseals every secret of this server's database under a key the server does not hold.
  it('is resealed under a new master key by the reencrypt-secrets step', async () => {
    const next = randomBytes(32);
    const report = await resealSecrets(tp.svc.db, secretBoxes([next, ...loadMasterKeys(tp.svc.config)]));
    assert.deepEqual(report.unreadable, []);
    const [row] = await tp.svc.db.select().from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId));
    assert.equal(new SecretBox([next], 'addon-oauth-client').open(row!.clientSecretEnc!), secret, 'opens under the new key alone');
    assert.equal((await resealSecrets(tp.svc.db, secretBoxes([next]))).resealed, 0, 'running it again changes nothing');
  });
});
