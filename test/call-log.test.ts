import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { recordCall } from '@toolport/core';
import { newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
before(async () => { tp = await startToolport(); });
after(async () => { await tp?.stop(); });

describe('the call log', () => {
  it('pages newest first through ties without losing or repeating a row, filters, and stays per person', async () => {
    const me = await newPerson(tp.url);
    const other = await newPerson(tp.url);
    // Three calls per millisecond: the cursor must break ties by id.
    let t = Date.parse('2026-01-01T00:00:00Z');
    const clock = tp.svc.clock;
    const written: string[] = [];
    try {
      for (let i = 0; i < 61; i++) {
        if (i % 3 === 0) t += 1;
        const at = new Date(t);
        tp.svc.clock = { now: () => at };
        const id = `call_${String(i).padStart(3, '0')}`;
        written.push(id);
        await recordCall(tp.svc, {
          id, userId: me.user.id, appName: i % 2 ? 'Claude' : 'Cursor', addonId: 'notes', toolName: 'add_note',
          argsDigest: '', outcome: i % 5 ? 'ok' : 'failed', latencyMs: i,
        });
      }
      await recordCall(tp.svc, { id: 'call_other', userId: other.user.id, appName: 'Claude', addonId: 'notes', toolName: 'x', argsDigest: '', outcome: 'ok', latencyMs: 1 });
    } finally {
      tp.svc.clock = clock;
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await me.client.get(`/api/calls?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      seen.push(...page.body.items.map((i: any) => i.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    const expected = [...written].sort((a, b) => (a < b ? 1 : -1));
    assert.deepEqual(seen, expected);

    const claude = await me.client.get('/api/calls?app=Claude&outcome=ok&limit=200');
    assert.ok(claude.body.items.length > 0);
    assert.ok(claude.body.items.every((i: any) => i.app === 'Claude' && i.outcome === 'ok'));
    assert.equal((await me.client.get('/api/calls?cursor=garbage')).status, 422);
    assert.deepEqual((await other.client.get('/api/calls')).body.items.map((i: any) => i.id), ['call_other']);
  });
});
