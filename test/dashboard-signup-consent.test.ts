// Issue #30: sign-up reports every bad field at once (a taken email with a short password), and the
// consent page an app sends you to is in the dashboard's look, at both sizes, light and dark.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, SAVE_SCREENSHOTS, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { Client, newPerson } from './helpers/http';
import { TestOAuthProvider } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await tp?.stop();
});

describe('sign-up', () => {
  it('answers a taken email and a short password together', async () => {
    const someone = await newPerson(tp.url, 'taken');
    const r = await new Client(tp.url).post('/api/session/signup', { email: someone.email, password: 'short' });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(r.body.errors.map((e: { path: string }) => e.path), ['/email', '/password']);
    assert.match(r.body.errors[0].message, /already exists/);
    const taken = await new Client(tp.url).post('/api/session/signup', { email: someone.email, password: 'long enough password' });
    assert.equal(taken.status, 409, 'a taken email alone is still a conflict');
    assert.deepEqual(taken.body.errors, [{ path: '/email', message: 'An account with this email already exists: sign in instead.' }]);
  });

  it('says what is missing in sign-up words: which field, and what to give', async () => {
    const ctx = await newContext(browser, tp.url, SIZES.phone);
    const page = await ctx.newPage();
    try {
      await page.goto('/signup');
      const create = page.getByRole('button', { name: 'Create account' });
      const cases = [
        { email: '', password: '', says: 'To create your account, give your email and a password of at least 10 characters.' },
        { email: 'someone@example.com', password: '', says: 'To create your account, give a password of at least 10 characters.' },
        { email: '', password: 'long enough password', says: 'To create your account, give your email.' },
        { email: 'someone at example.com', password: 'long enough password', says: 'To create your account, give a valid email address.' },
      ];
      for (const c of cases) {
        await page.getByLabel('Email').fill(c.email);
        await page.getByLabel('Password').fill(c.password);
        await create.click();
        const alert = page.getByRole('alert');
        await alert.filter({ hasText: c.says }).waitFor({ timeout: 5_000 }).catch(() => {});
        const said = (await alert.textContent())?.trim();
        assert.equal(said, c.says, `email "${c.email}", password of ${c.password.length}`);
        assert.doesNotMatch(said ?? '', /sign-in/i, 'sign-up is not sign-in');
      }
    } finally {
      await ctx.close();
    }
  });

  for (const size of Object.keys(SIZES) as Size[]) {
    it(`marks every bad field at once in the form at ${SIZES[size].width} px, focus on the first`, async () => {
      const someone = await newPerson(tp.url, `taken-${size}`);
      const ctx = await newContext(browser, tp.url, SIZES[size]);
      const page = await ctx.newPage();
      try {
        await page.goto('/signup');
        await page.getByLabel('Email').fill(someone.email);
        await page.getByLabel('Password').fill('short');
        await page.getByRole('button', { name: 'Create account' }).click();
        await page.getByRole('alert').waitFor();
        await page.locator('#password[aria-invalid="true"]').waitFor();
        assert.equal(await page.locator('#email').getAttribute('aria-invalid'), 'true', 'the taken email is marked with the short password');
        assert.match((await page.locator('#email-err').textContent()) ?? '', /already exists/);
        assert.match((await page.locator('#password-err').textContent()) ?? '', /at least 10/);
        await page.waitForFunction(() => document.activeElement?.id === 'email', undefined, { timeout: 2_000 }).catch(() => {});
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'email');
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `signup-errors-${size}`);
      } finally {
        await ctx.close();
      }
    });
  }
});

/** An app's authorization URL for `person`'s MCP URL, as the SDK client hands it over. */
async function authorizationUrl(mcpUrl: string, name: string, redirect?: string) {
  const provider = new TestOAuthProvider(name, redirect);
  const client = new McpClient({ name, version: '1.0.0' });
  await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })), UnauthorizedError);
  return provider.authorizationUrl!;
}

/** The look a page gives its card, its primary button and its text. */
const lookOf = (page: Page, card: string, primary: string) =>
  page.evaluate(([cardSel, primarySel]) => {
    const c = getComputedStyle(document.querySelector(cardSel!)!);
    const b = getComputedStyle(document.querySelector(primarySel!)!);
    const h = getComputedStyle(document.querySelector('h1')!);
    return {
      font: getComputedStyle(document.body).fontFamily,
      pageBackground: getComputedStyle(document.querySelector(cardSel!)!.parentElement!).backgroundImage,
      card: { background: c.backgroundColor, radius: c.borderRadius, border: c.borderTopColor, maxWidth: c.maxWidth },
      primary: { background: b.backgroundColor, color: b.color, radius: b.borderRadius },
      heading: { size: h.fontSize, weight: h.fontWeight, color: h.color },
      logo: Boolean(document.querySelector('img[src="/icon.svg"]')),
    };
  }, [card, primary]);

