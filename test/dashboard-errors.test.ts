// How the dashboard reads failures, in real Chromium against a real server: a 404 of an object that
// is gone says so (never "still being set up"), and only a 401 from /api/me signs the person out.
// The /api/me failures are made by intercepting that one request in the browser: a blip, not a mock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, signInOnDashboard } from './helpers/browser';
import { newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let addon: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  [tp, addon, { browser, close: closeBrowser }] = await Promise.all([startToolport(), startAddonServer(), launchBrowser()]);
});
after(async () => {
  await closeBrowser?.();
  await addon?.close();
  await tp?.stop();
});

/** A new person signed in on the dashboard in a tab of their own. */
async function signedIn(label: string) {
  const person = await newPerson(tp.url, label);
  const page = await (await newContext(browser, tp.url)).newPage();
  await signInOnDashboard(page, person.email, person.password);
  return { ...person, page };
}

/** The first notice or "not available" box inside `scope` once one shows, and its text. */
async function shown(scope: Locator) {
  const box = scope.locator('.notice, .not-available').first();
  await box.waitFor();
  return (await box.textContent()) ?? '';
}

function assertSaysGone(text: string, where: string) {
  assert.match(text, /That add-on does not exist\./, `${where}: ${text}`);
  assert.doesNotMatch(text, /not available yet|being set up/, `${where}: a deleted add-on is not a part of Toolport being set up`);
}

describe('a 404 for an object says it is gone', () => {
  it('says a deleted add-on does not exist on its page, in the check runner and when pushing its manifest', async () => {
    const dev = await signedIn('gone-dev');
    const { page } = dev;
    for (const id of ['gone-notes', 'gone-twice']) {
      const created = await dev.client.post('/api/addons', notesManifest(id, addon.url));
      assert.equal(created.status, 201, created.text);
    }

    // The check runner of a page opened before the add-on was deleted (in another tab, say).
    await page.goto('/developer/addons/gone-notes');
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    assert.equal((await dev.client.delete('/api/addons/gone-notes')).status, 204);
    await page.getByRole('button', { name: 'Run check' }).click();
    assertSaysGone(await shown(page.locator('section[aria-labelledby="check-h"]')), 'the check runner');

    // The add-on's own page, opened after it was deleted.
    await page.reload();
    assertSaysGone(await shown(page.locator('main')), 'the add-on page');

    // A new version of an add-on that was deleted since the list was loaded.
    await page.goto('/developer');
    await page.locator('[data-addon="gone-twice"]').waitFor();
    assert.equal((await dev.client.delete('/api/addons/gone-twice')).status, 204);
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(notesManifest('gone-twice', addon.url)));
    await page.getByRole('button', { name: 'Push manifest' }).click();
    assertSaysGone(await shown(page.locator('#manifest-errors')), 'pushing a manifest');
    await page.context().close();
  });
});

/** A problem+json answer for /api/session, as the server sends it. */
const meAnswers = (status: number, detail: string) => (page: Page) =>
  page.route('**/api/session', (route) =>
    route.fulfill({ status, contentType: 'application/problem+json', body: JSON.stringify({ type: 'about:blank', status, detail }) }),
  );

/** Waits until the dashboard either went to the sign-in page or shows an alert, and says which. */
async function settle(page: Page) {
  await page.waitForFunction(() => location.pathname === '/signin' || document.querySelector('[role=alert]') !== null);
  return new URL(page.url()).pathname;
}

describe('only a signed-out answer from /api/session signs the person out', () => {
  it('keeps the person signed in through a 503, shows that Toolport cannot be reached, and comes back on Try again', async () => {
    const { page } = await signedIn('me-503');
    await meAnswers(503, 'Toolport cannot reach its database or queue right now. Try again in a few seconds.')(page);
    await page.reload();
    assert.equal(await settle(page), '/', 'a 503 from /api/session sent the person to the sign-in page');
    const alert = page.getByRole('alert');
    assert.match((await alert.textContent()) ?? '', /Toolport cannot be reached right now.*still signed in/s);
    assert.ok((await page.context().cookies()).some((c) => c.name === 'tp_session'), 'the session cookie stays');
    await page.unroute('**/api/session');
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    await page.context().close();
  });

  it('keeps the person signed in through a network failure and retries by itself', async () => {
    const { page } = await signedIn('me-blip');
    await page.route('**/api/session', (route) => route.abort('internetdisconnected'));
    await page.reload();
    assert.equal(await settle(page), '/', 'a network failure of /api/session sent the person to the sign-in page');
    await page.getByRole('alert').filter({ hasText: 'Toolport cannot be reached right now.' }).waitFor();
    await page.unroute('**/api/session');
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor(); // the next retry, without a click
    await page.context().close();
  });

  it('signs the person out on a 401', async () => {
    const { page } = await signedIn('me-401');
    await meAnswers(401, 'Sign in first.')(page);
    await page.reload();
    assert.equal(await settle(page), '/signin');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.context().close();
  });

  it('signs the person out when their session ended elsewhere: the server answers that nobody is signed in', async () => {
    const { page, client } = await signedIn('me-ended');
    // Signed out everywhere else from the sign-up session: the browser's session is one of them.
    assert.equal((await client.post('/api/sessions/end-others')).status, 200);
    await page.reload();
    assert.equal(await settle(page), '/signin');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.context().close();
  });
});
