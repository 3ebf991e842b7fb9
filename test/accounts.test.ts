import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
before(async () => { tp = await startToolport(); });
after(async () => { await tp?.stop(); });

describe('accounts', () => {
  it('signs up, reads /api/me, logs out and back in', async () => {
    const { client, email, password, user } = await newPerson(tp.url);
    assert.match(user.id, /^usr_/);
    assert.match(user.mcpUrl, new RegExp(`^${tp.url}/u/[A-Za-z0-9_-]{20,}/mcp$`));
    const me = await client.get('/api/me');
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, { ...user, aiApps: false, operator: false, emailVerified: false });

    const out = await client.post('/api/session/logout');
    assert.equal(out.status, 204);
    assert.equal((await client.get('/api/me')).status, 401);

    const back = await client.post('/api/session/login', { email: email.toUpperCase(), password });
    assert.equal(back.status, 200);
    assert.equal(back.body.user.id, user.id);
    assert.equal((await client.get('/api/me')).status, 200);
  });

  it('sets an HttpOnly, SameSite session cookie', async () => {
    const c = new Client(tp.url);
    const res = await fetch(`${tp.url}/api/session/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `cookie-${Date.now()}@example.com`, password: 'long enough pass' }),
    });
    assert.equal(res.status, 201);
    const cookie = res.headers.getSetCookie().join(';');
    assert.match(cookie, /tp_session=tps_/);
    assert.match(cookie, /HttpOnly/i);
    assert.match(cookie, /SameSite=Lax/i);
    void c;
  });

  it('refuses a duplicate email with 409 and keeps the first account', async () => {
    const { email, password } = await newPerson(tp.url);
    const again = await new Client(tp.url).post('/api/session/signup', { email, password: 'another long password' });
    assert.equal(again.status, 409);
    assert.equal(again.headers.get('content-type'), 'application/problem+json');
    const login = await new Client(tp.url).post('/api/session/login', { email, password });
    assert.equal(login.status, 200);
  });

  it('answers a wrong password with 401 and no cookie', async () => {
    const { email } = await newPerson(tp.url);
    const c = new Client(tp.url);
    const res = await c.post('/api/session/login', { email, password: 'not the password' });
    assert.equal(res.status, 401);
    assert.equal(res.body.detail, 'The email or password is wrong.');
    assert.equal(c.cookies.size, 0);
    const unknown = await c.post('/api/session/login', { email: 'nobody@example.com', password: 'whatever123' });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.detail, res.body.detail, 'an unknown email looks the same as a wrong password');
  });

  it('throttles repeated failed logins for an email, even with the right password', async () => {
    const { email, password } = await newPerson(tp.url);
    const c = new Client(tp.url);
    for (let i = 0; i < 5; i++) assert.equal((await c.post('/api/session/login', { email, password: `wrong-${i}-password` })).status, 401);
    const locked = await c.post('/api/session/login', { email, password });
    assert.equal(locked.status, 429);
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
  });

  it('refuses bad signup input with every problem listed', async () => {
    const res = await new Client(tp.url).post('/api/session/signup', { email: 'not-an-email' });
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.errors.map((e: any) => e.path).sort(), ['/email', '/password']);
    const short = await new Client(tp.url).post('/api/session/signup', { email: 'short@example.com', password: 'short' });
    assert.equal(short.status, 422);
    assert.equal(short.body.errors[0].path, '/password');
  });

  it('answers broken JSON with 400, another media type with 415 and an oversized body with 413', async () => {
    const c = new Client(tp.url);
    assert.equal((await c.request('POST', '/api/session/signup', '{"email":', { 'content-type': 'application/json' })).status, 400);
    assert.equal((await c.request('POST', '/api/session/signup', 'email=a', { 'content-type': 'application/x-www-form-urlencoded' })).status, 415);
    const big = await c.request('POST', '/api/session/signup', JSON.stringify({ email: 'x@example.com', password: 'y'.repeat(300 * 1024) }));
    assert.equal(big.status, 413);
    assert.equal(big.headers.get('content-type'), 'application/problem+json');
  });

  it('turns AI apps on and off through /api/settings', async () => {
    const { client } = await newPerson(tp.url);
    assert.deepEqual((await client.get('/api/settings')).body, { aiApps: false, displayName: null });
    const on = await client.patch('/api/settings', { aiApps: true });
    assert.equal(on.status, 200);
    assert.deepEqual(on.body, { aiApps: true, displayName: null });
    assert.equal((await client.patch('/api/settings', { displayName: 'Acme\u202E' })).status, 422, 'no hidden characters in a publisher name');
    assert.equal((await client.patch('/api/settings', { displayName: '' })).status, 422);
    assert.deepEqual((await client.patch('/api/settings', { displayName: ' Acme Tools ' })).body, { aiApps: true, displayName: 'Acme Tools' });
    assert.equal((await client.get('/api/me')).body.aiApps, true);
    assert.equal((await client.patch('/api/settings', { aiApps: 'yes' })).status, 422);
    assert.equal((await client.patch('/api/settings', { colour: 'red' })).status, 422);
  });

  it('rotates the MCP URL', async () => {
    const { client, user } = await newPerson(tp.url);
    const rotated = await client.post('/api/me/rotate-mcp-url');
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.mcpUrl, user.mcpUrl);
    assert.equal((await client.get('/api/me')).body.mcpUrl, rotated.body.mcpUrl);
  });

  it('refuses a cookie-authenticated write from a foreign Origin', async () => {
    const { client } = await newPerson(tp.url);
    const res = await client.patch('/api/settings', { aiApps: true }, { origin: 'https://evil.example' });
    assert.equal(res.status, 403);
    assert.equal((await client.get('/api/settings')).body.aiApps, false);
  });
});

describe('developer API keys', () => {
  it('creates a key shown once, uses it, lists it without the secret, revokes it', async () => {
    const { client } = await newPerson(tp.url);
    const created = await client.post('/api/keys', { name: 'laptop' });
    assert.equal(created.status, 201);
    assert.match(created.body.key, /^tpk_/);
    const list = await client.get('/api/keys');
    assert.equal(list.body.length, 1);
    assert.equal(list.body[0].key, undefined);
    assert.ok(!JSON.stringify(list.body).includes(created.body.key));

    const dev = new Client(tp.url, created.body.key);
    assert.equal((await dev.get('/api/addons')).status, 200);
    assert.equal((await client.delete(`/api/keys/${created.body.id}`)).status, 204);
    assert.equal((await dev.get('/api/addons')).status, 401);
  });

  it('refuses keys management without a session and another person\'s key id', async () => {
    const a = await newPerson(tp.url);
    const b = await newPerson(tp.url);
    const key = await a.client.post('/api/keys', { name: 'a' });
    assert.equal((await new Client(tp.url).post('/api/keys', { name: 'x' })).status, 401);
    assert.equal((await b.client.delete(`/api/keys/${key.body.id}`)).status, 404);
    assert.equal((await new Client(tp.url, key.body.key).post('/api/keys', { name: 'minted' })).status, 401);
    assert.equal((await a.client.get('/api/keys')).body.length, 1);
  });
});
