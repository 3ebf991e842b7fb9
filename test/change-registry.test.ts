// Issue #38: verbs say what they changed (svc.changes) and each cache declares which changes drop
// it. This holds every cache kind to the changes it reads, so a missed invalidation fails here:
// a new cache must be listed, and a cache that stops following a change it depends on is caught
// by its declaration (Caches refuses to follow an undeclared kind) or by a stale read below.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { verifyAccessToken } from '@toolport/core';
import { CACHE_KINDS } from '../packages/core/src/caches';
import { CHANGE_KINDS, type ChangeKind } from '../packages/core/src/events/changes';
import { rulesOf } from '../packages/core/src/approvals/rules';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

/** What each cache reads, as the changes that make it stale. */
const DEPENDS_ON: Record<string, ChangeKind[]> = {
  'gate lookups': ['gate'],
  'verified tokens': [],
  'approval rules': ['rules'],
  'delivery targets': ['addon'],
  'signing keys': [],
  'metadata document failures': [],
  'account refreshes': [],
  'watched add-ons': [],
  'live delivery streams': [],
  'vapid keys': [],
};

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
before(async () => {
  [tp, hook] = await Promise.all([startToolport(), startAddonServer({ search_notes: () => ({ text: 'No notes.' }) })]);
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

describe('the registry of who reads what', () => {
  it('lists every cache kind, each following exactly the changes it depends on', () => {
    assert.deepEqual(CACHE_KINDS.map((k) => k.name).sort(), Object.keys(DEPENDS_ON).sort(), 'a new cache says here what it reads');
    for (const kind of CACHE_KINDS) {
      assert.deepEqual([...kind.follows].sort(), [...DEPENDS_ON[kind.name]!].sort(), `${kind.name} follows what it depends on`);
      for (const change of kind.follows) assert.ok((CHANGE_KINDS as readonly string[]).includes(change));
    }
  });

  it('drops a cached gate on a gate change, on this process at once', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'gate');
    const app = await connectApp(person.user.mcpUrl, person.client);
    const token = app.provider.tokens()!.access_token;
    const grantId = decodeJwt(token).gid as string;
    await verifyAccessToken(tp.svc, token, person.user.mcpUrl);
    await tp.svc.db.execute(sql`update oauth_grants set revoked_at = now() where id = ${grantId}`);
    await verifyAccessToken(tp.svc, token, person.user.mcpUrl); // still cached: the write announced nothing
    await tp.svc.changes.changed('gate', { userId: person.user.id, grantId });
    await assert.rejects(verifyAccessToken(tp.svc, token, person.user.mcpUrl), /This app was disconnected/);
    await app.client.close();
  });

  it("drops a person's cached tools on a tools change, and everyone's on an add-on change", async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true, add_note: false }, 'tools');
    const names = async () => (await tp.svc.tools.get(person.user.id)).list.map((t) => t.name).sort();
    assert.deepEqual(await names(), ['search_notes']);
    const switchBehindTheCache = (on: boolean) =>
      tp.svc.db.execute(sql`update tool_switches set enabled = ${on} where user_id = ${person.user.id} and tool_name = 'add_note'`);
    await switchBehindTheCache(true);
    assert.deepEqual(await names(), ['search_notes'], 'still cached');
    await tp.svc.changes.changed('tools', { userId: person.user.id });
    assert.deepEqual(await names(), ['add_note', 'search_notes']);
    await switchBehindTheCache(false);
    await tp.svc.changes.changed('addon', { addonId: person.addonId });
    assert.deepEqual(await names(), ['search_notes']);
  });

  it("drops a person's cached rules on a rules change", async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'rules');
    assert.equal((await rulesOf(tp.svc, person.user.id)).size, 0);
    const set = await person.client.put('/api/rules', { addon: person.addonId, tool: 'search_notes', mode: 'never' });
    assert.equal(set.status, 200, set.text);
    assert.equal((await rulesOf(tp.svc, person.user.id)).size, 1, 'the verb announced it');
    await tp.svc.db.execute(sql`delete from approval_rules where user_id = ${person.user.id}`);
    assert.equal((await rulesOf(tp.svc, person.user.id)).size, 1, 'still cached');
    await tp.svc.changes.changed('rules', {});
    assert.equal((await rulesOf(tp.svc, person.user.id)).size, 0);
  });
});
