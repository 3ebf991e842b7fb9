import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq } from 'drizzle-orm';
import { accountLinkStates, connectedAccounts, devSessions, pushSubscriptions } from '../packages/core/src/db/schema/index';
import { sealAccountTokens } from '../packages/core/src/installs/connected-accounts';
import { apiRoutes } from './helpers/routes';
import { ask, pendingFor } from './helpers/approvals';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';
import { connect, register } from './helpers/oauth-flow';

/**
 * The tenancy suite (issue #10): every /api route, enumerated from the app itself, is tried by
 * person B on person A's objects. Routes that take an id answer 404 and change nothing; routes that
 * take none answer only B's own data. A route added without a case here fails the first test.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

interface Person {
  client: Client;
  api: Client;
  user: { id: string; mcpUrl: string };
  addonId: string;
  keyId: string;
  connectionId: string;
  approvalId: string;
  ruleId: string;
  endpoint: string;
  callIds: string[];
}
let A: Person;
let B: Person;

async function person(label: string): Promise<Person> {
  const p = await newPerson(tp.url, label);
  assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
  const key = await p.client.post('/api/keys', { name: 'ci' });
  assert.equal(key.status, 201, key.text);
  const api = new Client(tp.url, key.body.key);
  const addonId = `ten-${label}-${randomBytes(3).toString('hex')}`;
  const created = await api.post('/api/addons', notesManifest(addonId, hook.url));
  assert.equal(created.status, 201, created.text);
  hook.setSecret(created.body.signingSecret);
  assert.equal((await p.client.post('/api/installs', { addon: addonId })).status, 201);
  assert.equal((await p.client.patch(`/api/installs/${addonId}`, { tools: { add_note: true } })).status, 200);
  const check = await api.post(`/api/addons/${addonId}/check`, [{ tool: 'add_note', arguments: { text: `from ${label}` } }]);
  assert.equal(check.status, 200, check.text);
  const app = await register(tp.url);
  await connect(tp.url, p.client, app.client_id, p.user.mcpUrl);
  const connectionId = (await p.client.get('/api/connections')).body[0].id;
  const rule = await p.client.put('/api/rules', { addon: addonId, tool: 'add_note', app: connectionId, mode: 'ask' });
  assert.equal(rule.status, 200, rule.text);
  const asked = ask(tp.svc.approvals!, p.user.id);
  asked.decision.catch(() => {});
  const approvalId = (await pendingFor(p.client, asked.nonce)).id;
  const endpoint = `https://push.example.com/${label}-${randomBytes(8).toString('hex')}`;
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const keys = { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
  const sub = await p.client.post('/api/push/subscribe', { endpoint, keys });
  assert.equal(sub.status, 201, sub.text);
  const callIds = ((await p.client.get('/api/calls')).body.items ?? (await p.client.get('/api/calls')).body).map((c: { id: string }) => c.id);
  return { client: p.client, api, user: p.user, addonId, keyId: key.body.id, connectionId, approvalId, ruleId: rule.body.id, endpoint, callIds };
}

before(async () => {
  tp = await startToolport({ env: { PUSH_HOSTS: 'push.example.com' } });
  hook = await startAddonServer({ add_note: () => ({ text: 'added' }) });
  A = await person('a');
  B = await person('b');
  // A connected account of A's install (as the callback stores one), for B to try to reach.
  await tp.svc.db.insert(connectedAccounts).values({
    id: `acct_tenancy_${randomBytes(4).toString('hex')}`,
    userId: A.user.id,
    addonId: A.addonId,
    provider: 'github',
    ...sealAccountTokens(tp.svc, { accessToken: 'a-access-token', refreshToken: 'a-refresh-token' }),
  });
});
const accountsOfA = () => tp.svc.db.select().from(connectedAccounts).where(eq(connectedAccounts.userId, A.user.id));
after(async () => {
  await hook?.close();
  await tp?.stop();
});

type Check = () => Promise<void>;
const is404 = async (res: Promise<{ status: number; text: string }>, what: string) => {
  const r = await res;
  assert.equal(r.status, 404, `${what} → ${r.status} ${r.text.slice(0, 200)}`);
};
/** B's answer mentions none of A's ids. */
const clean = (text: string, what: string) => {
  for (const id of [A.user.id, A.addonId, A.keyId, A.connectionId, A.approvalId, A.ruleId, A.endpoint, ...A.callIds].filter(Boolean)) {
    assert.ok(!text.includes(id), `${what} shows A's ${id}`);
  }
};
const ownOnly = (method: string, path: string, body?: unknown): Check => async () => {
  for (const c of [B.client, B.api]) {
    const res = await c.request(method, path, body);
    clean(res.text, `${method} ${path}`);
  }
};

