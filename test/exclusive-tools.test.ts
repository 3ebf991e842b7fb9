// Issue #42, "exclusive tools": a tool marked `exclusive` runs one call at a time for each person,
// with its add-on's other exclusive tools; later calls wait their turn, in order, within the call's
// budget, and on services across API processes (the line is on Redis). Through real SDK clients.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { startToolport, TARGET, UNLIMITED_CALLS, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

/** Per person (the delivery’s user.id): how many of their add_note calls are at the add-on now, and the most ever. */
const running = new Map<string, { now: number; most: number; order: string[] }>();
/** A call whose text names a gate waits at the add-on until the gate opens. */
const gates = new Map<string, () => void>();

before(async () => {
  tp = await startToolport({ env: UNLIMITED_CALLS });
  hook = await startAddonServer({
    add_note: async (body) => {
      const who = running.get(body.user.id) ?? { now: 0, most: 0, order: [] };
      running.set(body.user.id, who);
      who.now++;
      who.most = Math.max(who.most, who.now);
      who.order.push(body.arguments.text);
      const gate = body.arguments.text.startsWith('gate:') ? new Promise<void>((r) => gates.set(body.arguments.text, r)) : sleep(20);
      await gate;
      who.now--;
      return { text: `added ${body.arguments.text}` };
    },
    search_notes: () => ({ text: 'none found' }),
  });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const exclusiveAddNote = (m: { tools: Array<Record<string, unknown>> }) => {
  m.tools.find((t) => t.name === 'add_note')!.exclusive = true;
};

async function personWithExclusiveTool(prefix: string) {
  const person = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true }, prefix, exclusiveAddNote);
  return { ...person, addNote: `${person.addonId}__add_note`, search: `${person.addonId}__search_notes` };
}

/** The add-on's record of this person's calls (their subject is the one on the first delivery with this text). */
function seenBy(text: string) {
  const d = hook.calls().find((c) => c.body.arguments?.text === text);
  assert.ok(d, `the call "${text}" reached the add-on`);
  return running.get(d.body.user.id)!;
}

async function opened(gate: string) {
  while (!gates.has(gate)) await sleep(10);
  gates.get(gate)!();
}

const textOf = (r: any) => (r.content as Array<{ text: string }>).map((c) => c.text).join('\n');

