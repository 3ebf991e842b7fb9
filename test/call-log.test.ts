import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { recordCall } from '@toolport/core';
import { endLostCalls } from '../packages/core/src/calls/call-log';
import { eq } from 'drizzle-orm';
import { executedRows } from '../packages/core/src/db/client';
import { calls } from '../packages/core/src/db/schema/index';
import { sleep } from './helpers/approvals';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
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

describe('a call at its add-on (its running row)', () => {
  it('shows in Running now and its own page, not in the log; its ending replaces it; one a stopped process left ends as lost', async () => {
    const me = await newPerson(tp.url);
    const call = (id: string, outcome: 'running' | 'ok', latencyMs = 1200) =>
      recordCall(tp.svc, { id, userId: me.user.id, appName: 'Claude', addonId: 'notes', toolName: 'add_note', argsDigest: '', outcome, latencyMs });
    const clock = tp.svc.clock;
    try {
      // Left running by a process that stopped three minutes ago: past any call's budget.
      const then = new Date(Date.now() - 180_000);
      tp.svc.clock = { now: () => then };
      call('call_left_behind', 'running');
    } finally {
      tp.svc.clock = clock;
    }
    const aWhileAgo = new Date(Date.now() - 2_000);
    tp.svc.clock = { now: () => aWhileAgo };
    call('call_at_addon', 'running');
    tp.svc.clock = clock;

    const running = (await me.client.get('/api/calls/running')).body;
    assert.deepEqual(running.map((c: any) => [c.callId, c.taskId, c.answerBy]).sort(), [['call_at_addon', null, null], ['call_left_behind', null, null]]);
    assert.deepEqual((await me.client.get('/api/calls')).body.items, [], 'the log holds calls that ended');
    const page = (await me.client.get('/api/calls/call_at_addon')).body;
    assert.deepEqual([page.state, page.outcome, page.endedAt, page.steps.map((s: any) => s.kind)], ['running', null, null, []]);

    call('call_at_addon', 'ok', 2500);
    await endLostCalls(tp.svc);
    const log = (await me.client.get('/api/calls')).body.items.map((c: any) => [c.id, c.outcome, c.latencyMs]).sort();
    assert.deepEqual(log, [['call_at_addon', 'ok', 2500], ['call_left_behind', 'lost', 1200]]);
    assert.deepEqual((await me.client.get('/api/calls/running')).body, []);
    assert.equal((await me.client.get('/api/calls/call_left_behind')).body.state, 'ended');

    // An ending that comes after the sweep changes nothing: the call is not taken back from lost.
    call('call_left_behind', 'ok');
    assert.deepEqual((await me.client.get('/api/calls?outcome=lost')).body.items.map((c: any) => c.id), ['call_left_behind']);
  });
});

describe('every call sent to its add-on has its row from then on', () => {
  it('a call is recorded running while its add-on works, in every process, before it has been there a second; its ending replaces the row', async () => {
    let release: () => void = () => {};
    let reached: () => void = () => {};
    const atAddon = new Promise<void>((r) => (reached = r));
    const hook = await startAddonServer({
      add_note: async () => {
        reached();
        await new Promise<void>((r) => (release = r));
        return { text: 'Added.' };
      },
    });
    try {
      const person = await personWithNotes(tp.url, hook, { add_note: true }, 'rec');
      const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
      const calling = client.callTool({ name: `${person.addonId}__add_note`, arguments: { text: 'milk' } });
      await atAddon;
      // Pushed when the call was sent: written once the process's pending rows are (10 ms batches).
      await tp.svc.logs.flushed();
      const rows = await tp.svc.db.select().from(calls).where(eq(calls.userId, person.user.id));
      assert.deepEqual(rows.map((r) => [r.outcome, r.addonId, r.toolName]), [['running', person.addonId, 'add_note']]);
      release();
      assert.equal(((await calling) as any).content[0].text, 'Added.');
      await tp.svc.logs.flushed();
      const ended = await tp.svc.db.select().from(calls).where(eq(calls.userId, person.user.id));
      assert.deepEqual(ended.map((r) => [r.id, r.outcome]), [[rows[0]!.id, 'ok']], 'one row, now ended');
      await client.close();
    } finally {
      await hook.close();
    }
  });
});

