import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let api: Client;
let other: Client;
const id = `check-${process.pid % 1000}`;

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({
    add_note: (b) => ({ json: { id: 'n1', title: b.arguments.text } }),
    delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }),
  });
  hook.onConfirm((b) => ({ confirm: { message: `Delete note ${b.arguments.id}?`, style: 'destructive' } }));
  const dev = await newPerson(tp.url, 'dev');
  api = new Client(tp.url, (await dev.client.post('/api/keys', { name: 'ci' })).body.key);
  const created = await api.post('/api/addons', notesManifest(id, hook.url));
  assert.equal(created.status, 201, created.text);
  hook.setSecret(created.body.signingSecret);
  const o = await newPerson(tp.url, 'other');
  other = new Client(tp.url, (await o.client.post('/api/keys', { name: 'x' })).body.key);
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

describe('check scripts', () => {
  it('runs a result, a refusal for bad arguments and each approval outcome through the real path', async () => {
    const before = hook.calls().length;
    const res = await api.post(`/api/addons/${id}/check`, [
      { tool: 'add_note', arguments: { text: 'hello' } },
      { wait: 0.1 },
      { tool: 'add_note', arguments: { text: 5 } },
      { tool: 'delete_note', arguments: { id: 'n1' }, approve: 'allow' },
      { tool: 'delete_note', arguments: { id: 'n2' }, approve: 'deny' },
      { tool: 'delete_note', arguments: { id: 'n3' }, approve: 'timeout' },
    ]);
    assert.equal(res.status, 200, res.text);
    const [ok, bad, allowed, denied, timedOut] = res.body.tools;
    assert.deepEqual(ok, { tool: 'add_note', result: { content: [{ type: 'text', text: '{"id":"n1","title":"hello"}' }], structuredContent: { id: 'n1', title: 'hello' } } });
    assert.equal(bad.tool, 'add_note');
    assert.match(bad.refused, /text/);
    assert.deepEqual(allowed.result.content, [{ type: 'text', text: 'Deleted n1.' }]);
    assert.match(denied.refused, /denied/);
    assert.match(timedOut.refused, /did not answer/);
    // Only the valid add_note and the allowed delete reached the add-on's tool.call.
    assert.deepEqual(hook.calls().slice(before).map((d) => [d.body.tool, d.body.arguments]), [
      ['add_note', { text: 'hello' }],
      ['delete_note', { id: 'n1' }],
    ]);
  });

  it('refuses a bad script with every problem, and another developer\'s add-on with 404', async () => {
    const bad = await api.post(`/api/addons/${id}/check`, [{ wait: 99 }, { tool: '' }, { tool: 'add_note', approve: 'maybe' }]);
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.errors.map((e: any) => e.path), ['/0/wait', '/1/tool', '/2/approve']);
    assert.equal((await other.post(`/api/addons/${id}/check`, [{ tool: 'add_note', arguments: { text: 'x' } }])).status, 404);
  });
});

