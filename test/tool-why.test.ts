// Issue #41, "sentences that say why": a call to a tool that exists for the person but that this app
// cannot call says which (not given to this app, switched off, taken off the catalog) and where the
// person changes it; a misspelled name, or a tool of an add-on the person does not have, still
// reads "does not exist". Through the SDK's client, as an app meets it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { operatorOf } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), add_note: () => ({ text: 'added' }), delete_note: () => ({ text: 'deleted' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const textOf = (r: any) => (r.content as Array<{ text: string }>).map((c) => c.text).join('\n');

describe('a tool the app cannot call', () => {
  it('says why when the tool is the person’s, and "does not exist" otherwise', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true, add_note: true, delete_note: false }, 'why');
    const elsewhere = await personWithNotes(tp.url, hook, { search_notes: true }, 'notmine');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const connection = (await person.client.get('/api/connections')).body.find((c: { appName: string }) => c.appName === 'Claude');
      const chose = await person.client.put(`/api/connections/${connection.id}/tools`, { tools: [`${person.addonId}__search_notes`], newTools: false });
      assert.equal(chose.status, 200, chose.text);
      const call = async (name: string) => {
        const r = await app.callTool({ name, arguments: {} });
        assert.equal(r.isError, true, `${name}: ${JSON.stringify(r)}`);
        return textOf(r);
      };
      const sent = hook.calls().length;

      assert.equal(await call(`${person.addonId}__search_nots`), `The tool "${person.addonId}__search_nots" does not exist. Call tools/list to see the available tools.`);
      assert.equal(
        await call(`${person.addonId}__add_note`),
        `The person has not given this app the tool "${person.addonId}__add_note". They can give it to this app in Toolport at ${tp.url}/apps; then call tools/list again.`,
      );
      assert.equal(
        await call(`${person.addonId}__delete_note`),
        `The tool "${person.addonId}__delete_note" is switched off in the person's Toolport. They can switch it on at ${tp.url}/addons; then call tools/list again.`,
      );
      // Another person's add-on, which this person never installed: nothing about it is told.
      assert.equal(await call(`${elsewhere.addonId}__search_notes`), `The tool "${elsewhere.addonId}__search_notes" does not exist. Call tools/list to see the available tools.`);

      const op = await operatorOf(tp.url);
      const delisted = await op.post(`/api/operator/listings/${person.addonId}/decision`, { decision: 'delist', reason: 'Under review.' });
      assert.equal(delisted.status, 200, delisted.text);
      assert.equal(
        await call(`${person.addonId}__search_notes`),
        `Toolport's operators have taken the add-on "Notes" off the catalog for now, so "${person.addonId}__search_notes" cannot be called. Do not retry it.`,
      );
      assert.equal(hook.calls().length, sent, 'nothing reached the add-on');

      const log = (await person.client.get('/api/calls')).body.items.map((c: { outcome: string; tool: string }) => [c.outcome, c.tool]).reverse();
      assert.deepEqual(log, [
        ['unknown_tool', 'search_nots'],
        ['not_given', 'add_note'],
        ['switched_off', 'delete_note'],
        ['unknown_tool', 'search_notes'],
        ['held_off', 'search_notes'],
      ]);
    } finally {
      await app.close();
    }
  });
});
