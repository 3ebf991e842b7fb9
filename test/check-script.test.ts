import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
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
