// Issue #30, "Keyboard and screen readers": focus stays on, or moves sensibly from, the control the
// person used; a new approval is announced by a live region that was there before it; switch names
// do not change with state; the call log reads on a phone without a sideways scroll.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, insideViewport, SIZES, type Size } from './helpers/dashboard';
import { newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }), search_notes: () => ({ text: 'none' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** What has focus: its tag, role, accessible name as aria-label or text, and a data attribute of its nearest card. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    return {
      tag: el?.tagName.toLowerCase() ?? '',
      role: el?.getAttribute('role') ?? '',
      name: el?.getAttribute('aria-label') ?? el?.textContent?.trim() ?? '',
      id: el?.id ?? '',
      card: el?.closest('[data-approval]')?.getAttribute('data-approval') ?? null,
      tool: el?.closest('[data-tool]')?.getAttribute('data-tool') ?? null,
    };
  });

for (const size of Object.keys(SIZES) as Size[]) {
  describe(`keyboard and screen readers at ${SIZES[size].width} px`, () => {
    it('keeps focus on a switch toggled with the keyboard, and its name does not change', async () => {
      const person = await personWithNotes(tp.url, hook, { search_notes: false }, `kb-sw-${size}`);
      await person.client.patch('/api/settings', { aiApps: false });
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/');
        const ai = page.locator('#ai-apps-switch');
        await ai.waitFor();
        const nameBefore = await ai.evaluate((el) => el.textContent?.trim() ?? el.getAttribute('aria-label'));
        await ai.focus();
        await page.keyboard.press('Space');
        await page.waitForFunction(() => document.querySelector('#ai-apps-switch')?.getAttribute('aria-checked') === 'true');
        assert.equal((await focused(page)).id, 'ai-apps-switch', 'focus stayed on the AI apps switch');
        assert.equal(await ai.evaluate((el) => el.textContent?.trim() ?? el.getAttribute('aria-label')), nameBefore, 'same name on and off');

        await page.goto('/addons');
        const sw = page.locator('[data-tool="search_notes"] [role=switch]');
        await sw.waitFor();
        const label = await sw.getAttribute('aria-label');
        await sw.focus();
        await page.keyboard.press('Space');
        await page.waitForFunction(() => document.querySelector('[data-tool="search_notes"] [role=switch]')?.getAttribute('aria-checked') === 'true');
        const now = await focused(page);
        assert.deepEqual([now.role, now.tool], ['switch', 'search_notes'], `focus stayed on the tool's switch, not ${now.tag}`);
        assert.equal(await sw.getAttribute('aria-label'), label, 'same name on and off');
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });

    it('leaves focus on the password field after a wrong password', async () => {
      const someone = await newPerson(tp.url, `kb-pw-${size}`);
      const ctx = await newContext(browser, tp.url, SIZES[size]);
      const page = await ctx.newPage();
      try {
        await page.goto('/signin');
        await page.getByLabel('Email').fill(someone.email);
        await page.getByLabel('Password').fill('not the password at all');
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        await page.getByRole('alert').filter({ hasText: 'The email or password is wrong.' }).waitFor();
        await page.waitForFunction(() => document.activeElement !== document.body, undefined, { timeout: 2_000 }).catch(() => {});
        const now = await focused(page);
        assert.equal(now.id, 'password', `focus is on <${now.tag}> ${now.id}`);
        assert.deepEqual(await axeSerious(page), []);
      } finally {
        await ctx.close();
      }
    });

    it('announces a new approval in a live region that was there before it, and moves focus sensibly after Deny and Allow', async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, `kb-apr-${size}`);
      const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/approvals');
        await page.locator('[data-empty="approvals"]').waitFor();
        await page.locator('.live-live').waitFor();
        // Every live region on the page before anything arrives.
        const regions = await page.evaluate(() => {
          const found = [...document.querySelectorAll('[aria-live], [role=status], [role=alert], [role=log]')];
          found.forEach((el, i) => el.setAttribute('data-region-before', String(i)));
          return found.length;
        });
        assert.ok(regions > 0);
        const first = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
        await page.locator('[data-approval]').first().waitFor({ timeout: 15_000 });
        await page.waitForFunction(
          () => [...document.querySelectorAll('[data-region-before]')].some((el) => /Claude wants to run Delete a note · Notes/.test(el.textContent ?? '')),
          undefined,
          { timeout: 5_000 },
        ).catch(() => {});
        const said = await page.evaluate(() => [...document.querySelectorAll('[data-region-before]')].map((el) => el.textContent?.trim() ?? ''));
        assert.ok(said.some((t) => t.includes('Claude wants to run Delete a note · Notes')), `the regions there before said: ${JSON.stringify(said)}`);

        const second = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n2' } });
        await page.locator('[data-approval]').nth(1).waitFor({ timeout: 15_000 });
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `keyboard-approvals-${size}`);
        const [a1, a2] = await page.locator('[data-approval]').evaluateAll((els) => els.map((el) => el.getAttribute('data-approval')));
        await page.locator(`[data-approval="${a1}"]`).getByRole('button', { name: 'Deny' }).focus();
        await page.keyboard.press('Enter');
        await page.locator(`[data-approval="${a1}"]`).waitFor({ state: 'detached' });
        let now = await focused(page);
        assert.equal(now.card, a2, `after Deny, focus went to <${now.tag}> "${now.name.slice(0, 60)}", not the next card`);

        await page.locator(`[data-approval="${a2}"]`).getByRole('button', { name: 'Allow' }).focus();
        await page.keyboard.press('Enter');
        await page.locator(`[data-approval="${a2}"]`).waitFor({ state: 'detached' });
        now = await focused(page);
        assert.notEqual(now.tag, 'body', 'after Allow, focus did not drop to <body>');
        assert.match(now.name, /Delete a note · Notes|Nothing is waiting/, `after Allow, focus is on what was decided: ${now.name.slice(0, 80)}`);
        await Promise.all([first, second]);
        assert.deepEqual(errors, []);
      } finally {
        await close();
        await app.close();
      }
    });

    it('lays the call log out so outcome and latency show without a sideways scroll, and axe finds nothing serious', async () => {
      const person = await personWithNotes(tp.url, hook, { search_notes: true }, `kb-log-${size}`);
      const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
      for (let i = 0; i < 3; i++) await app.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: `q${i}` } });
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/activity');
        await page.locator('tr[data-call]').first().waitFor();
        for (const cell of ['tr[data-call] td:nth-child(5)', 'tr[data-call] td:nth-child(6)']) {
          for (const box of await insideViewport(page, cell)) assert.ok(box.inside, `${cell} is outside the window: ${JSON.stringify(box)}`);
        }
        const serious = await axeSerious(page);
        assert.deepEqual(serious, []);
        await screenshots(page, `keyboard-activity-${size}`);
        assert.deepEqual(errors, []);
      } finally {
        await close();
        await app.close();
      }
    });
  });
}
