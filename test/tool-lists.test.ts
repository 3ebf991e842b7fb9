// Issue #42, "tools that vary per person": an add-on with `"toolsPerPerson": true` is asked, by a
// signed tools.list delivery, which of its tools each person is offered; two people see different
// tools through a real client, a change the add-on announces reaches the app as a list change, and
// an answer that names a tool the manifest lacks, reshapes one, names 10,000 or comes late is
// refused with the last list kept. On services every process reads the same stored lists.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { signatureHeaders } from '../packages/core/src/outbound/signing';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let secret = '';

/** What the add-on offers each of its users (by user.id); anyone else gets every tool. */
const offers = new Map<string, unknown>();

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none found' }), add_note: () => ({ text: 'added' }) });
  const realSet = hook.setSecret.bind(hook);
  hook.setSecret = (s: string) => {
    secret = s;
    realSet(s);
  };
  hook.onToolsList(async (body) => {
    const offer = offers.get(body.user.id);
    if (typeof offer === 'function') return offer(body);
    return offer ?? { tools: body.tools };
  });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const perPerson = (m: Record<string, unknown>) => {
  m.toolsPerPerson = true;
};

/** A person with the add-on (its own registration) and both tools switched on, and their add-on user id. */
async function person(prefix: string) {
  const p = await personWithNotes(tp.url, hook, { search_notes: true, add_note: true }, prefix, perPerson);
  // Its registration just gave the hook this add-on's secret.
  const addonSecret = secret;
  const subject = await subjectOf(p);
  return { ...p, subject, secret: addonSecret };
}

/** The person's user.id at the add-on: the first tools.list delivery names it. */
async function subjectOf(p: { user: { mcpUrl: string }; client: any; addonId: string }) {
  const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Probe' });
  await client.listTools();
  await client.close();
  const asked = hook.received.filter((d) => d.body.type === 'tools.list' && d.body.addon === p.addonId);
  assert.ok(asked.length, 'the add-on was asked');
  return asked.at(-1)!.body.user.id as string;
}

/** The add-on says these users' lists changed, signed with its secret. */
async function announce(p: { addonId: string; secret: string }, users: string[]) {
  const body = JSON.stringify({ users });
  const headers = signatureHeaders({ id: `msg_${randomUUID()}`, timestamp: Date.now() / 1000, body, secrets: [p.secret] });
  return fetch(`${tp.url}/api/tool-lists/${p.addonId}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
}

const namesOf = async (client: { listTools(): Promise<{ tools: Array<{ name: string }> }> }) => (await client.listTools()).tools.map((t) => t.name.split('__')[1]);

describe('an add-on that chooses each person’s tools', () => {
  it('offers two people different tools, tells the add-on the manifest’s tools, settings and accounts, and hides the rest from calls', async () => {
    const reader = await person('per-a');
    const writer = await person('per-b');
    offers.set(reader.subject, { tools: ['search_notes'] });
    offers.set(writer.subject, { tools: ['search_notes', 'add_note'] });
    // Their first answers (every tool, before the offers were set) are kept a while: the add-on says they changed.
    for (const p of [reader, writer]) assert.equal((await announce(p, [p.subject])).status, 200);

    const { client: readerApp } = await connectApp(reader.user.mcpUrl, reader.client, { name: 'Claude' });
    const { client: writerApp } = await connectApp(writer.user.mcpUrl, writer.client, { name: 'Claude' });
    try {
      assert.deepEqual(await namesOf(readerApp), ['search_notes']);
      assert.deepEqual(await namesOf(writerApp), ['search_notes', 'add_note']);
      const hidden = await readerApp.callTool({ name: `${reader.addonId}__add_note`, arguments: { text: 'x' } });
      assert.equal(hidden.isError, true);
      assert.match((hidden.content as Array<{ text: string }>)[0]!.text, /does not offer the tool ".*__add_note" to this person right now/);
      assert.ok(!hook.calls().some((c) => c.body.addon === reader.addonId && c.body.tool === 'add_note'), 'nothing reached the add-on');

      const asked = hook.received.filter((d) => d.body.type === 'tools.list' && d.body.user.id === reader.subject).at(-1)!;
      assert.deepEqual(asked.body.tools, ['search_notes', 'add_note', 'delete_note']);
      assert.deepEqual(asked.body.accounts, []);
      assert.match(asked.body.call.deadline, /^\d{4}-/);
    } finally {
      await readerApp.close();
      await writerApp.close();
    }
  });

  it('tells the app the list changed when the add-on says so, and the app then lists the new tools', { timeout: 30_000 }, async () => {
    const p = await person('per-change');
    offers.set(p.subject, { tools: ['search_notes'] });
    await announce(p, [p.subject]);
    const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' });
    let heard!: () => void;
    const changed = new Promise<void>((resolve) => (heard = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => heard());
    try {
      assert.deepEqual(await namesOf(client), ['search_notes']);
      await sleep(300); // the client's GET stream is open
      offers.set(p.subject, { tools: ['search_notes', 'add_note'] });
      const res = await announce(p, [p.subject, 'usr_someone_else']);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { users: 1 });
      await changed;
      assert.deepEqual(await namesOf(client), ['search_notes', 'add_note']);
      assert.equal((await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'now' } })).isError, undefined);
    } finally {
      await client.close();
    }
  });

  it('refuses an answer that names a tool the manifest lacks, reshapes a tool, names 10,000 or comes late, keeping the last list', { timeout: 30_000 }, async () => {
    const p = await person('per-bad');
    offers.set(p.subject, { tools: ['search_notes'] });
    await announce(p, [p.subject]);
    const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' });
    try {
      assert.deepEqual(await namesOf(client), ['search_notes']);
      const bad: Array<[unknown, RegExp]> = [
        [{ tools: ['search_notes', 'launch_rockets'] }, /names `launch_rockets`, which the manifest does not have/],
        [{ tools: [{ name: 'add_note', inputSchema: { type: 'object' } }] }, /tool names only: a tool's definition and arguments are the manifest's/],
        [{ tools: Array.from({ length: 10_000 }, (_, i) => `t${i}`) }, /names 10000 tools, more than the 3 the manifest has/],
        [{ tools: ['add_note', 'add_note'] }, /names `add_note` twice/],
        [async () => { await sleep(3_500); return { tools: ['add_note'] }; }, /the add-on did not answer within 3 seconds/],
      ];
      for (const [answer, why] of bad) {
        offers.set(p.subject, answer);
        await announce(p, [p.subject]);
        assert.deepEqual(await namesOf(client), ['search_notes'], `the last list stands (${why})`);
        const logged = await waitFor(async () => {
          const res = await p.dev.client.get(`/api/addons/${p.addonId}/deliveries`);
          return (res.body.deliveries ?? res.body).find?.((d: any) => d.type === 'tools.list' && why.test(d.detail ?? ''));
        });
        assert.match(logged.detail, /the person keeps the tools last offered \(1\)/);
      }
    } finally {
      await client.close();
    }
  });

  it('refuses an unsigned or wrongly signed change message', async () => {
    const p = await person('per-sig');
    const body = JSON.stringify({ users: [p.subject] });
    const unsigned = await fetch(`${tp.url}/api/tool-lists/${p.addonId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(unsigned.status, 401);
    const headers = signatureHeaders({ id: 'msg_x', timestamp: Date.now() / 1000, body, secrets: [`whsec_${Buffer.alloc(32, 9).toString('base64')}`] });
    assert.equal((await fetch(`${tp.url}/api/tool-lists/${p.addonId}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body })).status, 401);
  });
});

async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const got = await probe();
    if (got) return got;
    await sleep(50);
  }
}
