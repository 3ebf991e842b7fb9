// Issue #30, "Phone layout": the sticky header stays one compact bar on short pages too, the current
// tab is scrolled into view, and chart labels keep a legible size and shape at any width.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { dashboardAs, SIZES, type Size } from './helpers/dashboard';
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
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }) });
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
