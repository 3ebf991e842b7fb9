import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { launchBrowser, newContext, screenshots, watchErrors } from './helpers/browser';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  // As Raycast lets an extension write it: a row without a value, and more rows than are shown.
  hook.onConfirm(() => ({
    confirm: {
      message: 'Delete the note “Trip plan”?',
      info: [
        { name: 'Note', value: 'Trip plan' },
        { name: 'Folder' },
        ...Array.from({ length: 24 }, (_, i) => ({ name: `Line ${i + 1}`, value: `text ${i + 1}` })),
      ],
      style: 'destructive',
    },
  }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

describe('the approval card', () => {
  it('names the tool by its title and its add-on, and shows the description as far as it is bounded', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'card');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const ctx = await newContext(browser, tp.url);
    await ctx.addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    try {
      await page.goto('/approvals');
      await page.locator('[data-empty="approvals"]').waitFor();
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
      const card = page.locator('[data-approval]');
      await card.waitFor({ timeout: 15_000 });

      const heading = (await card.getByRole('heading', { level: 2 }).textContent()) ?? '';
      assert.equal(heading.trim(), 'Claude wants to run Delete a note · Notes');
      assert.doesNotMatch(heading, new RegExp(`delete_note|${person.addonId}`), 'no ids where names belong');

      await card.getByText('Delete the note “Trip plan”?').waitFor();
      const names = await card.locator('dl.info dt').allTextContents();
      assert.deepEqual(names, ['Note', ...Array.from({ length: 19 }, (_, i) => `Line ${i + 1}`)]);
      assert.equal((await card.locator('[data-info-omitted]').textContent())?.trim(), '5 more details were left out by Toolport (too many to show).');
      await screenshots(page, 'approval-card-bounded');

      await card.getByRole('button', { name: 'Deny' }).click();
      const result = (await calling) as { isError?: boolean };
      assert.equal(result.isError, true);
      const decided = page.locator('[data-decided]');
      await decided.waitFor();
      assert.match((await decided.textContent()) ?? '', /^Delete a note · Notes for Claude/);
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close();
      await app.client.close();
    }
  });

  it('keeps an approval that arrived while an older list of pending ones was still on its way', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'stale');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const ctx = await newContext(browser, tp.url);
    await ctx.addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
    const page = await ctx.newPage();
    // The list asked for when the live feed opens is read by the server now, before the call, but
    // reaches the page only after the call's approval came in over the feed: as on a busy network.
    let lists = 0;
    let releaseList!: () => void;
    const listHeld = new Promise<void>((resolve) => {
      void page.route('**/api/approvals?status=pending', async (route) => {
        lists += 1;
        const response = await route.fetch();
        if (lists !== 2) return route.fulfill({ response });
        const release = new Promise<void>((r) => (releaseList = r));
        resolve();
        await release;
        await route.fulfill({ response });
      });
    });
    const calls: Promise<unknown>[] = [];
    try {
      await page.goto('/approvals');
      await page.locator('[data-empty="approvals"]').waitFor();
      await listHeld;
      calls.push(app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'first' } }));
      await page.locator('[data-approval]').waitFor();
      const finished = page.waitForEvent('requestfinished', (r) => r.url().endsWith('/api/approvals?status=pending'));
      releaseList();
      await finished;
      // The list said "none pending"; it was older than the approval on screen, which stays.
      calls.push(app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'second' } }));
      await page.locator('[data-approval]').filter({ hasText: 'second' }).waitFor();
      assert.equal(await page.locator('[data-approval]').filter({ hasText: 'first' }).count(), 1, 'the first approval is still on screen');
      for (const id of ['first', 'second']) {
        await page.locator('[data-approval]').filter({ hasText: id }).getByRole('button', { name: 'Deny' }).click();
      }
      for (const r of (await Promise.all(calls)) as { isError?: boolean }[]) assert.equal(r.isError, true);
    } finally {
      await ctx.close();
      await app.client.close();
    }
  });
});
