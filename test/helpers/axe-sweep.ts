// Issue #30: axe-core finds no serious or critical violation on any page state, at both sizes, in
// light and in dark mode; dark mode follows the system setting. Screenshots of each are saved.
// One file per size (dashboard-axe-*.test.ts); each state is reached once and checked in light, then
// with the system switched to dark on the same page.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './addon-server';
import { launchBrowser, newContext, SAVE_SCREENSHOTS, watchErrors } from './browser';
import { axeSerious, SIZES, type Size } from './dashboard';
import type { Client } from './http';
import { connectApp } from './mcp';
import { startToolport, type Toolport } from './target';

const SHOTS = path.resolve(import.meta.dirname, '../../test-results/screenshots/axe');

/** Walks every page state at one size, in light and in dark mode. */
export function sweep(size: Size) {
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
let app: Awaited<ReturnType<typeof connectApp>>['client'];

before(async () => {
  await ensureDashboardBuilt();
  mkdirSync(SHOTS, { recursive: true });
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete the note “Groceries”?', info: [{ name: 'Created', value: 'Monday' }], style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
  person = await personWithNotes(tp.url, hook, { search_notes: true, delete_note: true }, 'axe', (m) => {
    // One setting of each kind, none required (a required one unset would stop its calls): the add-on's page shows the form.
    Object.assign(m, { settings: [
      { name: 'api_key', title: 'API key', summary: 'From your Notes account.', kind: 'secret' },
      { name: 'signature', title: 'Signature', kind: 'text', default: 'Sent from Toolport' },
      { name: 'max_notes', title: 'Most notes per search', kind: 'number' },
      { name: 'markdown', title: 'Write Markdown', kind: 'boolean', default: true },
      { name: 'notebook', title: 'Notebook', kind: 'choice', choices: ['Personal', 'Work'] },
    ] });
  });
  app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
  for (let i = 0; i < 3; i++) await app.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: `q${i}` } });
  await person.dev.client.post('/api/keys', { name: 'laptop' });
});
after(async () => {
  for (const t of tabs.values()) await (await t).page.context().close().catch(() => {});
  await app?.close();
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** One tab per person for the whole sweep (a new context per state costs seconds on a busy machine). */
const tabs = new Map<string, Promise<{ page: Page; errors: string[] }>>();
function tab(size: Size, who: string, as?: Client) {
  let t = tabs.get(who);
  if (!t) {
    t = (async () => {
      const ctx = await newContext(browser, tp.url, SIZES[size]);
      if (as) await ctx.addCookies([...as.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
      const page = await ctx.newPage();
      return { page, errors: watchErrors(page) };
    })();
    tabs.set(who, t);
  }
  return t;
}

/** A page state: how to reach it, as whom. */
interface State { name: string; as: 'anonymous' | 'person' | 'dev'; go(page: Page): Promise<void>; }
const states: State[] = [
  { name: 'signin', as: 'anonymous', go: async (p) => { await p.goto('/signin'); await p.locator('#page-title').waitFor(); } },
  {
    name: 'signin-error', as: 'anonymous', go: async (p) => {
      await p.goto('/signin');
      await p.getByLabel('Email').fill('nobody@example.com');
      await p.getByLabel('Password').fill('wrong password here');
      await p.getByRole('button', { name: 'Sign in', exact: true }).click();
      await p.getByRole('alert').waitFor();
    },
  },
  { name: 'signup', as: 'anonymous', go: async (p) => { await p.goto('/signup'); await p.locator('#page-title').waitFor(); } },
  { name: 'developers', as: 'anonymous', go: async (p) => { await p.goto('/developers'); await p.locator('[data-developers]').waitFor(); } },
  { name: 'home', as: 'person', go: async (p) => { await p.goto('/'); await p.getByTestId('mcp-url').waitFor(); } },
  { name: 'home-dialog', as: 'person', go: async (p) => { await p.goto('/'); await p.getByRole('button', { name: 'Get a new URL' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'addons', as: 'person', go: async (p) => { await p.goto('/addons'); await p.locator('[data-tool]').first().waitFor(); } },
  {
    name: 'addons-rule-warning', as: 'person', go: async (p) => {
      await p.goto('/addons');
      const rules = p.locator('[data-rules-for="delete_note"]');
      await rules.locator('summary').click();
      await rules.getByLabel('For', { exact: true }).selectOption({ index: 1 }); // the first app after "Every app"
      await rules.getByLabel('Rule', { exact: true }).selectOption('allow');
      await rules.getByRole('button', { name: /^Save rule for/ }).click();
      await p.getByRole('dialog').waitFor();
    },
  },
  { name: 'addons-search', as: 'person', go: async (p) => { await p.goto('/addons'); await p.getByRole('searchbox').fill('zzz'); await p.getByText('Nothing in the catalog matches').waitFor(); } },
  { name: 'catalog-detail', as: 'person', go: async (p) => { await p.goto(`/addons/${person.addonId}`); await p.locator('[data-catalog]').waitFor(); await p.locator('[data-settings]').waitFor(); } },
  { name: 'approvals-empty', as: 'person', go: async (p) => { await p.goto('/approvals'); await p.locator('[data-empty="approvals"]').waitFor(); } },
  {
    name: 'approvals-card', as: 'person', go: async (p) => {
      await p.goto('/approvals');
      await p.locator('[data-empty="approvals"]').waitFor();
      void app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } }).catch(() => {});
      await p.locator('[data-approval]').waitFor({ timeout: 15_000 });
    },
  },
  { name: 'apps', as: 'person', go: async (p) => { await p.goto('/apps'); await p.locator('[data-connection]').waitFor(); } },
  { name: 'activity', as: 'person', go: async (p) => { await p.goto('/activity'); await p.locator('[data-call]').first().waitFor(); } },
  { name: 'not-found', as: 'person', go: async (p) => { await p.goto('/nothing-here'); await p.locator('#page-title').waitFor(); } },
  { name: 'developer', as: 'dev', go: async (p) => { await p.goto('/developer'); await p.locator('[data-addon]').waitFor(); } },
  { name: 'developer-keys', as: 'dev', go: async (p) => { await p.goto('/developer/keys'); await p.locator('[data-key]').waitFor(); } },
  { name: 'developer-addon', as: 'dev', go: async (p) => { await p.goto(`/developer/addons/${person.addonId}`); await p.locator('#deliveries-h').waitFor(); } },
];

/** Relative luminance of a CSS rgb() colour. */
function luminance(rgb: string) {
  const [r, g, b] = (rgb.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

  {
    describe(`axe-core, light and dark mode, ${SIZES[size].width}×${SIZES[size].height}`, () => {
      for (const s of states) {
        it(`${s.name}: no serious or critical violation in either mode, and dark colours`, async () => {
          const who = s.as === 'anonymous' ? undefined : s.as === 'dev' ? person.dev.client : person.client;
          const { page, errors } = await tab(size, s.as, who);
          errors.length = 0;
          await page.emulateMedia({ colorScheme: 'light' });
          await s.go(page);
          for (const scheme of ['light', 'dark'] as const) {
            await page.emulateMedia({ colorScheme: scheme });
            const colours = await page.evaluate(() => {
              const main = document.querySelector('main') ?? document.body;
              let el: Element | null = main;
              let bg = 'rgba(0, 0, 0, 0)';
              while (el && /rgba\(0, 0, 0, 0\)|transparent/.test(bg)) {
                bg = getComputedStyle(el).backgroundColor;
                el = el.parentElement;
              }
              return { bg, text: getComputedStyle(document.querySelector('h1') ?? main).color };
            });
            if (scheme === 'dark') {
              assert.ok(luminance(colours.bg) < 0.05, `the background is ${colours.bg} in dark mode`);
              assert.ok(luminance(colours.text) > 0.6, `headings are ${colours.text} in dark mode`);
            } else {
              assert.ok(luminance(colours.bg) > 0.8, `the background is ${colours.bg} in light mode`);
            }
            const serious = await axeSerious(page);
            if (SAVE_SCREENSHOTS) await page.screenshot({ path: path.join(SHOTS, `${s.name}-${size}-${scheme}.png`), fullPage: true });
            assert.deepEqual(serious, [], `${scheme} mode: ${JSON.stringify(serious, null, 1)}`);
          }
          assert.deepEqual(errors, []);
        });
      }
    });
  }
}
