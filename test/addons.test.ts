import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { Client, listPublicly, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let n = 0;
const uid = (p = 'notes') => `${p}-${process.pid % 1000}-${n++}`;

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer();
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

async function developer() {
  const p = await newPerson(tp.url, 'dev');
  const key = await p.client.post('/api/keys', { name: 'ci' });
  return { ...p, api: new Client(tp.url, key.body.key) };
}

describe('add-on registration', () => {
  it('registers a manifest after a signed ping, shows the secret once', async () => {
    const dev = await developer();
    const id = uid();
    const before = hook.received.length;
    const res = await dev.api.post('/api/addons', notesManifest(id, hook.url));
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.id, id);
    assert.match(res.body.signingSecret, /^whsec_[A-Za-z0-9+/=]+$/);
    assert.ok(Array.isArray(res.body.warnings));

    const ping = hook.received.slice(before).find((d) => d.body.type === 'ping');
    assert.ok(ping, 'the webhook got a ping');
    new Webhook(res.body.signingSecret).verify(ping.raw, ping.headers as Record<string, string>);

    const read = await dev.api.get(`/api/addons/${id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.version, 1);
    assert.deepEqual(read.body.tools.map((t: any) => t.name), ['search_notes', 'add_note', 'delete_note']);
    assert.ok(!read.text.includes(res.body.signingSecret), 'the secret is never shown again');
    assert.equal(read.body.tools[0].inputSchema.type, 'object');
  });

  it('refuses a webhook that does not answer the ping, and stores nothing', async () => {
    const dev = await developer();
    const id = uid();
    const res = await dev.api.post('/api/addons', notesManifest(id, 'http://127.0.0.1:9/nothing-here'));
    assert.equal(res.status, 422);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal(res.body.errors[0].path, '/webhook');
    assert.equal((await dev.api.get(`/api/addons/${id}`)).status, 404);
  });

  it('refuses a malformed manifest with every problem and its path (422), storing nothing', async () => {
    const dev = await developer();
    const res = await dev.api.post('/api/addons', { id: 'X', name: '', tools: [{ name: 'Bad Name' }] });
    assert.equal(res.status, 422);
    const paths = res.body.errors.map((e: any) => e.path);
    assert.ok(paths.includes('/id'));
    assert.ok(paths.includes('/webhook'));
    assert.ok(paths.some((p: string) => p.startsWith('/tools/0')));
    assert.deepEqual((await dev.api.get('/api/addons')).body, []);
  });

  it('refuses a duplicate id with 409, even after deletion (ids are never reused)', async () => {
    const a = await developer();
    const b = await developer();
    const id = uid();
    assert.equal((await a.api.post('/api/addons', notesManifest(id, hook.url))).status, 201);
    const dup = await b.api.post('/api/addons', notesManifest(id, hook.url));
    assert.equal(dup.status, 409);
    assert.equal((await a.api.delete(`/api/addons/${id}`)).status, 204);
    assert.equal((await a.api.post('/api/addons', notesManifest(id, hook.url))).status, 409);
  });

  it('refuses an oversized manifest with 413', async () => {
    const dev = await developer();
    const res = await dev.api.post('/api/addons', { ...notesManifest(uid(), hook.url), description: 'x'.repeat(400_000) });
    assert.equal(res.status, 413);
  });

  it('returns lint warnings for a destructive-sounding tool that is not marked', async () => {
    const dev = await developer();
    const m = notesManifest(uid(), hook.url);
    m.tools.push({ name: 'purge_notes', title: 'Purge notes', summary: 'Removes every note and returns how many were removed.', arguments: [] } as any);
    const res = await dev.api.post('/api/addons', m);
    assert.equal(res.status, 201, res.text);
    assert.ok(res.body.warnings.some((w: any) => w.path.startsWith('/tools/3')), JSON.stringify(res.body.warnings));
  });

  it('updates to a new version; installs keep switches of tools that remain', async () => {
    const dev = await developer();
    const id = uid();
    await dev.api.post('/api/addons', notesManifest(id, hook.url));
    assert.equal((await dev.client.post('/api/installs', { addon: id })).status, 201);
    await dev.client.patch(`/api/installs/${id}`, { tools: { add_note: true, search_notes: true } });

    const m = notesManifest(id, hook.url);
    m.tools = m.tools.filter((t) => t.name !== 'search_notes');
    const put = await dev.api.put(`/api/addons/${id}`, m);
    assert.equal(put.status, 200, put.text);
    assert.ok(Array.isArray(put.body.warnings));
    assert.equal((await dev.api.get(`/api/addons/${id}`)).body.version, 2);
    const install = (await dev.client.get('/api/installs')).body.find((i: any) => i.addon.id === id);
    assert.deepEqual(
      install.tools.map((t: any) => [t.name, t.enabled]),
      [['add_note', true], ['delete_note', false]],
    );
    const versions = await dev.api.get(`/api/addons/${id}/versions`);
    assert.deepEqual(versions.body.map((v: any) => v.version), [2, 1]);
    const wrongId = await dev.api.put(`/api/addons/${id}`, { ...m, id: 'other-id' });
    assert.equal(wrongId.status, 422);
  });

  it('rotates the signing secret: both sign for a while', async () => {
    const dev = await developer();
    const id = uid();
    const created = await dev.api.post('/api/addons', notesManifest(id, hook.url));
    const rotated = await dev.api.post(`/api/addons/${id}/secret`);
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.signingSecret, /^whsec_/);
    assert.notEqual(rotated.body.signingSecret, created.body.signingSecret);
    const { liveSecrets } = await import('@toolport/core');
    const live = await liveSecrets(tp.svc, id);
    assert.deepEqual(live.sort(), [created.body.signingSecret, rotated.body.signingSecret].sort());
  });
});

describe('catalog, installs and switches', () => {
  it('lists public add-ons and the person\'s own, never another developer\'s private one', async () => {
    const dev = await developer();
    const other = await developer();
    const pub = uid('pub');
    const priv = uid('priv');
    await dev.api.post('/api/addons', notesManifest(pub, hook.url, { visibility: 'public' }));
    await listPublicly(tp.url, pub, dev);
    await dev.api.post('/api/addons', notesManifest(priv, hook.url));
    const ids = (await other.client.get('/api/catalog')).body.map((a: any) => a.id);
    assert.ok(ids.includes(pub));
    assert.ok(!ids.includes(priv));
    assert.equal((await other.client.post('/api/installs', { addon: priv })).status, 404);
    const mine = (await dev.client.get('/api/catalog')).body.map((a: any) => a.id);
    assert.ok(mine.includes(priv) && mine.includes(pub));
  });

  it('installs with every tool off, switches tools, refuses unknown tools, uninstalls', async () => {
    const dev = await developer();
    const person = await newPerson(tp.url);
    const id = uid('pub');
    await dev.api.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    await listPublicly(tp.url, id, dev);
    const inst = await person.client.post('/api/installs', { addon: id });
    assert.equal(inst.status, 201);
    assert.ok(inst.body.tools.every((t: any) => t.enabled === false));
    assert.equal(inst.body.tools.find((t: any) => t.name === 'delete_note').destructive, true);
    assert.equal((await person.client.post('/api/installs', { addon: id })).status, 200);

    const sw = await person.client.patch(`/api/installs/${id}`, { tools: { add_note: true } });
    assert.equal(sw.status, 200);
    assert.equal(sw.body.tools.find((t: any) => t.name === 'add_note').enabled, true);
    const bad = await person.client.patch(`/api/installs/${id}`, { tools: { nope: true, add_note: 'yes' } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.errors.length, 2);
    assert.equal((await person.client.get('/api/installs')).body[0].tools.find((t: any) => t.name === 'add_note').enabled, true);

    assert.equal((await person.client.delete(`/api/installs/${id}`)).status, 204);
    assert.deepEqual((await person.client.get('/api/installs')).body, []);
    assert.equal((await person.client.delete(`/api/installs/${id}`)).status, 404);
  });
});

// Without credentials or with bad ones: test/security-auth.test.ts, for every route.
describe('tenancy matrix', () => {
  it('answers 404 for another person\'s add-on and install, and changes nothing', async () => {
    const owner = await developer();
    const intruder = await developer();
    const id = uid();
    await owner.api.post('/api/addons', notesManifest(id, hook.url));
    await owner.client.post('/api/installs', { addon: id });
    const m = notesManifest(id, hook.url, { name: 'Hijacked' });
    for (const [method, path, body] of [
      ['GET', `/api/addons/${id}`], ['PUT', `/api/addons/${id}`, m], ['DELETE', `/api/addons/${id}`],
      ['POST', `/api/addons/${id}/secret`, {}], ['GET', `/api/addons/${id}/versions`],
      ['PATCH', `/api/installs/${id}`, { tools: { add_note: true } }], ['DELETE', `/api/installs/${id}`],
    ] as Array<[string, string, unknown?]>) {
      // Installs belong to the dashboard session; the developer API key reaches add-ons only.
      for (const c of path.startsWith('/api/installs') ? [intruder.client] : [intruder.api, intruder.client]) {
        const res = await c.request(method, path, body);
        assert.equal(res.status, 404, `${method} ${path} → ${res.status}`);
      }
    }
    const still = await owner.api.get(`/api/addons/${id}`);
    assert.equal(still.body.name, 'Notes');
    assert.equal(still.body.version, 1);
    assert.equal((await owner.client.get('/api/installs')).body.length, 1);
  });
});
