// Issue #45, retention: the operator sets how long calls and deliveries are kept, and what aged out
// is removed in the background while calls go on; a person clears their own call history, in the
// dashboard, and nobody else's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Browser } from 'playwright-core';
import { ConfigError, forgetOldLogs, parseConfig } from '@toolport/core';
import { executedRows } from '../packages/core/src/db/client';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import { dashboardAs } from './helpers/dashboard';
import { callsMeanwhile, connectApp } from './helpers/mcp';
import { captureLog } from './helpers/log';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser | undefined;
let closeBrowser: (() => Promise<void>) | undefined;

const captured = captureLog();

before(async () => {
  tp = await startToolport({ env: { RETAIN_CALLS_DAYS: '2', RETAIN_DELIVERIES_DAYS: '1', LIMIT_CALLS_PER_PERSON: '100000', LIMIT_CALLS_PER_APP: '100000' }, log: captured.log });
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }) });
  // The process's own sweep removes what aged out seconds after its start, then every ten minutes:
  // one old delivery shows it ran, so the removals below are the tests' own.
  await tp.svc.db.execute(sql`insert into deliveries (id, addon_id, call_id, type, attempt, latency_ms, created_at)
    values ('dlv_first_sweep', 'notes', 'call_first_sweep', 'tool.call', 1, 1, now() - interval '3 days')`);
  const swept = () => captured.logged.some((l) => JSON.parse(l).m === 'old log rows removed');
  for (let i = 0; i < 300 && !swept(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(swept(), 'the first sweep ran');
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

const count = async (text: ReturnType<typeof sql>) => Number(executedRows<{ n: number }>(await tp.svc.db.execute(text))[0]!.n);

/** Rows as old as `days`: what a deployment that has run for a while holds. */
async function oldRows(userId: string, addonId: string, n: number, days: number) {
  await tp.svc.db.execute(sql`
    insert into calls (id, user_id, app_name, addon_id, tool_name, args_digest, outcome, latency_ms, created_at)
    select 'call_old_' || ${userId} || '_' || ${days} || '_' || g, ${userId}, 'Claude', ${addonId}, 'search_notes', 'd', 'ok', 3, now() - make_interval(days => ${days}) - g * interval '1 second'
    from generate_series(1, ${n}) g`);
  await tp.svc.db.execute(sql`
    insert into deliveries (id, addon_id, call_id, type, attempt, status, latency_ms, created_at)
    select 'dlv_old_' || ${userId} || '_' || ${days} || '_' || g, ${addonId}, 'call_old_' || ${userId} || '_' || ${days} || '_' || g, 'tool.call', 1, 200, 3, now() - make_interval(days => ${days}) - g * interval '1 second'
    from generate_series(1, ${n}) g`);
}

describe('retention the operator sets', () => {
  it('refuses a retention of 0 or of 100 years with a sentence saying what it takes', () => {
    for (const [name, value] of [['RETAIN_CALLS_DAYS', '0'], ['RETAIN_DELIVERIES_DAYS', '36500'], ['RETAIN_AUDIT_DAYS', 'forever']] as const) {
      assert.throws(
        () => parseConfig({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.problems.includes(`${name} must be a whole number from 1 to 3650, not "${value}".`),
        `${name}=${value}`,
      );
    }
    assert.deepEqual(parseConfig({}).retention, { callsDays: 90, deliveriesDays: 30, auditDays: 400 }, 'the defaults');
  });

  it('removes the calls and deliveries past their time, in batches, while calls go on', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'keep');
    const userId = person.user.id;
    // 2,500 calls three days old (past 2), 1,500 a day and a half old (past deliveries' 1, not calls' 2).
    await oldRows(userId, person.addonId, 2_500, 3);
    await tp.svc.db.execute(sql`
      insert into calls (id, user_id, app_name, addon_id, tool_name, args_digest, outcome, latency_ms, created_at)
      select 'call_mid_' || g, ${userId}, 'Claude', ${person.addonId}, 'search_notes', 'd', 'ok', 3, now() - interval '36 hours'
      from generate_series(1, 1500) g`);
    await tp.svc.db.execute(sql`
      insert into deliveries (id, addon_id, call_id, type, attempt, status, latency_ms, created_at)
      select 'dlv_mid_' || g, ${person.addonId}, 'call_mid_' || g, 'tool.call', 1, 200, 3, now() - interval '36 hours'
      from generate_series(1, 1500) g`);

    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const calls = callsMeanwhile(client, `${person.addonId}__search_notes`, (n) => ({ query: `q${n}` }));
    const forgotten = await forgetOldLogs(tp.svc);
    const made = await calls.stop();
    await client.close();
    await tp.svc.logs.flushed();

    assert.deepEqual(forgotten, { calls: 2_500, deliveries: 4_000, audit: 0 }, 'calls past 2 days; deliveries past 1 day; no audit event is 400 days old');
    assert.ok(made > 0, 'calls went on meanwhile');
    const kept = await count(sql`select count(*)::int as n from calls where user_id = ${userId}`);
    assert.equal(kept, 1_500 + made, 'the younger calls and every call made meanwhile are kept');
    assert.equal(await count(sql`select count(*)::int as n from deliveries where call_id like 'call_old_%' or call_id like 'call_mid_%'`), 0);
    assert.equal(await count(sql`select count(*)::int as n from deliveries where addon_id = ${person.addonId}`), made, 'this minute\'s deliveries are kept');
    assert.deepEqual(await forgetOldLogs(tp.svc), { calls: 0, deliveries: 0, audit: 0 }, 'nothing left to remove');
  });
});

describe('a person clears their own call history', () => {
  it('in the dashboard: the calls and their deliveries go, another person\'s stay', async () => {
    await ensureDashboardBuilt();
    ({ browser, close: closeBrowser } = await launchBrowser());
    const me = await personWithNotes(tp.url, hook, { search_notes: true }, 'clear-me');
    const other = await personWithNotes(tp.url, hook, { search_notes: true }, 'clear-other');
    for (const p of [me, other]) {
      const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' });
      for (let i = 0; i < 3; i++) await client.callTool({ name: `${p.addonId}__search_notes`, arguments: { query: `q${i}` } });
      await client.close();
    }
    await tp.svc.logs.flushed();

    const tab = await dashboardAs(browser!, tp.url, me.client, 'desktop');
    try {
      const { page } = tab;
      await page.goto(`${tp.url}/activity`);
      await page.locator('tr[data-call]').first().waitFor();
      assert.equal(await page.locator('tr[data-call]').count(), 3);
      // The period's sums (which carry the operator's retention) load beside the rows.
      await page.locator('.history-keep', { hasText: 'Calls are kept for 2 days, then removed.' }).waitFor();
      await page.getByRole('button', { name: 'Clear history' }).click();
      const dialog = page.getByRole('dialog', { name: 'Clear your call history?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Clear history' }).click();
      await page.getByText('3 calls were removed from your history.').waitFor();
      await page.getByText('No calls yet.').waitFor();
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
    assert.equal(await count(sql`select count(*)::int as n from calls where user_id = ${me.user.id}`), 0);
    assert.equal(await count(sql`select count(*)::int as n from deliveries where addon_id = ${me.addonId}`), 0, 'with the add-on\'s records of delivering them');
    assert.equal(await count(sql`select count(*)::int as n from calls where user_id = ${other.user.id}`), 3, 'another person\'s history is not touched');
    assert.equal(await count(sql`select count(*)::int as n from deliveries where addon_id = ${other.addonId}`), 3);
    // The route names nobody: a parameter naming the other person clears only the caller's own (none left).
    const r = await me.client.delete(`/api/calls?userId=${other.user.id}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { removed: 0 });
    assert.equal(await count(sql`select count(*)::int as n from calls where user_id = ${other.user.id}`), 3);
  });
});
