// A person's dashboard in Chromium at the two sizes the dashboard is built for, and axe-core on it.
import axe from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import { newContext, watchErrors } from './browser';
import type { Client } from './http';

export const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
export type Size = keyof typeof SIZES;

/** A tab signed in as `client`'s person (its session cookie), at `size`. */
export async function dashboardAs(browser: Browser, baseUrl: string, client: Client, size: Size) {
  const ctx = await newContext(browser, baseUrl, SIZES[size]);
  await ctx.addCookies([...client.cookies].map(([name, value]) => ({ name, value, url: baseUrl })));
  const page = await ctx.newPage();
  return { page, errors: watchErrors(page), close: () => ctx.close() };
}

const axeSource = axe.source; // the engine's own source, to evaluate in the page

export interface AxeViolation { id: string; impact: string; nodes: string[] }

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA, best practices). */
export async function axeSerious(page: Page): Promise<AxeViolation[]> {
  // Evaluated through DevTools, which the page's CSP (script-src 'self') does not govern.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact ?? '', nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** How far the page scrolls sideways, and the widest element's right edge past the viewport. */
export async function sidewaysScroll(page: Page) {
  return page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
  }));
}

/** Whether an element's box lies inside the viewport horizontally. */
export async function insideViewport(page: Page, selector: string) {
  return page.evaluate((sel) => {
    const els = [...document.querySelectorAll(sel)];
    return els.map((el) => {
      const r = el.getBoundingClientRect();
      return { left: Math.round(r.left), right: Math.round(r.right), inside: r.left >= 0 && r.right <= document.documentElement.clientWidth };
    });
  }, selector);
}

/**
 * Signs in on the form the dashboard showed a person who was not signed in (they followed a link
 * to an approval, an add-on's page), as they type it, and waits until they are past it: the
 * dashboard then takes them where the link led, not necessarily Home.
 */
export async function signInWhereSent(page: Page, who: { email: string; password: string }) {
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((u) => u.pathname !== '/signin');
}