describe('the log writer (rows written behind the calls)', () => {
  const row = (id: string, userId: string) => ({
    id, userId, appName: 'Claude', addonId: 'notes', toolName: 'add_note', argsDigest: '', outcome: 'ok', latencyMs: 1, createdAt: new Date(),
  });

  it('writes a batch in one go, and a row the database refuses costs only that row', async () => {
    const me = await newPerson(tp.url);
    const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const { LogWriter } = await import('../packages/core/src/db/log-writer');
    const quiet = { info() {}, warn: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }), error: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }) };
    const writer = new LogWriter(tp.svc.database, quiet);
    const prefix = `call_lw_${Date.now()}`;
    for (let i = 0; i < 30; i++) writer.call(row(`${prefix}_${i}`, me.user.id));
    // A row for nobody: the batch fails, then row by row all but that one go in.
    writer.call(row(`${prefix}_nobody`, 'usr_nobody'));
    // The same call twice (running, then ended): one row.
    writer.call(row(`${prefix}_7`, me.user.id));
    writer.delivery({ id: `dlv_${prefix}`, addonId: 'notes', callId: `${prefix}_0`, type: 'tool.call', attempt: 1, latencyMs: 2, meta: { outcome: 'result' }, createdAt: new Date() });
    await writer.flushed();
    const page: any = await me.client.get('/api/calls?limit=200');
    const ids = page.body.items.map((i: any) => i.id).filter((id: string) => id.startsWith(prefix));
    assert.equal(ids.length, 30);
    assert.equal(new Set(ids).size, 30);
    const { sql } = await import('drizzle-orm');
    const dl = await tp.svc.db.execute(sql`select attempt, meta from deliveries where id = ${`dlv_${prefix}`}`);
    const rows = ((dl as { rows?: unknown[] }).rows ?? (dl as unknown as unknown[])) as Array<{ attempt: number; meta: unknown }>;
    assert.deepEqual(rows.map((r) => [r.attempt, r.meta]), [[1, { outcome: 'result' }]]);
    assert.ok(lines.some((l) => l.msg === 'log rows dropped' && l.fields?.dropped === 1), JSON.stringify(lines.map((l) => l.msg)));
  });

  it('lets a running row wait 50 ms for its ending: a quick call is one row, a slower one is running first, a reader gets it at once', async () => {
    const me = await newPerson(tp.url);
    const { LogWriter } = await import('../packages/core/src/db/log-writer');
    const { sql } = await import('drizzle-orm');
    // The real database, with each statement's call ids noted as they go by.
    const written: string[][] = [];
    const database = { ...tp.svc.database, run: (text: string, params: unknown[]) => {
      written.push(params.flat().filter((p): p is string => typeof p === 'string' && p.startsWith('call_rg_')));
      return tp.svc.database.run(text, params);
    } };
    const writer = new LogWriter(database, tp.svc.log);
    const id = (name: string) => `call_rg_${name}_${Date.now()}`;
    const [quick, slow, read] = [id('quick'), id('slow'), id('read')];
    const rowsOf = async (callId: string) => executedRows<{ outcome: string }>(await tp.svc.db.execute(sql`select outcome from calls where id = ${callId}`)).map((r) => r.outcome);

    writer.call({ ...row(quick, me.user.id), outcome: 'running' });
    writer.call({ ...row(slow, me.user.id), outcome: 'running' });
    // Past the writer's 10 ms batching, within the running row's grace.
    await sleep(25);
    writer.call(row(quick, me.user.id));
    await sleep(150);
    assert.deepEqual(await rowsOf(slow), ['running'], 'past its grace, the slower call is written running');
    writer.call(row(slow, me.user.id));
    writer.call({ ...row(read, me.user.id), outcome: 'running' });
    await writer.flushed();
    assert.deepEqual(await rowsOf(read), ['running'], 'a reader gets the waiting row at once');
    assert.deepEqual(await rowsOf(quick), ['ok']);
    assert.deepEqual(await rowsOf(slow), ['ok'], 'its ending replaced it');
    const times = (callId: string) => written.flat().filter((x) => x === callId).length;
    assert.deepEqual([times(quick), times(slow), times(read)], [1, 2, 1], 'the quick call was written once, as it ended');
    await writer.close();
  });

  it('writes what is pending on close, and a call is in the log when GET /api/calls answers', async () => {
    const me = await newPerson(tp.url);
    const { LogWriter } = await import('../packages/core/src/db/log-writer');
    const writer = new LogWriter(tp.svc.database, tp.svc.log);
    for (let i = 0; i < 5; i++) writer.call(row(`call_close_${Date.now()}_${i}`, me.user.id));
    await writer.close();
    // The service's own writer: pushed, not awaited, then read through the API at once.
    recordCall(tp.svc, { id: `call_now_${Date.now()}`, userId: me.user.id, appName: 'Claude', addonId: 'notes', toolName: 'x', argsDigest: '', outcome: 'ok', latencyMs: 1 });
    const page: any = await me.client.get('/api/calls?limit=50');
    assert.equal(page.body.items.length, 6);
  });
});
