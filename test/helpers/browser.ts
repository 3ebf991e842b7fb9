import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';

const SCREENSHOT_DIR = path.resolve(import.meta.dirname, '../../test-results/screenshots');
const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 860 };

/**
 * Screenshots are for a person to look at, and on a clean clone in CI nobody does: there they cost
 * only time (a full-page PNG each), unless SCREENSHOTS=1 asks for them. No assertion reads them.
 */
export const SAVE_SCREENSHOTS = process.env.SCREENSHOTS === '1' || (process.env.SCREENSHOTS !== '0' && process.env.CI !== 'true');

/**
 * Debian's Chromium, headless; never a downloaded browser. Playwright gives every launch a new,
 * empty user-data-dir of its own (it refuses --user-data-dir on launch) and removes it on close.
 */
export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => {});
    },
  };
}

/** A context for one person, with clipboard access granted for the server's origin. */
export async function newContext(browser: Browser, baseURL: string, viewport = DESKTOP): Promise<BrowserContext> {
  const ctx = await browser.newContext({ baseURL, viewport, deviceScaleFactor: 1 });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL });
  return ctx;
}

/**
 * Collects console errors and CSP violations so a test can assert there were none, each with the
 * address it came from. With `origin`, only Toolport's own pages count: a journey also lands on an
 * app's loopback callback (mcp-remote's, the SDK's), whose server may close while Chromium still
 * asks it for a favicon, and that page is not ours to judge.
 */
export function watchErrors(page: Page, origin?: string): string[] {
  const errors: string[] = [];
  const ours = (url: string) => !origin || !url || url.startsWith(`${origin}/`) || url === origin;
  page.on('console', (m) => {
    if (m.type() !== 'error' || /Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) return;
    const at = m.location().url || page.url();
    if (ours(at) && ours(page.url())) errors.push(`${m.text()} (at ${at})`);
  });
  page.on('pageerror', (e) => {
    if (ours(page.url())) errors.push(`${String(e)} (at ${page.url()})`);
  });
  return errors;
}

/** Pages whose phone layout scrolled sideways, with by how much (a test asserts this stays empty). */
export const phoneOverflow: Array<{ name: string; px: number }> = [];

/** Saves a full-page screenshot at desktop width and at a 375 px phone width. */
export async function screenshots(page: Page, name: string) {
  const original = page.viewportSize() ?? DESKTOP;
  if (SAVE_SCREENSHOTS) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.setViewportSize(DESKTOP);
    await page.evaluate(() => window.scrollTo(0, 0)); // the sticky sidebar is drawn where the page is scrolled
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-desktop.png`), fullPage: true });
  }
  await page.setViewportSize(PHONE);
  if (SAVE_SCREENSHOTS) {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}-phone.png`), fullPage: true });
  }
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await page.setViewportSize(original);
  if (overflow > 0) phoneOverflow.push({ name, px: overflow });
  return { phoneOverflowPx: overflow };
}

/** Signs in on the dashboard's own form, as a person types it, and waits for Home. */
export async function signInOnDashboard(page: Page, email: string, password: string) {
  await page.goto('/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
}

/** The dashboard's service worker at `origin`, registered in Chromium; pushes reach it as a push service's would (DevTools). */
export async function registerServiceWorker(page: Page, origin: string): Promise<{ cdp: CDPSession; registrationId: string }> {
  await page.context().grantPermissions(['notifications'], { origin });
  await page.goto('/signin');
  const cdp = await page.context().newCDPSession(page);
  const registered = new Promise<string>((resolve) =>
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
      const r = e.registrations.find((x) => x.scopeURL === `${origin}/`);
      if (r) resolve(r.registrationId);
    }),
  );
  await cdp.send('ServiceWorker.enable');
  await page.evaluate(async () => {
    await navigator.serviceWorker.register('/sw.js', { scope: '/' });
    await navigator.serviceWorker.ready;
  });
  return { cdp, registrationId: await registered };
}
