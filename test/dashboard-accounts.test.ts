// Issue #26, connected accounts, the person's side in the dashboard: in real Chromium a person opens
// an add-on's page, presses Connect, signs in and consents on a real OAuth provider's own pages
// (oidc-provider, test/helpers/oauth-provider.ts), comes back to "Connected", finds the account on
// the Connected accounts page and disconnects it there, told the provider revoked it. The link a
// tool's error gives (`/addons/{id}?connect={provider}`) lands on that provider, through sign-in.
// A provider whose developer stored no client offers a Connect that says why it cannot be used.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, phoneOverflow, screenshots, watchErrors } from './helpers/browser';
import { axeSerious, dashboardAs, signInWhereSent, SIZES, type Size } from './helpers/dashboard';
import { accountOf, accountsCallbackOf, startOAuthProvider, type OAuthProvider } from './helpers/oauth-provider';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let provider: OAuthProvider;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }) });
  provider = await startOAuthProvider({ redirectUri: accountsCallbackOf(tp.url) });
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await provider?.close();
  await hook?.close();
  await tp?.stop();
});

/**
 * A person with Notes installed, which declares two providers: Notes Cloud (at the test provider,
 * its client stored) and Calendar (no client stored yet, so it cannot be connected).
 */
async function personWithTwoAccounts(prefix: string) {
  const person = await personWithNotes(tp.url, hook, { search_notes: true }, prefix, (m) => {
    (m as Record<string, unknown>).accounts = [accountOf(provider, 'notes_cloud'), accountOf(provider, 'calendar', { title: 'Calendar', scopes: [] })];
  });
  const put = await person.dev.client.put(`/api/addons/${person.addonId}/accounts/notes_cloud/client`, { clientId: provider.clientId, clientSecret: provider.clientSecret });
  assert.equal(put.status, 200, put.text);
  return person;
}

/** The provider's own login and consent pages, as the person goes through them after pressing Connect. */
async function signInAndConsentAtProvider(page: Page, login: string) {
  const providerOrigin = new URL(provider.issuer).origin;
  await page.waitForURL((u) => u.origin === providerOrigin, { waitUntil: 'domcontentloaded' });
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL((u) => u.origin === tp.url, { waitUntil: 'domcontentloaded' });
}

/** What has focus: the provider row it sits in and its own tag. */
const focusedIn = (page: Page) =>
  page.evaluate(() => ({
    tag: document.activeElement?.tagName.toLowerCase() ?? '',
    account: document.activeElement?.closest('[data-account]')?.getAttribute('data-account') ?? null,
    name: document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim() ?? '',
  }));

