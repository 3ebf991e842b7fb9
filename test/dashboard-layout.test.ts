// Issue #30, "Long text never breaks the layout": the longest unbroken text a manifest and an app
// may carry wraps; no page scrolls sideways and every switch stays on screen, at both sizes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser, SAVE_SCREENSHOTS, screenshots } from './helpers/browser';
import { dashboardAs, insideViewport, SIZES, sidewaysScroll, type Size } from './helpers/dashboard';
import { installFor, listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

/** Unbroken text of `n` characters that no lint refuses (no long run of one character). */
const unbroken = (n: number, seed = 'Wm') => Array.from({ length: n }, (_, i) => `${seed}${'0123456789'[i % 10]}`[i % 3]).join('');

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let world: Awaited<ReturnType<typeof hostileWorld>>;
const apps: Array<Awaited<ReturnType<typeof connectApp>>['client']> = [];

/** A developer's add-on with every text at its longest, unbroken; a person with it installed, an app let in and a call waiting. */
async function hostileWorld() {
  const dev = await newPerson(tp.url, 'long-dev');
  const id = `long-${process.pid % 1000}`;
  const m = notesManifest(id, hook.url, { visibility: 'public', name: unbroken(60), description: unbroken(300) });
  for (const t of m.tools) {
    t.title = unbroken(60, 'Tt');
    t.summary = unbroken(300, 'Ss');
  }
  const created = await dev.client.post('/api/addons', m);
  assert.equal(created.status, 201, created.text);
  hook.setSecret(created.body.signingSecret);
  await listPublicly(tp.url, id, dev);
  const person = await newPerson(tp.url, 'long-person');
  await installFor(person, id, { search_notes: true, delete_note: true });
  const app = (await connectApp(person.user.mcpUrl, person.client, { name: unbroken(60, 'Aa') })).client;
  await app.callTool({ name: `${id}__search_notes`, arguments: { query: unbroken(200, 'Qq') } });
  return { dev, person, app, id };
}

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: unbroken(200, 'Cc') } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
  world = await hostileWorld();
});
after(async () => {
  await world?.app.close();
  for (const a of apps) await a.close();
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

for (const size of Object.keys(SIZES) as Size[]) {
  const { width } = SIZES[size];
  describe(`long text at ${width} px`, () => {
    const pages = [
      { who: 'person', path: '/addons', ready: '[data-tool="delete_note"]' },
      { who: 'person', path: '/apps', ready: '[data-connection]' },
      { who: 'person', path: '/activity', ready: '[data-call]' },
      { who: 'dev', path: '/developer', ready: '[data-addon]' },
      { who: 'dev', path: () => `/developer/addons/${world.id}`, ready: '#about-h' },
    ] as const;
    for (const p of pages) {
      it(`${typeof p.path === 'string' ? p.path : '/developer/addons/:id'} wraps instead of scrolling sideways`, async () => {
        const { page, errors, close } = await dashboardAs(browser, tp.url, world[p.who].client, size);
        try {
          await page.goto(typeof p.path === 'string' ? p.path : p.path());
          await page.locator(p.ready).first().waitFor();
          const { scrollWidth, clientWidth } = await sidewaysScroll(page);
          assert.ok(scrollWidth <= clientWidth, `the page is ${scrollWidth} px wide in a ${clientWidth} px window`);
          if (p.path === '/addons') {
            for (const sw of await insideViewport(page, '[role=switch]')) assert.ok(sw.inside, `a switch is off screen: ${JSON.stringify(sw)}`);
          }
          if (SAVE_SCREENSHOTS) await page.screenshot({ path: `test-results/screenshots/long-text${typeof p.path === 'string' ? p.path.replace(/\//g, '-') : '-developer-addon'}-${size}.png`, fullPage: true });
          assert.deepEqual(errors, []);
        } finally {
          await close();
        }
      });
    }

    it('an approval card wraps a long title, name and confirm message', async () => {
      const { page, errors, close } = await dashboardAs(browser, tp.url, world.person.client, size);
      try {
        await page.goto('/approvals');
        await page.locator('[data-empty="approvals"]').waitFor();
        // An app of its own for this call: the world's app already made the other size's.
        const app = (await connectApp(world.person.user.mcpUrl, world.person.client, { name: unbroken(60, 'Aa') })).client;
        apps.push(app);
        const calling = app.callTool({ name: `${world.id}__delete_note`, arguments: { id: unbroken(64, 'Ii') } });
        const ended = calling.then((r) => `the call ended before its card showed: ${JSON.stringify(r).slice(0, 200)}`, (e) => `the call failed before its card showed: ${e}`);
        const shown = await Promise.race([page.locator('[data-approval]').waitFor({ timeout: 15_000 }).then(() => ''), ended]);
        assert.equal(shown, '');
        const { scrollWidth, clientWidth } = await sidewaysScroll(page);
        assert.ok(scrollWidth <= clientWidth, `the page is ${scrollWidth} px wide in a ${clientWidth} px window`);
        for (const b of await insideViewport(page, '[data-approval] .actions button')) assert.ok(b.inside, `a button is off screen: ${JSON.stringify(b)}`);
        await screenshots(page, `long-text-approval-${size}`);
        await page.locator('[data-approval]').getByRole('button', { name: /Deny/ }).click();
        await calling;
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  });
}