/** One case per route: what B tries, and what must still hold for A. */
const cases: Record<string, Check> = {
  'POST /api/session/signup': async () => {
    const res = await new Client(tp.url).post('/api/session/signup', { email: (await A.client.get('/api/me')).body.email, password: 'another password here' });
    assert.equal(res.status, 409);
  },
  'POST /api/session/login': async () => {
    const res = await new Client(tp.url).post('/api/session/login', { email: (await A.client.get('/api/me')).body.email, password: 'wrong wrong wrong' });
    assert.equal(res.status, 401);
  },
  'POST /api/session/logout': async () => {
    // B signing out ends B's session only.
    const b = await newPerson(tp.url, 'b-logout');
    assert.equal((await b.client.post('/api/session/logout')).status < 300, true);
    assert.equal((await A.client.get('/api/me')).status, 200);
  },
  'GET /api/me': ownOnly('GET', '/api/me'),
  'GET /api/session': ownOnly('GET', '/api/session'),
  'GET /api/sessions': async () => {
    const aIds = ((await A.client.get('/api/sessions')).body as Array<{ id: string }>).map((x) => x.id);
    const res = await B.client.get('/api/sessions');
    for (const id of aIds) assert.ok(!res.text.includes(id), 'B sees none of A’s sessions');
  },
  'DELETE /api/sessions/:id': async () => {
    for (const { id } of (await A.client.get('/api/sessions')).body as Array<{ id: string }>) {
      await is404(B.client.request('DELETE', `/api/sessions/${id}`), 'B ends A’s session');
    }
    assert.equal((await A.client.get('/api/me')).status, 200);
  },
  'POST /api/sessions/end-others': async () => {
    const b = await newPerson(tp.url, 'b-end-others');
    assert.equal((await b.client.post('/api/sessions/end-others')).status, 200);
    assert.equal((await A.client.get('/api/me')).status, 200);
  },
  'POST /api/me/password': async () => {
    const b = await newPerson(tp.url, 'b-password');
    assert.equal((await b.client.post('/api/me/password', { current: b.password, password: 'b’s own new password' })).status, 200);
    assert.equal((await A.client.get('/api/me')).status, 200, 'A stays signed in');
  },
  'POST /api/me/verification': ownOnly('POST', '/api/me/verification'),
  // Passkeys of A's are in passkeys.test.ts (B removing one is 404); here B's own calls leak nothing of A.
  'GET /api/me/passkeys': ownOnly('GET', '/api/me/passkeys'),
  'POST /api/me/passkeys/options': ownOnly('POST', '/api/me/passkeys/options', { password: 'not b’s password' }),
  'POST /api/me/passkeys': async () => {
    const r = await B.client.post('/api/me/passkeys', { name: 'x', response: { id: 'forged', rawId: 'forged', type: 'public-key', response: {} } });
    assert.equal(r.status, 422, r.text);
    clean(r.text, 'add passkey');
  },
  'DELETE /api/me/passkeys/:id': async () => {
    await is404(B.client.request('DELETE', '/api/me/passkeys/madeup'), 'a passkey B does not have');
  },
  'POST /api/session/passkey/options': async () => {
    const r = await new Client(tp.url).post('/api/session/passkey/options');
    assert.equal(r.status, 200);
    clean(r.text, 'passkey options');
  },
  'POST /api/session/passkey': async () => {
    const r = await new Client(tp.url).post('/api/session/passkey', { response: { id: 'madeup', rawId: 'madeup', type: 'public-key', response: {} } });
    assert.equal(r.status, 401, r.text);
    assert.equal((await A.client.get('/api/me')).status, 200);
  },
  'GET /api/me/export': ownOnly('GET', '/api/me/export'),
  'POST /api/me/delete': async () => {
    const r = await B.client.post('/api/me/delete', { password: 'not b’s password' });
    assert.equal(r.status, 422);
    clean(r.text, 'delete');
    assert.equal((await A.client.get('/api/me')).status, 200, 'A is untouched');
  },
  'POST /api/session/reset-request': async () => {
    const email = (await A.client.get('/api/me')).body.email;
    const res = await new Client(tp.url).post('/api/session/reset-request', { email });
    assert.equal(res.status, 202);
    assert.equal((await A.client.get('/api/me')).status, 200, 'asking for a link signs nobody out');
  },
  'POST /api/session/reset': async () => {
    await is404(new Client(tp.url).post('/api/session/reset', { token: 'tpr_madeup', password: 'a takeover password' }), 'a made-up reset link');
    assert.equal((await A.client.get('/api/me')).status, 200);
  },
  'POST /api/session/verify-email': async () => {
    await is404(new Client(tp.url).post('/api/session/verify-email', { token: 'tpv_madeup' }), 'a made-up confirmation link');
  },
  'POST /api/me/rotate-mcp-url': async () => {
    const b = await newPerson(tp.url, 'b-rotate');
    const res = await b.client.post('/api/me/rotate-mcp-url');
    clean(res.text, 'rotate');
    assert.equal((await A.client.get('/api/me')).body.mcpUrl, A.user.mcpUrl);
  },
  'GET /api/settings': ownOnly('GET', '/api/settings'),
  'PATCH /api/settings': async () => {
    await ownOnly('PATCH', '/api/settings', { aiApps: true })();
    assert.equal((await A.client.get('/api/me')).body.aiApps, true);
  },
  'POST /api/keys': ownOnly('POST', '/api/keys', { name: 'x' }),
  'GET /api/keys': ownOnly('GET', '/api/keys'),
  'DELETE /api/keys/:id': async () => {
    await is404(B.client.delete(`/api/keys/${A.keyId}`), 'delete key');
    assert.equal((await A.api.get('/api/addons')).status, 200);
  },
  'GET /api/connections': ownOnly('GET', '/api/connections'),
  'PUT /api/connections/:id/ask': async () => {
    await is404(B.client.put(`/api/connections/${A.connectionId}/ask`, { askEveryTool: true }), 'make every call of a connection ask');
    const after = (await A.client.get('/api/connections')).body.find((c: { id: string }) => c.id === A.connectionId);
    assert.equal(after.askEveryTool, false);
  },
  'PUT /api/connections/:id/tools': async () => {
    // B names its own switched-on tool: valid for B, and still A's connection is not B's to change.
    const before = (await A.client.get('/api/connections')).body.find((c: { id: string }) => c.id === A.connectionId);
    await is404(B.client.put(`/api/connections/${A.connectionId}/tools`, { tools: [`${B.addonId}__add_note`], newTools: true }), 'choose tools of a connection');
    const after = (await A.client.get('/api/connections')).body.find((c: { id: string }) => c.id === A.connectionId);
    assert.deepEqual([after.tools, after.newTools], [before.tools, before.newTools]);
    assert.deepEqual(after.tools, [`${A.addonId}__add_note`]);
  },
  'DELETE /api/connections/:id': async () => {
    await is404(B.client.delete(`/api/connections/${A.connectionId}`), 'delete connection');
    assert.ok((await A.client.get('/api/connections')).body.some((c: { id: string }) => c.id === A.connectionId));
  },
  'GET /api/addons': ownOnly('GET', '/api/addons'),
  'POST /api/addons': async () => {
    // Taking A's id is a conflict (ids are unique across the service), never a takeover.
    const res = await B.api.post('/api/addons', notesManifest(A.addonId, hook.url, { name: 'Hijacked' }));
    assert.equal(res.status, 409);
    assert.equal((await A.api.get(`/api/addons/${A.addonId}`)).body.name, 'Notes');
  },
  'GET /api/addons/:id': async () => {
    for (const c of [B.client, B.api]) await is404(c.get(`/api/addons/${A.addonId}`), 'get addon');
  },
  'PUT /api/addons/:id': async () => {
    for (const c of [B.client, B.api]) await is404(c.put(`/api/addons/${A.addonId}`, notesManifest(A.addonId, hook.url, { name: 'Hijacked' })), 'put addon');
    const still = (await A.api.get(`/api/addons/${A.addonId}`)).body;
    assert.equal(still.name, 'Notes');
    assert.equal(still.version, 1);
  },
  'DELETE /api/addons/:id': async () => {
    for (const c of [B.client, B.api]) await is404(c.delete(`/api/addons/${A.addonId}`), 'delete addon');
    assert.equal((await A.api.get(`/api/addons/${A.addonId}`)).status, 200);
  },
  'GET /api/addons/:id/versions': async () => {
    for (const c of [B.client, B.api]) await is404(c.get(`/api/addons/${A.addonId}/versions`), 'versions');
  },
  'POST /api/addons/:id/secret': async () => {
    for (const c of [B.client, B.api]) await is404(c.post(`/api/addons/${A.addonId}/secret`), 'rotate secret');
  },
  'GET /api/addons/:id/accounts': async () => {
    for (const c of [B.client, B.api]) await is404(c.get(`/api/addons/${A.addonId}/accounts`), 'list oauth clients');
  },
  'PUT /api/addons/:id/accounts/:provider/client': async () => {
    const body = { clientId: 'hijack', clientSecret: 'hijack-secret' };
    for (const c of [B.client, B.api]) await is404(c.put(`/api/addons/${A.addonId}/accounts/github/client`, body), 'set oauth client');
    assert.deepEqual((await A.api.get(`/api/addons/${A.addonId}/accounts`)).body, []);
  },
  'DELETE /api/addons/:id/accounts/:provider/client': async () => {
    for (const c of [B.client, B.api]) await is404(c.delete(`/api/addons/${A.addonId}/accounts/github/client`), 'delete oauth client');
  },
  'POST /api/addons/:id/check': async () => {
    const before = hook.calls().length;
    for (const c of [B.client, B.api]) await is404(c.post(`/api/addons/${A.addonId}/check`, [{ tool: 'add_note', arguments: { text: 'x' } }]), 'check');
    assert.equal(hook.calls().length, before);
  },
  'POST /api/addons/:id/dev-sessions': async () => {
    // Only an add-on's developer runs `toolport dev` for it: nobody else can move an install with one.
    for (const c of [B.client, B.api]) await is404(c.post(`/api/addons/${A.addonId}/dev-sessions`), 'start dev session');
    const [session] = await tp.svc.db.select().from(devSessions).where(eq(devSessions.addonId, A.addonId));
    assert.equal(session, undefined);
  },
  'PUT /api/addons/:id/dev-sessions/:session': async () => {
    const mine = await A.api.post(`/api/addons/${A.addonId}/dev-sessions`);
    assert.equal(mine.status, 201, mine.text);
    for (const c of [B.client, B.api]) await is404(c.put(`/api/addons/${A.addonId}/dev-sessions/${mine.body.id}`, {}), 'renew dev session');
    assert.equal((await A.api.delete(`/api/addons/${A.addonId}/dev-sessions/${mine.body.id}`)).status, 204);
  },
  'DELETE /api/addons/:id/dev-sessions/:session': async () => {
    const mine = await A.api.post(`/api/addons/${A.addonId}/dev-sessions`);
    assert.equal(mine.status, 201, mine.text);
    // Ending someone else's session is no error, and ends nothing.
    for (const c of [B.client, B.api]) assert.equal((await c.delete(`/api/addons/${A.addonId}/dev-sessions/${mine.body.id}`)).status, 204);
    assert.equal((await A.api.put(`/api/addons/${A.addonId}/dev-sessions/${mine.body.id}`, {})).status, 200);
    assert.equal((await A.api.delete(`/api/addons/${A.addonId}/dev-sessions/${mine.body.id}`)).status, 204);
  },
  'GET /api/addons/:id/deliveries': async () => {
    for (const c of [B.client, B.api]) await is404(c.get(`/api/addons/${A.addonId}/deliveries`), 'deliveries');
  },
  'GET /api/addons/:id/deliveries/live': async () => {
    for (const c of [B.client, B.api]) await is404(c.get(`/api/addons/${A.addonId}/deliveries/live`), 'live deliveries');
    // B's stream of B's own add-on carries B's deliveries only: A's call, made first, never shows.
    const ac = new AbortController();
    const res = await fetch(`${tp.url}/api/addons/${B.addonId}/deliveries/live`, { headers: { authorization: `Bearer ${B.api.bearer}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    assert.equal((await A.api.post(`/api/addons/${A.addonId}/check`, [{ tool: 'add_note', arguments: { text: 'from a, live' } }])).status, 200);
    assert.equal((await B.api.post(`/api/addons/${B.addonId}/check`, [{ tool: 'add_note', arguments: { text: 'from b, live' } }])).status, 200);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('from b, live')) {
      const next = await reader.read();
      if (next.done) break;
      text += Buffer.from(next.value).toString('utf8');
    }
    ac.abort();
    assert.match(text, /from b, live/);
    assert.doesNotMatch(text, /from a, live/);
    clean(text, 'live deliveries');
  },
  'GET /api/catalog': async () => {
    await ownOnly('GET', '/api/catalog')();
    // A search for A's private add-on by its id finds nothing for B.
    assert.deepEqual((await B.client.get(`/api/catalog?q=${A.addonId}`)).body, []);
  },
  'GET /api/catalog/:id': async () => {
    // A's add-on is private: its details do not exist for B.
    await is404(B.client.get(`/api/catalog/${A.addonId}`), 'catalog details');
    assert.equal((await A.client.get(`/api/catalog/${A.addonId}`)).status, 200);
  },
  'GET /api/catalog/:addonId/server.json': async () => {
    // A registry entry is for approved public listings only: A's private add-on has none, not even for A.
    for (const c of [B.client, A.client, new Client(tp.url)]) await is404(c.get(`/api/catalog/${A.addonId}/server.json`), 'registry entry');
  },
  'GET /api/catalog/servers.json': ownOnly('GET', '/api/catalog/servers.json'),
  'GET /api/installs': ownOnly('GET', '/api/installs'),
  'POST /api/installs': async () => {
    // A's add-on is private: for B it does not exist.
    await is404(B.client.post('/api/installs', { addon: A.addonId }), 'install A\'s private add-on');
  },
  'PATCH /api/installs/:addon': async () => {
    await is404(B.client.patch(`/api/installs/${A.addonId}`, { tools: { add_note: false } }), 'switch');
    const mine = (await A.client.get('/api/installs')).body.find((i: { addon: { id: string } }) => i.addon.id === A.addonId);
    assert.ok(mine, 'A still has the install');
    assert.equal(mine.tools.find((t: { name: string }) => t.name === 'add_note').enabled, true);
  },
  'DELETE /api/installs/:addon': async () => {
    await is404(B.client.delete(`/api/installs/${A.addonId}`), 'uninstall');
    assert.ok(JSON.stringify((await A.client.get('/api/installs')).body).includes(A.addonId));
  },
  'POST /api/installs/:addon/accept': async () => {
    // B has no install of A's add-on: accepting an update of it is someone else's install.
    await is404(B.client.post(`/api/installs/${A.addonId}/accept`, { version: 1 }), 'accept an update');
  },
  'GET /api/installs/:addon/settings': async () => {
    await is404(B.client.get(`/api/installs/${A.addonId}/settings`), 'read settings');
    assert.equal((await A.client.get(`/api/installs/${A.addonId}/settings`)).status, 200);
  },
  'PUT /api/installs/:addon/settings': async () => {
    await is404(B.client.put(`/api/installs/${A.addonId}/settings`, { values: {} }), 'save settings');
    await is404(B.client.put(`/api/installs/${A.addonId}/settings`, {}), 'a malformed save');
  },
  'GET /api/installs/:addon/accounts': async () => {
    await is404(B.client.get(`/api/installs/${A.addonId}/accounts`), "list accounts of A's install");
  },
  'POST /api/installs/:addon/accounts/:provider/connect': async () => {
    await is404(B.client.post(`/api/installs/${A.addonId}/accounts/github/connect`, {}), "connect an account to A's install");
    const states = await tp.svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.addonId, A.addonId));
    assert.deepEqual(states, [], 'no link was started');
  },
  'DELETE /api/installs/:addon/accounts/:provider': async () => {
    await is404(B.client.delete(`/api/installs/${A.addonId}/accounts/github`), "disconnect A's account");
    assert.equal((await accountsOfA()).length, 1, "A's account is still there");
  },
  'GET /api/accounts': async () => {
    await ownOnly('GET', '/api/accounts')();
    assert.deepEqual((await B.client.get('/api/accounts')).body, []);
    assert.equal((await A.client.get('/api/accounts')).body.length, 1, 'A sees their own');
  },
  'GET /api/operator/listings': async () => {
    // Neither person is an operator: the queue is not theirs to read.
    const res = await B.client.get('/api/operator/listings');
    assert.equal(res.status, 403, res.text);
  },
  'POST /api/operator/listings/:addonId/decision': async () => {
    const res = await B.client.post(`/api/operator/listings/${A.addonId}/decision`, { decision: 'delist' });
    assert.equal(res.status, 403, res.text);
    assert.ok(JSON.stringify((await A.client.get('/api/installs')).body).includes(A.addonId), 'A still has it');
  },
  'GET /api/audit/export': async () => {
    // Nothing names a chain: a crafted parameter naming A still answers B's own chain.
    await ownOnly('GET', `/api/audit/export?chain=${A.user.id}&user=${A.user.id}`)();
    const own = await A.client.get('/api/audit/export');
    assert.equal(own.status, 200);
    assert.ok(A.callIds.some((id) => own.text.includes(id)), 'A reads their own calls in it');
  },
  'GET /api/operator/audit/export': async () => {
    const res = await B.client.get('/api/operator/audit/export');
    assert.equal(res.status, 403, res.text);
    clean(res.text, 'the deployment\'s audit trail');
  },
  'GET /api/calls': ownOnly('GET', '/api/calls'),
  'DELETE /api/calls': async () => {
    // Nothing names whose history: a parameter naming A clears B's own (and notes it in B's chain).
    const r = await B.client.delete(`/api/calls?userId=${A.user.id}&user=${A.user.id}`);
    assert.equal(r.status, 200, r.text);
    const still = JSON.stringify((await A.client.get('/api/calls')).body);
    for (const id of A.callIds) assert.ok(still.includes(id), 'A’s calls stay');
    assert.ok(!(await A.client.get('/api/audit/export')).text.includes('"calls.cleared"'), 'nothing of it in A’s audit trail');
  },
  'GET /api/calls/activity': async () => {
    await ownOnly('GET', '/api/calls/activity?period=30d')();
    // B's sums count B's calls only, even filtered by A's add-on.
    const r = await B.client.get(`/api/calls/activity?period=30d&addon=${A.addonId}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.totals.calls, 0);
  },
  'GET /api/calls/:callId': async () => {
    assert.ok(A.callIds.length > 0, 'A made calls');
    for (const id of A.callIds) {
      await is404(B.client.get(`/api/calls/${id}`), 'read one of A’s calls');
      // The call log is the person's, in the dashboard: an API key is not a credential for it.
      const byKey = await B.api.get(`/api/calls/${id}`);
      assert.ok(byKey.status === 401 || byKey.status === 404, `${byKey.status} ${byKey.text}`);
      clean(byKey.text, 'read one of A’s calls by key');
    }
    assert.equal((await A.client.get(`/api/calls/${A.callIds[0]}`)).status, 200, 'A reads their own');
  },
  'GET /api/approvals': async () => {
    for (const status of ['pending', 'all']) await ownOnly('GET', `/api/approvals?status=${status}`)();
  },
  'GET /api/approvals/:id': async () => {
    await is404(B.client.get(`/api/approvals/${A.approvalId}`), 'read one approval');
    assert.equal((await A.client.get(`/api/approvals/${A.approvalId}`)).status, 200, 'A reads their own');
  },
  'GET /api/approvals/:id/image': async () => {
    // A's approval here has no picture (dashboard-approval-card reads one): B hears the same 404 either way.
    await is404(B.client.get(`/api/approvals/${A.approvalId}/image`), 'read an approval’s picture');
    assert.equal((await A.client.get(`/api/approvals/${A.approvalId}/image`)).status, 404, 'none to show');
  },
  'POST /api/approvals/:id/decision': async () => {
    await is404(B.client.post(`/api/approvals/${A.approvalId}/decision`, { decision: 'allow' }), 'decide');
    const pending = (await A.client.get('/api/approvals?status=pending')).body as Array<{ id: string }>;
    assert.ok(pending.some((a) => a.id === A.approvalId), 'still pending for A');
  },
  'GET /api/rules': ownOnly('GET', '/api/rules'),
  'PUT /api/rules': async () => {
    // A's tool is not installed for B, and A's app is not B's: neither can carry a rule of B's.
    const onA = await B.client.put('/api/rules', { addon: A.addonId, tool: 'add_note', mode: 'never' });
    assert.equal(onA.status, 422, onA.text);
    clean(onA.text, 'rule on A\'s tool');
    await is404(B.client.put('/api/rules', { addon: B.addonId, tool: 'add_note', app: A.connectionId, mode: 'never' }), 'rule for A\'s app');
    const mine = (await A.client.get('/api/rules')).body as Array<{ id: string; mode: string }>;
    assert.deepEqual(mine.map((r) => [r.id, r.mode]), [[A.ruleId, 'ask']]);
  },
  'DELETE /api/rules/:id': async () => {
    await is404(B.client.delete(`/api/rules/${A.ruleId}`), 'remove rule');
    assert.ok((await A.client.get('/api/rules')).body.some((r: { id: string }) => r.id === A.ruleId));
  },
  'GET /api/events': async () => {
    // B's stream opens with B's pending approvals (see test/approvals-live.test.ts): never A's.
    const ac = new AbortController();
    const cookie = [...B.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(`${tp.url}/api/events`, { headers: { cookie, accept: 'text/event-stream' }, signal: ac.signal });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let text = '';
    const until = Date.now() + 1000;
    while (Date.now() < until && !text.includes(B.approvalId)) {
      const next = await Promise.race([reader.read(), new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), 300))]);
      if (next.done) break;
      text += Buffer.from(next.value).toString('utf8');
    }
    ac.abort();
    clean(text, 'events');
  },
  'GET /api/push/key': ownOnly('GET', '/api/push/key'),
  'GET /api/calls/running': ownOnly('GET', '/api/calls/running'),
  'POST /api/calls/running/:taskId/cancel': async () => {
    // A task id is unguessable and shown only to its app and its person; another person's is not
    // found (tasks.test.ts and tasks-activity.test.ts try a real one of A's).
    await is404(B.client.post('/api/calls/running/task_x/cancel'), 'cancel');
  },
  'POST /api/answers/:callId': async () => {
    // Only a task's add-on answers a call, signed with its own secret: a person's session or key is no credential here.
    for (const c of [B.client, B.api]) {
      const res = await c.post(`/api/answers/${A.callIds[0] ?? 'call_x'}`, { text: 'B was here' });
      assert.equal(res.status, 401, res.text);
    }
  },
  'POST /api/tool-lists/:addonId': async () => {
    // Only the add-on says whose tool lists changed, signed with its own secret; a person's session or key is no credential.
    for (const c of [B.client, B.api]) {
      const res = await c.post(`/api/tool-lists/${A.addonId}`, { users: [A.user.id] });
      assert.equal(res.status, 401, res.text);
    }
  },
  'POST /api/push/subscribe': async () => {
    // An endpoint is one device's: subscribing from it again moves it (an account switch on a shared
    // browser). Push endpoints are unguessable capability URLs, so B cannot name A's.
    const res = await B.client.post('/api/push/subscribe', { endpoint: 'x' });
    assert.equal(res.status, 422);
  },
  'DELETE /api/push/subscribe': async () => {
    const res = await B.client.request('DELETE', '/api/push/subscribe', { endpoint: A.endpoint });
    assert.equal(res.status, 204);
    const rows = await tp.svc.db.select().from(pushSubscriptions).where(eq(pushSubscriptions.endpoint, A.endpoint));
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.userId, A.user.id);
  },
  'POST /api/push/decision': async () => {
    // The notification's action token is the capability: a made-up one decides nothing.
    const res = await new Client(tp.url).post('/api/push/decision', { approval: A.approvalId, token: 'x'.repeat(43), decision: 'allow' });
    assert.ok(res.status >= 400 && res.status < 500, `${res.status}`);
    const pending = (await A.client.get('/api/approvals?status=pending')).body as Array<{ id: string }>;
    assert.ok(pending.some((a) => a.id === A.approvalId));
  },
};

describe('tenancy: every /api route', () => {
  it('has a case here for every route the app serves, and none for a route it does not', () => {
    const routes = apiRoutes(tp.svc);
    assert.ok(routes.length >= 30, routes.join('\n'));
    assert.deepEqual(routes.filter((r) => !(r in cases)), [], 'routes without a tenancy case');
    assert.deepEqual(Object.keys(cases).filter((k) => !routes.includes(k)), [], 'cases for routes that no longer exist');
  });

  for (const [route, check] of Object.entries(cases)) {
    it(`${route}: another person's ids are 404 and change nothing; lists are one's own`, check);
  }

  it('left A exactly as it was', async () => {
    assert.equal((await A.client.get('/api/me')).body.mcpUrl, A.user.mcpUrl);
    assert.equal((await A.api.get(`/api/addons/${A.addonId}`)).body.version, 1);
    assert.equal((await A.client.get('/api/connections')).body.length, 1);
    assert.equal((await A.client.get('/api/approvals?status=pending')).body.length, 1);
    assert.equal((await A.client.get('/api/keys')).body.length, 1);
  });
});
