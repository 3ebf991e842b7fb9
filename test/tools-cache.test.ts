// The person's enabled tools are cached per process and dropped on the bus ('tools'). The process
// that made a change must see it at once, whatever the bus does: with Redis the message comes back
// to it a moment after the route answered, and the app's next tools/list may land in that moment.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TOOLS_CHANNEL } from '@toolport/core';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { holdBus } from './helpers/bus';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
before(async () => {
  [tp, hook] = await Promise.all([startToolport(), startAddonServer({ search_notes: () => ({ text: 'No notes.' }) })]);
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

describe("the person's enabled tools on the process that changed them", () => {
  it('show a switch and an uninstall at once, before the bus message comes back', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true, add_note: false }, 'cache');
    const names = async () => (await tp.svc.tools.get(person.user.id)).list.map((t) => t.name).sort();
    assert.deepEqual(await names(), ['search_notes'], 'cached now');
    const held = holdBus(tp.svc, TOOLS_CHANNEL);
    try {
      assert.equal((await person.client.patch(`/api/installs/${person.addonId}`, { tools: { add_note: true } })).status, 200);
      assert.deepEqual(await names(), ['add_note', 'search_notes'], 'switched on at once');
      assert.equal((await person.client.delete(`/api/installs/${person.addonId}`)).status, 204);
      assert.deepEqual(await names(), [], 'uninstalled at once');
      assert.ok(held.messages.length >= 2, 'the other processes are still told');
    } finally {
      await held.release();
    }
  });
});
