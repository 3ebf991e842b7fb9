// Issue #30, "Approvals you can trust at a glance": the card names the tool and its add-on, Allow is
// styled as the consequential action, and a decided or expired approval leaves a trace that
// outlasts a visit to another page and a reload (the Recent list, from the server).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport({ env: { APPROVAL_TIMEOUT_SECONDS: '8' } });
  hook = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete the note “Trip plan”?', style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

for (const size of Object.keys(SIZES) as Size[]) {
  describe(`approvals at ${SIZES[size].width} px`, () => {
    it('names the tool and add-on, styles Allow as the consequential action, and keeps decided and expired ones in Recent', async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, `trust-${size}`);
      const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/approvals');
        await page.locator('[data-empty="approvals"]').waitFor();
        const allowed = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
        const card = page.locator('[data-approval]');
        await card.waitFor({ timeout: 15_000 });
        assert.equal((await card.getByRole('heading', { level: 2 }).textContent())?.trim(), 'Claude wants to run Delete a note · Notes');

        const look = await card.evaluate((el) => {
          const danger = getComputedStyle(document.documentElement).getPropertyValue('--danger').trim();
          const probe = document.createElement('span');
          probe.style.color = danger;
          document.body.append(probe);
          const dangerRgb = getComputedStyle(probe).color;
          probe.remove();
          const fill: Record<string, string> = {};
          for (const b of el.querySelectorAll('button')) fill[b.textContent?.trim() ?? ''] = getComputedStyle(b).backgroundColor;
          return { danger: dangerRgb, allow: fill.Allow, deny: fill.Deny };
        });
        assert.equal(look.allow, look.danger, `Allow is filled with the danger colour (${JSON.stringify(look)})`);
        assert.notEqual(look.deny, look.danger, 'Deny is the plain way out');
        await screenshots(page, `approval-trust-${size}`);
        await card.getByRole('button', { name: 'Allow' }).click();
        await allowed;

        // One nobody answers: it expires (8 s here, room for a busy machine) and leaves its trace too.
        const expired = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n2' } });
        await card.waitFor({ timeout: 15_000 });
        await card.waitFor({ state: 'detached', timeout: 20_000 });
        await expired;

        const recent = async () =>
          page.locator('[data-decided]').evaluateAll((els) => els.map((el) => `${el.getAttribute('data-status')}: ${el.textContent?.trim().replace(/\s+/g, ' ')}`));
        await page.locator('[data-decided][data-status="expired"]').waitFor({ timeout: 10_000 });
        // Another page and back, then a reload: the trace is still there, from the server.
        await page.getByRole('link', { name: 'Activity' }).click();
        await page.locator('#page-title', { hasText: 'Activity' }).waitFor();
        await page.getByRole('link', { name: /^Approvals/ }).click();
        await page.locator('[data-decided][data-status="expired"]').waitFor({ timeout: 10_000 });
        await page.reload();
        await page.locator('[data-decided][data-status="allowed"]').waitFor({ timeout: 10_000 });
        const list = await recent();
        assert.equal(list.length, 2, JSON.stringify(list));
        // Each row tells its call by its arguments, and an allow by what came of it.
        assert.match(list[0]!, /^expired: Delete a note · Notes for Claude ?id: "n2" ?Expired/);
        assert.match(list[1]!, /^allowed: Delete a note · Notes for Claude ?id: "[^"]+" ?Allowed ?· done ?in the dashboard/);
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `approval-recent-${size}`);
        assert.deepEqual(errors, []);
      } finally {
        await close();
        await app.close();
      }
    });
  });
}