describe("check scripts' sandbox identity", () => {
  /** A Notes add-on that keeps each person's notes under the `user.id` it is sent, as the docs ask. */
  const store = new Map<string, Map<string, string>>();
  const notesOf = (user: string) => store.get(user) ?? store.set(user, new Map()).get(user)!;
  let notesHook: Awaited<ReturnType<typeof startAddonServer>>;
  const sandboxId = `sandbox-${process.pid % 1000}`;

  before(async () => {
    notesHook = await startAddonServer({
      add_note: (b) => {
        const id = `n${notesOf(b.user.id).size + 1}`;
        notesOf(b.user.id).set(id, b.arguments.text);
        return { json: { id } };
      },
      search_notes: (b) => ({ json: { notes: [...notesOf(b.user.id).values()] } }),
      delete_note: (b) => (notesOf(b.user.id).delete(b.arguments.id) ? { text: `Deleted ${b.arguments.id}.` } : { error: `There is no note with id ${b.arguments.id}.` }),
    });
    // Always described, so every destructive step goes through a recorded approval.
    notesHook.onConfirm((b) => ({ confirm: { message: `Delete note ${b.arguments.id}?`, style: 'destructive' } }));
  });
  after(() => notesHook?.close());

  it('runs as a test person of the developer: its own user.id, never the real one, so an allowed delete cannot reach real data', async () => {
    const dev = await newPerson(tp.url, 'sandbox-dev');
    const key = new Client(tp.url, (await dev.client.post('/api/keys', { name: 'ci' })).body.key);
    const created = await key.post('/api/addons', notesManifest(sandboxId, notesHook.url));
    assert.equal(created.status, 201, created.text);
    notesHook.setSecret(created.body.signingSecret);

    // The developer uses their own add-on for real, through an app: a real note under their real user.id.
    for (const [method, path, body] of [
      ['PATCH', '/api/settings', { aiApps: true }],
      ['POST', '/api/installs', { addon: sandboxId }],
      ['PATCH', `/api/installs/${sandboxId}`, { tools: { add_note: true, search_notes: true, delete_note: true } }],
    ] as const) {
      const res = await dev.client.request(method, path, body);
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    }
    const { client } = await connectApp(dev.user.mcpUrl, dev.client, { name: 'Claude' });
    const added = await client.callTool({ name: `${sandboxId}__add_note`, arguments: { text: 'my real note' } });
    assert.deepEqual(added.structuredContent, { id: 'n1' });
    await client.close();
    const real = notesHook.calls().at(-1)!.body.user.id as string;
    assert.deepEqual([...notesOf(real)], [['n1', 'my real note']]);

    // AI apps off and the delete switched off: the person's gates are shut.
    assert.equal((await dev.client.patch('/api/settings', { aiApps: false })).status, 200);
    assert.equal((await dev.client.patch(`/api/installs/${sandboxId}`, { tools: { delete_note: false } })).status, 200);

    const seen = notesHook.received.length;
    const run = await key.post(`/api/addons/${sandboxId}/check`, [
      { tool: 'search_notes' },
      { tool: 'delete_note', arguments: { id: 'n1' }, approve: 'allow' },
      { tool: 'add_note', arguments: { text: 'a test note' } },
      { tool: 'search_notes' },
    ]);
    assert.equal(run.status, 200, run.text);
    assert.deepEqual([...notesOf(real)], [['n1', 'my real note']], "the allowed delete did not reach the developer's real note");
    const [search, del, add, again] = run.body.tools;
    assert.deepEqual(search.result.structuredContent, { notes: [] }, 'the test person has none of the real notes');
    assert.match(del.refused, /There is no note with id n1/);
    assert.deepEqual(add.result.structuredContent, { id: 'n1' });
    assert.deepEqual(again.result.structuredContent, { notes: ['a test note'] });

    // Every delivery of the script, the confirm included, named the same test person.
    const deliveries = notesHook.received.slice(seen);
    assert.deepEqual(deliveries.map((d) => d.body.type), ['tool.call', 'tool.confirm', 'tool.call', 'tool.call', 'tool.call']);
    assert.equal(deliveries[2]!.body.approval?.channel, 'check script', 'the allowed delete carries the simulated decision');
    const ids = new Set(deliveries.map((d) => d.body.user.id));
    assert.equal(ids.size, 1);
    const sandbox = [...ids][0] as string;
    assert.notEqual(sandbox, real, "the add-on never sees the developer's real user.id in a check script");
    assert.notEqual(sandbox, dev.user.id);
    assert.match(sandbox, /^usr_check_[A-Za-z0-9_-]{26}$/, 'an add-on can tell a check-script delivery by its user.id');
    assert.match(real, /^usr_[A-Za-z0-9_-]{26}$/);

    // The developer's real data is as it was; the test person's data is its own, and stays its own.
    assert.deepEqual([...notesOf(real)], [['n1', 'my real note']]);
    assert.deepEqual([...notesOf(sandbox)], [['n1', 'a test note']]);
    const next = await key.post(`/api/addons/${sandboxId}/check`, [{ tool: 'search_notes' }]);
    assert.deepEqual(next.body.tools[0].result.structuredContent, { notes: ['a test note'] });
    assert.equal(notesHook.calls().at(-1)!.body.user.id, sandbox, 'the test person is stable for the developer and add-on');
  });

  it("gives each developer a test person of their own, in each add-on its own", async () => {
    // The first suite's add-on, by its developer, and a second add-on by the same developer.
    await api.post(`/api/addons/${id}/check`, [{ tool: 'add_note', arguments: { text: 'x' } }]);
    const first = hook.calls().at(-1)!.body.user.id;
    const second = `${id}-b`;
    const created = await api.post('/api/addons', notesManifest(second, hook.url));
    assert.equal(created.status, 201, created.text);
    hook.setSecret(created.body.signingSecret);
    await api.post(`/api/addons/${second}/check`, [{ tool: 'add_note', arguments: { text: 'x' } }]);
    const other = hook.calls().at(-1)!.body.user.id;
    assert.match(first, /^usr_check_/);
    assert.match(other, /^usr_check_/);
    assert.notEqual(first, other, 'not linkable across add-ons');
  });
});
