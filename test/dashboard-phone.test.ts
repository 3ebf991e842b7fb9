// Issue #30, "Phone layout": the sticky header stays one compact bar on short pages too, the current
// tab is scrolled into view, and chart labels keep a legible size and shape at any width. Issue #43:
// the developer's add-on page on a phone, with a delivery log of tool, outcome and time, stays of
// sensible length however many deliveries there are.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let person: Awaited<ReturnType<typeof personWithNotes>>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  // add_note is broken: the add-on answers 400, as a bug in it would.
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), add_note: () => ({ status: 400, body: { oops: true } }) });
  ({ browser, close: closeBrowser } = await launchBrowser());
  person = await personWithNotes(tp.url, hook, { search_notes: true }, 'phone');
  const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
  for (let i = 0; i < 4; i++) await app.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: `q${i}` } });
  await app.close();
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** Each chart label's rendered size against the same text drawn plainly in its own font. */
const chartLabels = (page: Page) =>
  page.evaluate(() => {
    const ctx = document.createElement('canvas').getContext('2d')!;
    const labels = [...document.querySelectorAll('.chart text, .chart .chart-x span, .chart .chart-y')].filter((el) => el.textContent?.trim());
    return labels.map((el) => {
      const cs = getComputedStyle(el);
      ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const natural = ctx.measureText(el.textContent!.trim()).width;
      const box = el.getBoundingClientRect();
      return { text: el.textContent!.trim(), widthRatio: Math.round((box.width / natural) * 100) / 100, height: Math.round(box.height) };
    });
  });

describe('the phone header', () => {
  for (const path of ['/apps', '/approvals', '/activity', '/developer', '/addons', '/developer/keys']) {
    it(`is at most 88 px tall on ${path}`, async () => {
      const { page, close } = await dashboardAs(browser, tp.url, person.client, 'phone');
      try {
        await page.goto(path);
        await page.locator('#page-title').waitFor();
        await page.waitForLoadState('networkidle');
        const height = await page.locator('header.sidebar').evaluate((el) => Math.round(el.getBoundingClientRect().height));
        assert.ok(height <= 88, `the header is ${height} px tall`);
      } finally {
        await close();
      }
    });
  }

  it('scrolls the current tab into view', async () => {
    const { page, close } = await dashboardAs(browser, tp.url, person.client, 'phone');
    try {
      for (const path of ['/developer', '/activity', '/apps']) {
        await page.goto(path);
        await page.locator('#page-title').waitFor();
        const seen = await page.evaluate(() => {
          const nav = document.querySelector('.sidebar nav')!.getBoundingClientRect();
          const tab = document.querySelector('.sidebar a[aria-current="page"]')!.getBoundingClientRect();
          return { nav: [Math.round(nav.left), Math.round(nav.right)], tab: [Math.round(tab.left), Math.round(tab.right)] };
        });
        assert.ok(seen.tab[0]! >= seen.nav[0]! && seen.tab[1]! <= seen.nav[1]! - 16, `${path}: the current tab ${JSON.stringify(seen.tab)} is outside the visible nav ${JSON.stringify(seen.nav)}`);
      }
      await screenshots(page, 'phone-current-tab');
    } finally {
      await close();
    }
  });
});