describe('an exclusive tool', () => {
  it('runs 20 parallel calls of one person one at a time, each answered (SDK v1)', async () => {
    const person = await personWithExclusiveTool('excl');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => client.callTool({ name: person.addNote, arguments: { text: `par-${i}`} })),
      );
      for (const [i, r] of results.entries()) assert.equal(textOf(r), `added par-${i}`, `call ${i} ran and was answered`);
      const who = seenBy('par-0');
      assert.equal(who.order.length, 20);
      assert.equal(who.most, 1, 'never two of this person’s calls at the add-on at once');
    } finally {
      await client.close();
    }
  });

  it('takes waiting calls in the order they came, holds back none of the add-on’s other tools, nor another person (SDK v2)', async () => {
    const person = await personWithExclusiveTool('excl-order');
    const other = await personWithExclusiveTool('excl-other');
    const { client } = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Cursor' });
    const { client: otherClient } = await connectAppV2(other.user.mcpUrl, other.client, { name: 'Cursor' });
    try {
      const first = client.callTool({ name: person.addNote, arguments: { text: 'gate:first'} });
      while (!gates.has('gate:first')) await sleep(10);
      // Each joins the line before the next is sent.
      const later: Array<Promise<unknown>> = [];
      for (const i of [1, 2, 3, 4]) {
        later.push(client.callTool({ name: person.addNote, arguments: { text: `in-order-${i}`} }));
        await sleep(150);
      }
      // Not exclusive: it runs while the exclusive call is at the add-on.
      assert.equal(textOf(await client.callTool({ name: person.search, arguments: { query: 'q' } })), 'none found');
      // Another person's exclusive call does not wait for this person's.
      assert.equal(textOf(await otherClient.callTool({ name: other.addNote, arguments: { text: 'other-person'} })), 'added other-person');
      assert.equal(seenBy('gate:first').order.length, 1, 'the waiting calls are held until the first ends');

      await opened('gate:first');
      assert.equal(textOf(await first), 'added gate:first');
      await Promise.all(later);
      assert.deepEqual(seenBy('gate:first').order, ['gate:first', 'in-order-1', 'in-order-2', 'in-order-3', 'in-order-4']);
      assert.equal(seenBy('gate:first').most, 1);
    } finally {
      await client.close();
      await otherClient.close();
    }
  });

  it('leaves the line when the app cancels a waiting call, and the next one runs', async () => {
    const person = await personWithExclusiveTool('excl-cancel');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const first = client.callTool({ name: person.addNote, arguments: { text: 'gate:hold'} });
      while (!gates.has('gate:hold')) await sleep(10);
      const abort = new AbortController();
      const cancelled = client.callTool({ name: person.addNote, arguments: { text: 'never-sent'} }, undefined, { signal: abort.signal });
      await sleep(200);
      abort.abort('the person changed their mind');
      await assert.rejects(cancelled);
      const next = client.callTool({ name: person.addNote, arguments: { text: 'after-cancel'} });
      await sleep(200);
      await opened('gate:hold');
      await first;
      assert.equal(textOf(await next), 'added after-cancel');
      assert.ok(!hook.calls().some((c) => c.body.arguments?.text === 'never-sent'), 'the cancelled call never reached the add-on');
    } finally {
      await client.close();
    }
  });

  it('gives up waiting when the call’s budget runs out, saying why, and sends nothing', async () => {
    // Its own Toolport, with the contract's 55 s budget cut to 3.
    const short = await startToolport({ env: { CALL_BUDGET_SECONDS: '3' } });
    try {
      const person = await personWithNotes(short.url, hook, { add_note: true }, 'excl-late', exclusiveAddNote);
      const name = `${person.addonId}__add_note`;
      const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
      const first = client.callTool({ name, arguments: { text: 'gate:long' } });
      while (!gates.has('gate:long')) await sleep(10);
      const late = await client.callTool({ name, arguments: { text: 'too-late' } });
      assert.equal(late.isError, true);
      assert.match(textOf(late), /runs one call at a time, and this person's earlier calls kept it busy for all of this call's time \(a call has 3 seconds in all\), so it did not run/);
      await opened('gate:long');
      await first;
      assert.ok(!hook.calls().some((c) => c.body.arguments?.text === 'too-late'), 'the late call was never sent');
      await client.close();
    } finally {
      await short.stop();
    }
  });

  it('is refused as a manifest key only when it is not true or false', async () => {
    const { newPerson } = await import('./helpers/http');
    const { notesManifest } = await import('./helpers/addon-server');
    const dev = await newPerson(tp.url, 'dev');
    const manifest = notesManifest(`excl-bad-${process.pid % 1000}`, hook.url);
    (manifest.tools[0] as Record<string, unknown>).exclusive = 'yes';
    const res = await dev.client.post('/api/addons', manifest);
    assert.equal(res.status, 422, res.text);
    assert.match(res.text, /\/tools\/0\/exclusive/);
  });

  it('waits its turn across two API processes sharing Redis', { skip: TARGET !== 'services' && 'one process on the embedded default' }, async () => {
    const person = await personWithExclusiveTool('excl-procs');
    // A second API process on the same Postgres and Redis, serving the same public URL.
    const second = await startToolport({ backing: tp.backing, keepBacking: true, env: { ...UNLIMITED_CALLS, PUBLIC_URL: tp.url } });
    const { client, provider } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const viaSecond = new McpClient({ name: 'Claude', version: '1.0.0' });
    try {
      await viaSecond.connect(new StreamableHTTPClientTransport(new URL(new URL(person.user.mcpUrl).pathname, second.url), { authProvider: provider }));
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? viaSecond : client).callTool({ name: person.addNote, arguments: { text: `procs-${i}`} })),
      );
      for (const [i, r] of results.entries()) assert.equal(textOf(r), `added procs-${i}`);
      assert.equal(seenBy('procs-0').most, 1, 'never two at once, whichever process holds the call');
    } finally {
      await viaSecond.close();
      await client.close();
      await second.close();
    }
  });
});
