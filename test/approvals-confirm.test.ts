import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';
import { openEvents, pendingOf } from './helpers/approvals';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
/** The add-on's `confirm` answer, by the note id the call names. */
const describeNote = new Map<string, unknown>();

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: describeNote.get(b.arguments.id) ?? null }));
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

/** A person with Notes, an MCP app, and a held delete_note call for `noteId`: its approval as listed, then denied. */
async function held(noteId: string, confirm: unknown) {
  describeNote.set(noteId, confirm);
  const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'confirm');
  const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
  const approval = await pendingOf(person.client, noteId);
  return {
    person,
    approval,
    async deny() {
      assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' })).status, 200);
      await calling;
      await app.client.close();
    },
  };
}

describe('confirm descriptors, as Raycast writes them, bounded', () => {
  it('leaves out info rows without a value and shows the rest of the description', async () => {
    const call = await held('n1', {
      message: 'Delete the note “Trip plan”?',
      info: [{ name: 'Note', value: 'Trip plan' }, { name: 'Folder' }, { name: 'Created', value: '2026-01-01 10:00 UTC' }],
      style: 'destructive',
    });
    assert.deepEqual(call.approval.confirm, {
      message: 'Delete the note “Trip plan”?',
      info: [{ name: 'Note', value: 'Trip plan' }, { name: 'Created', value: '2026-01-01 10:00 UTC' }],
      style: 'destructive',
    });
    await call.deny();
  });

  it('cuts 1,000 info rows and a 1 MB message to their bounds, says so, and the delivery log says what was cut', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => ({ name: `Row ${i + 1}`, value: `value ${i + 1}` }));
    rows[2] = { name: 'Long', value: 'v'.repeat(5000) };
    const call = await held('n2', { message: 'x'.repeat(1024 * 1024), info: rows });
    const { confirm } = call.approval;
    const message = Array.from(confirm.message as string);
    assert.equal(message.length, 500);
    assert.equal(message.at(-1), '…');
    assert.equal(confirm.info.length, 20);
    assert.deepEqual(confirm.info[0], { name: 'Row 1', value: 'value 1' });
    assert.deepEqual(confirm.info[19], { name: 'Row 20', value: 'value 20' });
    assert.equal(Array.from(confirm.info[2].value as string).length, 200);
    assert.ok(confirm.info[2].value.endsWith('…'));
    assert.equal(confirm.infoOmitted, 980);

    const log = await call.person.dev.client.get(`/api/addons/${call.person.addonId}/deliveries`);
    assert.equal(log.status, 200, log.text);
    const described = (log.body.deliveries as any[]).find((d) => d.type === 'tool.confirm');
    assert.ok(described, 'the confirm delivery is logged');
    assert.equal(described.errorClass, null);
    assert.match(described.detail, /confirm\.message cut from 1048576 to 500 characters/);
    assert.match(described.detail, /confirm\.info\[2\] cut to 200 characters/);
    assert.match(described.detail, /the first 20 are shown, 980 left out/);
    await call.deny();
  });

  it('still refuses a description of the wrong shape, falling back to the plain approval', async () => {
    const call = await held('n3', { message: 'Delete it?', info: [{ name: 'Count', value: 3 }] });
    assert.equal(call.approval.confirm, null);
    const log = await call.person.dev.client.get(`/api/addons/${call.person.addonId}/deliveries`);
    const described = (log.body.deliveries as any[]).find((d) => d.type === 'tool.confirm');
    assert.equal(described.errorClass, 'bad_answer');
    assert.match(described.detail, /confirm\.info\[0\]/);
    await call.deny();
  });
});

describe('approvals name the tool as the person knows it', () => {
  it('lists and streams the tool’s title and the add-on’s name beside their ids', async () => {
    describeNote.set('n4', { message: 'Delete the note n4?' });
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'confirm');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const events = await openEvents(tp.url, person.client);
    try {
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n4' } });
      const approval = await pendingOf(person.client, 'n4');
      assert.equal(approval.toolTitle, 'Delete a note');
      assert.equal(approval.addonName, 'Notes');
      assert.equal(approval.tool, 'delete_note');
      assert.equal(approval.addon, person.addonId);
      const live = await events.waitFor((e) => e.event === 'approval' && e.data.id === approval.id);
      assert.equal(live.data.toolTitle, 'Delete a note');
      assert.equal(live.data.addonName, 'Notes');

      assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'deny' })).status, 200);
      await calling;
      const decided = await events.waitFor((e) => e.event === 'approval.decided' && e.data.id === approval.id);
      assert.equal(decided.data.status, 'denied');
      const all = (await person.client.get('/api/approvals?status=all')).body as any[];
      const listed = all.find((a) => a.id === approval.id);
      assert.equal(listed.status, 'denied');
      assert.equal(listed.toolTitle, 'Delete a note');
      assert.equal(listed.addonName, 'Notes');
    } finally {
      await events.close();
      await app.client.close();
    }
  });
});