for (const size of Object.keys(SIZES) as Size[]) {
  describe(`connected accounts in Chromium at ${SIZES[size].width} px`, () => {
    it('connects an account on the provider\'s own pages, lists it, and disconnects it, revoked at the provider', async () => {
      const person = await personWithTwoAccounts(`acct-ui-${size}`);
      const { page, close } = await dashboardAs(browser, tp.url, person.client, size);
      // Toolport's pages are judged, not the provider's (which import a web font, refused here: offline).
      const errors = watchErrors(page, tp.url);
      await page.route(/^https:\/\/fonts\.(googleapis|gstatic)\.com\//, (route) => route.abort());
      try {
        await page.goto(`/addons/${person.addonId}`);
        const section = page.locator(`[data-accounts="${person.addonId}"]`);
        await section.waitFor();
        const cloud = section.locator('[data-account="notes_cloud"]');
        const calendar = section.locator('[data-account="calendar"]');
        assert.match((await cloud.textContent()) ?? '', /Not connected.*Asks Notes Cloud for: openid, profile, notes\./s);
        assert.match((await calendar.textContent()) ?? '', /Asks Calendar for no particular permissions\./);

        // Calendar cannot be connected yet: its Connect says why, and pressing it goes nowhere.
        const unready = calendar.getByRole('button', { name: 'Connect Calendar' });
        assert.equal(await unready.getAttribute('aria-disabled'), 'true');
        const why = await unready.evaluate((el) => document.getElementById(el.getAttribute('aria-describedby') ?? '')?.textContent ?? '');
        assert.equal(why, 'The developer of Notes has not set up Calendar yet.');
        await unready.click({ force: true });
        assert.equal(new URL(page.url()).pathname, `/addons/${person.addonId}`);

        assert.deepEqual(await axeSerious(page), []);
        await page.emulateMedia({ colorScheme: 'dark' });
        assert.deepEqual(await axeSerious(page), [], 'and in dark mode');
        await page.emulateMedia({ colorScheme: 'light' });
        await screenshots(page, `accounts-addon-${size}`);

        // Connect: to the provider, its login and consent, and back.
        await cloud.getByRole('button', { name: 'Connect Notes Cloud' }).click();
        await signInAndConsentAtProvider(page, `alice-${size}`);
        const back = new URL(page.url());
        assert.equal(back.pathname, `/addons/${person.addonId}`);
        const notice = page.locator('[data-live-notice]');
        await notice.getByText('Notes Cloud is connected. Notes can now use your Notes Cloud account.').waitFor();
        assert.equal(await notice.getAttribute('role'), 'status');
        await cloud.locator('[data-account-status="connected"]').waitFor();
        assert.match((await cloud.textContent()) ?? '', /Connected since \S/);
        assert.equal(new URL(page.url()).searchParams.get('connected'), null, 'the notice is said once: a reload does not repeat it');
        assert.equal((await focusedIn(page)).account, 'notes_cloud', 'focus lands on the account just connected');
        assert.deepEqual(await cloud.getByRole('button').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label'))), ['Reconnect Notes Cloud', 'Disconnect Notes Cloud']);
        const listed = await person.client.get(`/api/installs/${person.addonId}/accounts`);
        assert.equal(listed.body.find((a: { provider: string }) => a.provider === 'notes_cloud').status, 'connected');
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `accounts-connected-${size}`);

        // The Connected accounts page, from the navigation.
        await page.locator('.sidebar nav').getByRole('link', { name: 'Connected accounts' }).click();
        await page.getByRole('heading', { level: 1, name: 'Connected accounts' }).waitFor();
        assert.equal(await page.title(), 'Connected accounts · Toolport');
        const row = page.locator(`[data-connected-account="${person.addonId}/notes_cloud"]`);
        await row.waitFor();
        assert.match((await row.textContent()) ?? '', /Notes Cloud.*For Notes.*Connected since \S.*Access granted: .*openid/s);
        assert.equal(await page.locator('[data-connected-account]').count(), 1, 'Calendar, never connected, is not listed');
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `accounts-page-${size}`);

        // Disconnect, after the confirmation, with the keyboard.
        const revocationsBefore = provider.requests.filter((r) => r.path === '/token/revocation').length;
        await row.getByRole('button', { name: 'Disconnect Notes Cloud from Notes' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog', { name: 'Disconnect Notes Cloud?' });
        await dialog.waitFor();
        assert.deepEqual(await axeSerious(page), [], 'the confirmation is axe-clean');
        await dialog.getByRole('button', { name: 'Disconnect' }).click();
        await notice.getByText('Notes Cloud is disconnected from Notes, and Notes Cloud confirmed it revoked the access.').waitFor();
        await row.waitFor({ state: 'detached' });
        await page.locator('[data-empty="accounts"]').waitFor();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'page-title', 'focus goes to the heading, not <body>');
        assert.ok(provider.requests.filter((r) => r.path === '/token/revocation').length > revocationsBefore, 'Toolport asked the provider to revoke');
        assert.deepEqual((await person.client.get('/api/accounts')).body, []);
        await screenshots(page, `accounts-page-empty-${size}`);

        // The add-on's page says it is not connected any more.
        await page.goto(`/addons/${person.addonId}`);
        await cloud.locator('[data-account-status="none"]').waitFor();
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });

    it('lands the link of a tool\'s error, through sign-in, on the provider it names', async () => {
      const person = await personWithTwoAccounts(`acct-link-${size}`);
      // What a call of a tool needing Calendar answers with (accounts contract): the add-on's page.
      const link = `${tp.url}/addons/${encodeURIComponent(person.addonId)}?connect=calendar`;
      const ctx = await newContext(browser, tp.url, SIZES[size]);
      const page = await ctx.newPage();
      const errors = watchErrors(page);
      try {
        await page.goto(link);
        await signInWhereSent(page, person);
        await page.waitForURL((u) => u.pathname === `/addons/${person.addonId}` && u.searchParams.get('connect') === 'calendar');
        const calendar = page.locator('[data-account="calendar"]');
        await calendar.waitFor();
        await page.waitForFunction(() => document.activeElement?.closest('[data-account]')?.getAttribute('data-account') === 'calendar', undefined, { timeout: 5_000 }).catch(() => {});
        const now = await focusedIn(page);
        assert.deepEqual([now.account, now.tag], ['calendar', 'h3'], `focus is on the Calendar heading, not <${now.tag}> "${now.name.slice(0, 60)}"`);
        assert.equal(await calendar.evaluate((el) => el.classList.contains('provider-asked')), true, 'Calendar is highlighted');
        assert.equal(await page.locator('[data-account="notes_cloud"]').evaluate((el) => el.classList.contains('provider-asked')), false, 'and only Calendar');
        assert.match((await calendar.textContent()) ?? '', /A tool you used needs this account\. Connect it, then ask your AI app to try again\./);
        const box = await calendar.evaluate((el) => {
          const r = el.getBoundingClientRect();
          return { top: Math.round(r.top), bottom: Math.round(r.bottom), height: window.innerHeight };
        });
        assert.ok(box.top >= 0 && box.bottom <= box.height, `Calendar is scrolled into view: ${JSON.stringify(box)}`);
        // Tab goes on from the heading to its Connect.
        await page.keyboard.press('Tab');
        assert.equal((await focusedIn(page)).name, 'Connect Calendar');
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `accounts-link-${size}`);
        assert.deepEqual(errors, []);
      } finally {
        await ctx.close();
      }
    });
  });
}

it('lays every accounts page out without a sideways scroll on a phone', () => {
  assert.deepEqual(phoneOverflow.filter((o) => o.name.startsWith('accounts-')), []);
});
