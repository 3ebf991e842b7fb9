// Issue #30, "Activity that tells the truth": the charts are the server's sums over a chosen period
// (every call in it, not the 50 rows a page loads), and latency is split into the person's wait
// and the add-on's own time, at both sizes. Issue #43, "people read names, never ids or codes":
// tools by title and add-ons by name (a tool since removed too), outcomes and decisions in words,
// an x-axis whose labels differ, and a row that opens its call.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { pendingOf, sleep } from './helpers/approvals';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
const SEARCHES = 56;
const WAIT_MS = 400;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport({ env: { LIMIT_CALLS_PER_PERSON: '100000', LIMIT_CALLS_PER_APP: '100000' } });
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
  person = await personWithNotes(tp.url, hook, { search_notes: true, delete_note: true }, 'activity');
  const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
  for (let i = 0; i < SEARCHES; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, SEARCHES - i) }, (_, j) => app.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: `q${i + j}` } })));
  }
  // Two deletes the person allows after a while: their time is mostly the person's wait.
  for (const id of ['n1', 'n2']) {
    const calling = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id } });
    const pending = await pendingOf(person.client, id);
    await sleep(WAIT_MS);
    assert.equal((await person.client.post(`/api/approvals/${pending.id}/decision`, { decision: 'allow' })).status, 200);
    await calling;
  }
  await app.close();
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

describe('the activity API', () => {
  it('sums every call of the period on the server, by outcome and bucket', async () => {
    const r = await person.client.get('/api/calls/activity?period=24h');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.totals.calls, SEARCHES + 2, 'more than one page of the call log');
    assert.equal(r.body.totals.ok, SEARCHES + 2);
    assert.equal(r.body.buckets.length, 24);
    assert.equal(r.body.buckets.reduce((s: number, b: { ok: number }) => s + b.ok, 0), SEARCHES + 2);
    const page = await person.client.get('/api/calls');
    assert.equal(page.body.items.length, 50, 'the log itself is paged');
    const filtered = await person.client.get(`/api/calls/activity?period=1h&outcome=denied`);
    assert.equal(filtered.body.totals.calls, 0);
    assert.equal((await person.client.get('/api/calls/activity?period=1y')).status, 422);
    const other = await newPerson(tp.url, 'activity-other');
    assert.equal((await other.client.get('/api/calls/activity')).body.totals.calls, 0, 'another person sees none of these');
  });

  it('splits latency into the person\'s wait and the add-on\'s time', async () => {
    const r = await person.client.get(`/api/calls/activity?period=24h&addon=${person.addonId}`);
    const [row] = r.body.latency;
    assert.equal(row.addon, person.addonId);
    assert.equal(row.calls, SEARCHES + 2);
    assert.equal(row.asked, 2);
    assert.ok(row.waitP50Ms >= WAIT_MS, `the wait's median ${row.waitP50Ms} ms covers the ${WAIT_MS} ms the person took`);
    assert.ok(row.addonP50Ms !== null && row.addonP50Ms < row.waitP50Ms, `the add-on's own median ${row.addonP50Ms} ms is apart from the wait`);
  });
});

for (const size of Object.keys(SIZES) as Size[]) {
  it(`draws the period's sums and the latency split in Chromium at ${SIZES[size].width} px`, async () => {
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
    try {
      await page.goto('/activity');
      const chart = page.locator('.chart[data-total]');
      await chart.waitFor();
      assert.equal(await chart.getAttribute('data-total'), String(SEARCHES + 2));
      assert.match((await chart.locator('svg').getAttribute('aria-label')) ?? '', new RegExp(`^${SEARCHES + 2} calls from`));
      const split = page.locator(`[data-latency="${person.addonId}"]`);
      assert.match((await split.locator('[data-part="wait"]').textContent()) ?? '', /your wait \d+ ms/);
      assert.match((await split.locator('[data-part="addon"]').textContent()) ?? '', /add-on \d+ ms/);
      await page.getByLabel('Period').selectOption('1h');
      await page.waitForURL(/period=1h/);
      assert.equal(await page.locator('.chart[data-total]').getAttribute('data-total'), String(SEARCHES + 2));
      const { scrollWidth, clientWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
      assert.ok(scrollWidth <= clientWidth, `${scrollWidth} > ${clientWidth}`);
      assert.deepEqual(await axeSerious(page), []);
      await screenshots(page, `activity-period-${size}`);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
}

describe('names, not ids or codes (#43)', () => {
  before(async () => {
    // An app asks for a tool that never existed, then the add-on's next release drops delete_note.
    const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
    const unknown = await app.callTool({ name: `${person.addonId}__shred_everything`, arguments: {} });
    assert.equal(unknown.isError, true);
    await app.close();
    const manifest = notesManifest(person.addonId, hook.url, { visibility: 'public' });
    manifest.tools = manifest.tools.filter((t) => t.name !== 'delete_note');
    const pushed = await person.dev.client.put(`/api/addons/${person.addonId}`, manifest);
    assert.equal(pushed.status, 200, pushed.text);
  });

  for (const size of Object.keys(SIZES) as Size[]) {
    it(`shows titles, names and words, distinct ticks, and a row opens its call (${SIZES[size].width} px)`, async () => {
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/activity');
        await page.locator('tr[data-call]').first().waitFor();
        await page.locator('.chart[data-total]').waitFor();
        const shown = await page.locator('main').innerText();
        // What a person reads: no `addon__tool`, no add-on id, no snake_case code (`unknown_tool`,
        // `search_notes`), and a 24-hour axis whose labels differ. Each is told apart below.
        const ticks = await page.locator('.chart-x span').allInnerTexts();
        const problems = [
          ...(shown.match(/\S*__\S*/g) ?? []).slice(0, 3).map((id) => `a tool id is shown: ${id}`),
          ...(shown.includes(person.addonId) ? [`the add-on's id is shown: ${person.addonId}`] : []),
          ...[...new Set(shown.match(/\b[a-z]+_[a-z_]+\b/g) ?? [])].map((code) => `a code is shown: ${code}`),
          ...(ticks.length < 3 || new Set(ticks).size < ticks.length ? [`the x-axis reads ${JSON.stringify(ticks)}`] : []),
        ];
        assert.deepEqual(problems, []);
        const rows = page.locator('tr[data-call]');
        const row = (title: string) => rows.filter({ has: page.locator('.c-tool', { hasText: title }) }).first();
        // A tool the add-on no longer has keeps the title it was released with; one that never existed reads as words.
        assert.match(await row('Delete a note').innerText(), /Delete a note[\s\S]*Notes[\s\S]*Allowed in the dashboard[\s\S]*Answered/);
        assert.match(await row('Shred everything').innerText(), /Shred everything[\s\S]*Notes[\s\S]*No such tool/);
        assert.match(await row('Search notes').innerText(), /Search notes[\s\S]*Answered/);
        assert.equal(await page.locator(`[data-latency="${person.addonId}"] .latency-name`).innerText(), 'Notes');
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `activity-names-${size}`);

        // The add-on filter offers the add-on by its name.
        await page.getByLabel('Add-on', { exact: true }).selectOption({ label: 'Notes' });
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.waitForURL(new RegExp(`addon=${person.addonId}`));

        // A click anywhere on a row (here its outcome) opens that call's page.
        const target = row('Shred everything');
        const callId = await target.getAttribute('data-call');
        await target.locator('.c-outcome').click();
        await page.waitForURL(`**/calls/${callId}`);
        await page.locator(`[data-call-page="${callId}"]`).waitFor();
        assert.equal((await page.locator('h1').innerText()).trim(), 'Shred everything');
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  }
});
