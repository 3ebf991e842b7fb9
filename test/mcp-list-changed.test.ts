import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawnToolport } from './helpers/process';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { createBacking, freePort, startToolport, TARGET, type Backing, type Toolport } from './helpers/target';

/**
 * The SDK clients on both revisions (issue #27): v1 (@modelcontextprotocol/sdk, 2025-11-25) and v2
 * (@modelcontextprotocol/client) in its legacy mode and in auto mode (2026-07-28) list and call, and
 * hear `notifications/tools/list_changed` when the person changes their tools: on 2025-11-25's GET
 * stream, on 2026-07-28's subscriptions/listen, from another API process through the bus.
 */

/** Resolves on the next call of the returned handler. */
function nextCall() {
  let fire!: () => void;
  let promise = new Promise<void>((resolve) => (fire = resolve));
  return {
    handler: () => {
      fire();
    },
    /** The next notification; the test's own timeout is the bound. */
    next: async () => {
      await promise;
      promise = new Promise<void>((resolve) => (fire = resolve));
    },
  };
}

type Person = Awaited<ReturnType<typeof personWithNotes>>;
type Hook = Awaited<ReturnType<typeof startAddonServer>>;

/** A v1 client (its GET stream) and a v2 client in auto mode (its subscriptions/listen), each counting the list-changed notifications it hears. */
async function listeners(person: Person) {
  const v1 = await connectApp(person.user.mcpUrl, person.client, { name: 'Listener v1' });
  const heardV1 = nextCall();
  v1.client.setNotificationHandler(ToolListChangedNotificationSchema, heardV1.handler);
  const v2 = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Listener v2', mode: 'auto' });
  assert.equal(v2.client.getNegotiatedProtocolVersion(), '2026-07-28');
  const heardV2 = nextCall();
  v2.client.setNotificationHandler('notifications/tools/list_changed', heardV2.handler);
  const subscription = await v2.client.listen({ toolsListChanged: true });
  assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true });
  return {
    v1: v1.client,
    v2: v2.client,
    subscription,
    /** Both clients heard one more notification. */
    heard: () => Promise.all([heardV1.next(), heardV2.next()]),
    async close() {
      await subscription.close();
      await v1.client.close();
      await v2.client.close();
    },
  };
}

/** The person switches `tool` and both clients are told; each then lists what the person chose. */
async function switchAndHear(person: Person, base: string, l: Awaited<ReturnType<typeof listeners>>, tool: string, on: boolean) {
  const heard = l.heard();
  const res = await fetch(`${base}/api/installs/${person.addonId}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', cookie: [...person.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    body: JSON.stringify({ tools: { [tool]: on } }),
  });
  assert.equal(res.status, 200, await res.text());
  await heard;
  for (const client of [l.v1, l.v2]) {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.equal(names.includes(`${person.addonId}__${tool}`), on, names.join(', '));
  }
}

describe('the SDK clients on both revisions, one process', () => {
  let tp: Toolport;
  let hook: Hook;
  before(async () => {
    tp = await startToolport();
    hook = await startAddonServer({ add_note: (b) => ({ text: `added ${b.arguments.text}` }), search_notes: () => ({ text: 'none' }) });
  });
  after(async () => {
    await hook?.close();
    await tp?.stop();
  });

  it('v1 (2025-11-25), v2 legacy (2025-11-25) and v2 auto (2026-07-28) list the same tools and call them', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true });
    const v1 = (await connectApp(person.user.mcpUrl, person.client, { name: 'v1' })).client;
    const legacy = (await connectAppV2(person.user.mcpUrl, person.client, { mode: 'legacy' })).client;
    const modern = (await connectAppV2(person.user.mcpUrl, person.client, { mode: 'auto' })).client;
    assert.equal(legacy.getNegotiatedProtocolVersion(), '2025-11-25');
    assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.deepEqual(v1.getServerCapabilities(), { tools: { listChanged: true }, resources: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } });
    const expected = [`${person.addonId}__search_notes`, `${person.addonId}__add_note`];
    for (const [name, client] of [['v1', v1], ['v2 legacy', legacy], ['v2 auto', modern]] as const) {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), expected, name);
      const result = (await client.callTool({ name: `${person.addonId}__add_note`, arguments: { text: name } })) as { content: Array<{ text: string }>; isError?: boolean };
      assert.equal(result.isError, undefined, name);
      assert.equal(result.content[0]!.text, `added ${name}`, name);
    }
    // A call with progress on 2026-07-28: the streamed answer, read by the v2 client.
    const progressed = (await modern.callTool({ name: `${person.addonId}__search_notes`, arguments: {} }, { onprogress: () => {} })) as { content: Array<{ text: string }> };
    assert.equal(progressed.content[0]!.text, 'none');
    for (const client of [v1, legacy, modern]) await client.close();
  });

  it('tells both clients when the person switches a tool off and on, and when they accept a release', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true });
    const l = await listeners(person);
    try {
      await switchAndHear(person, tp.url, l, 'search_notes', false);
      await switchAndHear(person, tp.url, l, 'search_notes', true);
      // A new release changes add_note; the app keeps what the person accepted until they accept it.
      const manifest = notesManifest(person.addonId, hook.url, { visibility: 'public' });
      manifest.tools[1]!.summary = 'Adds a note and returns its id and its title.';
      assert.equal((await person.dev.client.put(`/api/addons/${person.addonId}`, manifest)).status, 200);
      const heard = l.heard();
      const accepted = await person.client.post(`/api/installs/${person.addonId}/accept`, { version: 2 });
      assert.equal(accepted.status, 200, accepted.text);
      await heard;
      const addNote = (await l.v2.listTools()).tools.find((t) => t.name === `${person.addonId}__add_note`)!;
      assert.match(addNote.description ?? '', /and its title/);
    } finally {
      await l.close();
    }
  });

  it('ends a listening app\'s streams when the person revokes it', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true });
    const l = await listeners(person);
    const connections = (await person.client.get('/api/connections')).body as Array<{ id: string; appName: string }>;
    for (const c of connections.filter((c) => c.appName === 'Listener v2')) assert.equal((await person.client.delete(`/api/connections/${c.id}`)).status, 204);
    // The server ends the subscription with its result (basic/patterns/subscriptions §Graceful Closure).
    assert.equal(await l.subscription.closed, 'graceful');
    await l.close();
  });
});

const skip = TARGET !== 'services' ? 'needs Postgres + Redis (several processes share them)' : false;

describe('list changes across two API processes', { skip }, () => {
  let backing: Backing;
  let hook: Hook;
  const procs: ChildProcess[] = [];
  const spawnApi = (publicUrl: string, port: number) => spawnToolport(procs, { env: backing.env, role: 'all', port, publicUrl });
  before(async () => {
    if (skip) return;
    backing = await createBacking();
    hook = await startAddonServer({ add_note: () => ({ text: 'ok' }), search_notes: () => ({ text: 'none' }) });
  });
  after(async () => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    await hook?.close();
    await backing?.drop();
  });

  it('tells the clients listening on process A when the person switches a tool through process B', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${pa}`;
    await spawnApi(publicUrl, pa);
    await spawnApi(publicUrl, pb);
    const person = await personWithNotes(publicUrl, hook, { add_note: true, search_notes: true });
    const l = await listeners(person);
    try {
      await switchAndHear(person, `http://127.0.0.1:${pb}`, l, 'add_note', false);
      await switchAndHear(person, `http://127.0.0.1:${pb}`, l, 'add_note', true);
    } finally {
      await l.close();
    }
  });
});