for (const size of Object.keys(SIZES) as Size[]) {
  it(`keeps chart labels legible at ${SIZES[size].width} px`, async () => {
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
    try {
      await page.goto('/activity');
      await page.locator('.chart').first().waitFor();
      const labels = await chartLabels(page);
      assert.ok(labels.length >= 2, `labels: ${JSON.stringify(labels)}`);
      for (const l of labels) {
        assert.ok(l.widthRatio >= 0.9 && l.widthRatio <= 1.1, `"${l.text}" is drawn at ${l.widthRatio}× its width`);
        assert.ok(l.height >= 10, `"${l.text}" is ${l.height} px tall`);
      }
      await screenshots(page, `phone-chart-${size}`);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
}

describe('the developer page on a phone (#43)', () => {
  /** More than the API's page of 50: the page's length must not follow the log's. */
  const DELIVERIES = 60;
  /** Versions pushed: a dev loop pushes one at every save. */
  const VERSIONS = 12;

  it(`shows the delivery log as tool, outcome and time, and stays under 4 screens with ${DELIVERIES} deliveries and ${VERSIONS} versions`, async () => {
    const dev = await personWithNotes(tp.url, hook, { search_notes: true, add_note: true }, 'devphone');
    const app = (await connectApp(dev.user.mcpUrl, dev.client, { name: 'Claude' })).client;
    for (let i = 0; i < DELIVERIES - 2; i += 10) {
      await Promise.all(Array.from({ length: Math.min(10, DELIVERIES - 2 - i) }, (_, j) => app.callTool({ name: `${dev.addonId}__search_notes`, arguments: { query: `q${i + j}` } })));
    }
    for (let i = 0; i < 2; i++) assert.equal((await app.callTool({ name: `${dev.addonId}__add_note`, arguments: { text: 'x' } })).isError, true);
    await app.close();
    const manifest = notesManifest(dev.addonId, hook.url, { visibility: 'public' });
    for (let v = 2; v <= VERSIONS; v++) assert.equal((await dev.dev.client.put(`/api/addons/${dev.addonId}`, { ...manifest, releaseNotes: `Release ${v}.` })).status, 200);
    const log = (await dev.dev.client.get(`/api/addons/${dev.addonId}/deliveries`)).body;
    assert.equal(log.deliveries.length, 50, 'more deliveries than one page of the API');

    const { page, errors, close } = await dashboardAs(browser, tp.url, dev.dev.client, 'phone');
    try {
      await page.goto(`/developer/addons/${dev.addonId}`);
      const rows = page.locator('tr[data-delivery]');
      await rows.first().waitFor();
      await page.locator('[data-version]').first().waitFor();
      await page.waitForLoadState('networkidle');
      // The log names each delivery's tool and outcome in words, and shows no ids or codes. And a
      // sensible length: the sections above the log take about two screens, and the log shows its
      // newest rows with a way to more. Listing every delivery loaded (50), even at three lines
      // each, would pass 4 screens by its twentieth row; before #43 this page was over 10,000 px.
      const log = await page.locator('section', { has: page.getByRole('heading', { name: 'Delivery log' }) }).innerText();
      const { height, screen, sideways } = await page.evaluate(() => ({ height: document.documentElement.scrollHeight, screen: innerHeight, sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth }));
      const problems = [
        ...(log.includes('Add a note') && log.includes('Search notes') ? [] : ['no tool titles in the log']),
        ...(log.includes('Answered HTTP 400') ? [] : ['no outcome in words in the log']),
        ...[...new Set(log.match(/call_[\w-]{6,}|tool\.call|search_notes/g) ?? [])].slice(0, 3).map((id) => `shown as the text: ${id}`),
        ...(height < 4 * screen ? [] : [`the page is ${height} px tall, ${(height / screen).toFixed(1)} screens`]),
      ];
      assert.deepEqual(problems, []);
      assert.equal(sideways, 0);
      assert.deepEqual(await axeSerious(page), []);
      await screenshots(page, 'developer-addon-phone');

      // Each row: the tool's title, the outcome in words and a time of day, not the call's id.
      const failed = rows.first();
      const cells = (row: typeof failed) => Promise.all(['.d-tool', '.d-outcome .badge', '.d-when'].map((c) => row.locator(c).innerText()));
      const [tool = '', outcome, when = ''] = await cells(failed);
      assert.equal(tool.trim(), 'Add a note');
      assert.equal(outcome, 'Answered HTTP 400');
      assert.match(when, /^\d{1,2}:\d{2}:\d{2}/, 'a time of day, to the second');
      assert.deepEqual((await cells(rows.nth(2))).slice(0, 2), ['Search notes', 'Answered']);
      // The call's id is there for support, in the row's details.
      const callId = await failed.getAttribute('data-call');
      await failed.getByText('Details').click();
      await failed.getByText(callId!).waitFor();

      // The rest is a tap away: older deliveries, and past the first page of the API.
      const more = page.getByRole('button', { name: 'Show older deliveries' });
      for (let shown = await rows.count(); await more.count(); shown = await rows.count()) {
        await more.click();
        await page.waitForFunction((n) => document.querySelectorAll('tr[data-delivery]').length > n, shown);
      }
      assert.equal(await rows.count(), DELIVERIES, 'every delivery, the API’s second page too');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
