import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { signatureHeaders } from '../packages/core/src/outbound/signing';
import { createNotesAddon, notesAddon } from '@toolport/example-notes';
import { NoteStore } from '../examples/notes/src/store';

const secret = `whsec_${randomBytes(32).toString('base64')}`;

function deliverer(store = new NoteStore()) {
  const handle = createNotesAddon(store).handler({ secrets: [secret] });
  return async (type: string, tool: string, args: Record<string, unknown>, userId: string, callId = `call_${randomUUID()}`) => {
    const body = JSON.stringify({
      type, addon: 'notes', tool, arguments: args,
      call: { id: callId, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
      user: { id: userId }, app: { name: 'Test', clientId: 'c' },
    });
    const headers = signatureHeaders({ id: callId, timestamp: Date.now() / 1000, body, secrets: [secret] });
    const res = await handle(new Request('http://notes.test/webhook', { method: 'POST', headers, body }));
    assert.equal(res.status, 200);
    return (await res.json()) as any;
  };
}

describe('example: notes', () => {
  it('ships an addon.json that is exactly the kit-generated manifest', () => {
    const file = path.join(import.meta.dirname, '../examples/notes/addon.json');
    const text = readFileSync(file, 'utf8');
    assert.deepEqual(JSON.parse(text), notesAddon.manifest());
    assert.equal(text, `${JSON.stringify(notesAddon.manifest(), null, 2)}\n`, 'regenerate with npm run manifest -w @toolport/example-notes');
    const del = notesAddon.manifest().tools.find((t) => t.name === 'delete_note')!;
    assert.equal(del.destructive, true);
    assert.equal(del.confirm, true);
  });

  it('adds, searches (all words, newest first) and keeps each person to their own notes', async () => {
    const send = deliverer();
    const a1 = await send('tool.call', 'add_note', { text: '# Shopping\nOat milk and bread' }, 'usr_a');
    assert.match(a1.json.id, /^note_/);
    assert.equal(a1.json.title, 'Shopping');
    await send('tool.call', 'add_note', { text: 'Ideas\nBread recipes with oat flour' }, 'usr_a');
    await send('tool.call', 'add_note', { text: 'Secret of B: oat bread' }, 'usr_b');

    const both = await send('tool.call', 'search_notes', { query: 'OAT bread' }, 'usr_a');
    assert.deepEqual(both.json.notes.map((n: any) => n.title), ['Ideas', 'Shopping'], 'newest first, case-insensitive');
    assert.equal(both.json.notes[1].preview, 'Oat milk and bread');
    const one = await send('tool.call', 'search_notes', { query: 'milk bread' }, 'usr_a');
    assert.deepEqual(one.json.notes.map((n: any) => n.title), ['Shopping']);
    assert.equal((await send('tool.call', 'search_notes', {}, 'usr_a')).json.total, 2);
    assert.deepEqual((await send('tool.call', 'search_notes', { query: 'secret' }, 'usr_a')).json.notes, []);

    // Another person's note id is unknown here: no approval to give, and nothing is deleted.
    const bNote = (await send('tool.call', 'search_notes', {}, 'usr_b')).json.notes[0];
    assert.deepEqual(await send('tool.confirm', 'delete_note', { id: bNote.id }, 'usr_a'), { confirm: null });
    assert.match((await send('tool.call', 'delete_note', { id: bNote.id }, 'usr_a')).error, /no note with id/);
    assert.equal((await send('tool.call', 'search_notes', {}, 'usr_b')).json.total, 1);
  });

  it('describes a deletion for the approval, deletes it, then says it does not exist', async () => {
    const send = deliverer();
    const { json: note } = await send('tool.call', 'add_note', { text: 'Trip plan\nTrain at 9' }, 'usr_c');
    const confirm = await send('tool.confirm', 'delete_note', { id: note.id }, 'usr_c');
    assert.equal(confirm.confirm.message, 'Delete the note “Trip plan”?');
    assert.equal(confirm.confirm.style, 'destructive');
    assert.deepEqual(confirm.confirm.info[0], { name: 'Note', value: 'Trip plan' });
    assert.equal(confirm.confirm.info[1].name, 'Created');
    assert.deepEqual(await send('tool.call', 'delete_note', { id: note.id }, 'usr_c'), { text: 'Deleted the note “Trip plan”.' });
    assert.match((await send('tool.call', 'delete_note', { id: note.id }, 'usr_c')).error, /no note with id/);
    assert.deepEqual(await send('tool.confirm', 'delete_note', { id: note.id }, 'usr_c'), { confirm: null });
  });

  it('adds one note per call id, refuses empty text, and keeps notes in NOTES_FILE across restarts', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'notes-'));
    try {
      const file = path.join(dir, 'notes.json');
      const send = deliverer(new NoteStore(file));
      const first = await send('tool.call', 'add_note', { text: 'Once' }, 'usr_d', 'call_same');
      const retry = await send('tool.call', 'add_note', { text: 'Once' }, 'usr_d', 'call_same');
      assert.deepEqual(retry, first);
      assert.match((await send('tool.call', 'add_note', { text: '  \n ' }, 'usr_d')).error, /empty/);
      const reopened = deliverer(new NoteStore(file));
      const found = await reopened('tool.call', 'search_notes', {}, 'usr_d');
      assert.deepEqual(found.json.notes.map((n: any) => n.id), [first.json.id]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