for (const scheme of ['light', 'dark'] as const) {
  for (const size of Object.keys(SIZES) as Size[]) {
    it(`shows the consent page in the dashboard's look, ${scheme}, at ${SIZES[size].width} px`, async () => {
      const person = await newPerson(tp.url, `consent-${size}`);
      const url = await authorizationUrl(person.user.mcpUrl, 'Claude');
      const anon = await newContext(browser, tp.url, SIZES[size]);
      const signin = await anon.newPage();
      const { page, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await signin.emulateMedia({ colorScheme: scheme });
        await page.emulateMedia({ colorScheme: scheme });
        await signin.goto('/signin');
        await signin.locator('.auth-card').waitFor();
        const dashboard = await lookOf(signin, '.auth-card', '.auth-card .btn-primary');
        await page.goto(url.toString());
        await page.getByRole('heading', { level: 1, name: 'Let Claude use your Toolport tools?' }).waitFor();
        const consent = await lookOf(page, 'main', 'button.primary');
        assert.deepEqual(consent, dashboard);
        assert.deepEqual(await axeSerious(page), []);
        if (SAVE_SCREENSHOTS) await page.screenshot({ path: `test-results/screenshots/consent-${size}-${scheme}.png`, fullPage: true });
      } finally {
        await close();
        await anon.close();
      }
    });
  }
}

/**
 * Every word of the page's text that a line break cuts in two: a run of letters and digits inside
 * one text node whose boxes lie on more than one line. A name may wrap between its parts (after a
 * dot, before the @, between snake_case words), each its own text node, never inside a word.
 */
const wordsCutByLines = (page: Page) =>
  page.evaluate(() => {
    const cut: string[] = [];
    const walker = document.createTreeWalker(document.querySelector('main')!, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
      for (const m of node.data.matchAll(/[\p{L}\p{N}]+/gu)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.top);
        if (tops.length && Math.max(...tops) - Math.min(...tops) > 2) cut.push(m[0]);
      }
    }
    return cut;
  });

describe('the consent page on a phone', () => {
  it('cuts no name inside a word: app, hosts, email and tools wrap at their seams, and none is hidden', async () => {
    const hook = await startAddonServer({});
    try {
      const person = await personWithNotes(tp.url, hook, { search_notes_by_tag_and_date: true, delete_note: true }, 'consent-wrap', (m) => {
        m.name = 'Notes and Meeting Transcripts';
        m.tools[0]!.name = 'search_notes_by_tag_and_date';
      });
      const cases = [
        { app: 'Claude Desktop for AcmeCorporationEngineering', redirect: 'https://callback.engineeringtoolsgateway.acmecorporation.example/oauth' },
        // One word wider than the phone's line: it alone breaks inside itself, and none of it is hidden
        // (the clipped end of a host is where a look-alike would hide).
        { app: 'Supercalifragilisticexpialidociousassistant', redirect: 'http://127.0.0.1:7777/callback' },
      ];
      for (const { app, redirect } of cases) {
        const url = await authorizationUrl(person.user.mcpUrl, app, redirect);
        const { page, close } = await dashboardAs(browser, tp.url, person.client, 'phone');
        try {
          await page.goto(url.toString());
          const heading = page.getByRole('heading', { level: 1 });
          await heading.waitFor();
          assert.equal((await heading.textContent())?.replace(/\s+/g, ' '), `Let ${app} use your Toolport tools?`, 'the whole name is on the page');
          if (SAVE_SCREENSHOTS) await page.screenshot({ path: `test-results/screenshots/consent-wrap-${app.length}-phone.png`, fullPage: true });
          const cut = (await wordsCutByLines(page)).filter((w) => !(app.startsWith('Super') && app.includes(w)));
          assert.deepEqual(cut, [], `${app}: no word is cut by a line break`);
          const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert.equal(sideways, 0, 'the page does not scroll sideways');
          const clipped = await page.evaluate(() =>
            [...document.querySelectorAll<HTMLElement>('main *')]
              .filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'hidden')
              .map((el) => ({ shown: el.textContent, title: el.title })),
          );
          assert.deepEqual(clipped, [], 'no name is clipped');
          for (const text of ['engineeringtoolsgateway', 'search_notes_by_tag_and_date', person.email.split('@')[0]!]) {
            if (app.startsWith('Super') && text === 'engineeringtoolsgateway') continue;
            assert.ok((await page.locator('main').textContent())?.includes(text), `${text} is on the page`);
          }
        } finally {
          await close();
        }
      }
    } finally {
      await hook.close();
    }
  });
});
