import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page, Response } from 'playwright-core';
import { startAddonServer, type ToolHandler } from './addon-server';
import { launchBrowser, newContext, watchErrors } from './browser';
import { TestOAuthProvider } from './mcp';
import { startToolport } from './target';

/** What an app's redirect URI received: the query Toolport sent the browser back with. */
export interface CallbackHit {
  code: string | null;
  error: string | null;
  state: string | null;
  iss: string | null;
  query: URLSearchParams;
}

/**
 * An app's loopback redirect URI (RFC 8252 §7.3), as a native MCP app runs one: a real HTTP server
 * on 127.0.0.1 that Chromium is sent to after Allow or Deny. It records the query and answers a
 * small page, as an app's "you can go back to the app" page would.
 */
export async function startCallbackServer(pathname = '/callback') {
  const hits: CallbackHit[] = [];
  const waiting: Array<(hit: CallbackHit) => void> = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== pathname) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not here'); // the browser's /favicon.ico
      return;
    }
    const q = url.searchParams;
    const hit = { code: q.get('code'), error: q.get('error'), state: q.get('state'), iss: q.get('iss'), query: q };
    hits.push(hit);
    waiting.splice(0).forEach((resolve) => resolve(hit));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Back to the app</title></head><body><h1>${
      hit.error ? 'The app was not let in.' : 'You can go back to the app.'
    }</h1></body></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${pathname}`,
    /** What the consent page names as the place it sends the person: host and port. */
    host: `127.0.0.1:${port}`,
    hits,
    /** The next hit after `seen` hits (default: after the ones so far). */
    next(seen = hits.length, timeoutMs = 30_000): Promise<CallbackHit> {
      if (hits.length > seen) return Promise.resolve(hits[seen]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no request reached ${pathname} within ${timeoutMs} ms`)), timeoutMs);
        waiting.push((hit) => { clearTimeout(timer); resolve(hit); });
      });
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
export type CallbackServer = Awaited<ReturnType<typeof startCallbackServer>>;

/**
 * What a browser journey runs on, started together: Toolport, an add-on answering `handlers`, an
 * app's loopback redirect URI, and Chromium with one tab on Toolport whose errors are collected.
 */
export async function startJourney(handlers: Record<string, ToolHandler>) {
  const [tp, addon, callback, chromium] = await Promise.all([startToolport(), startAddonServer(handlers), startCallbackServer(), launchBrowser()]);
  const page = await (await newContext(chromium.browser, tp.url)).newPage();
  return {
    tp,
    addon,
    callback,
    page,
    errors: watchErrors(page, tp.url),
    async close() {
      await chromium.close();
      await callback.close();
      await addon.close();
      await tp.stop();
    },
  };
}

/**
 * The SDK v1 client's OAuth side for an app whose redirect URI is a real loopback server: it
 * remembers each `state` it made (to check what comes back) and hands every authorization URL to
 * the test, which opens it in the person's Chromium.
 */
export class BrowserAppProvider extends TestOAuthProvider {
  states: string[] = [];
  authorizationUrls: URL[] = [];
  private waiting: Array<(url: URL) => void> = [];
  override state() {
    const s = super.state();
    this.states.push(s);
    return s;
  }
  override redirectToAuthorization(url: URL) {
    super.redirectToAuthorization(url);
    this.authorizationUrls.push(url);
    this.waiting.splice(0).forEach((resolve) => resolve(url));
  }
  /** The next authorization URL after `seen` of them. */
  nextAuthorizationUrl(seen = this.authorizationUrls.length): Promise<URL> {
    if (this.authorizationUrls.length > seen) return Promise.resolve(this.authorizationUrls[seen]!);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

export interface DecideOptions {
  /** Used only when Toolport shows its sign-in form first. */
  email: string;
  password: string;
  decision?: 'allow' | 'deny';
  /** What the consent page must show, readably. */
  appName: string;
  redirectHost: string;
  /** Called on the sign-in page and on the consent page before anything is pressed (screenshots). */
  onPage?: (kind: 'login' | 'consent') => Promise<void>;
  /** Tools (`{addonId}__{toolName}`) the person unticks with the mouse before pressing; the rest stay as preselected. */
  untick?: string[];
  /** The person ticks "Also let it use tools I switch on later" (ticked by the page only when no tool is on). */
  newTools?: boolean;
  /** The person ticks "Ask me before every tool call it makes". */
  askEveryTool?: boolean;
}

const LOGIN_HEADING = 'Sign in to Toolport';
const CONSENT_HEADING = /use your Toolport tools\?/;
const ERROR_HEADING = 'Toolport cannot continue';

/** Which of Toolport's OAuth pages the browser shows now. */
async function whichPage(page: Page): Promise<'login' | 'consent' | 'error'> {
  const login = page.getByRole('heading', { level: 1, name: LOGIN_HEADING });
  const consent = page.getByRole('heading', { level: 1, name: CONSENT_HEADING });
  const error = page.getByRole('heading', { level: 1, name: ERROR_HEADING });
  await login.or(consent).or(error).first().waitFor({ timeout: 15_000 });
  if (await error.count()) return 'error';
  return (await login.count()) ? 'login' : 'consent';
}

/** A failed form post, told the way a person would see it, with what the browser sent. */
async function formRefused(page: Page, step: string, posted: Response | undefined) {
  const message = ((await page.locator('p.error').first().textContent().catch(() => '')) ?? '').trim();
  const origin = posted ? await posted.request().headerValue('origin') : undefined;
  const what = posted ? `POST ${new URL(posted.url()).pathname} answered ${posted.status()} (the browser sent Origin: ${origin ?? '(none)'})` : 'the page';
  return new Error(`${step}: ${what}: "${message}"`);
}

/**
 * The person's side of an app's authorization request, in Chromium: opens the URL the app handed
 * over, signs in on Toolport's own form if asked to (typing and clicking, never posting from Node),
 * checks the consent page says who asks and where it sends them, presses Allow or Deny with the
 * mouse, and waits until the browser has landed on the app's redirect URI.
 */
export async function decideInBrowser(page: Page, authorizationUrl: URL | string, opts: DecideOptions) {
  const decision = opts.decision ?? 'allow';
  const toolport = new URL(authorizationUrl).origin;
  const posts = (pathname: string) =>
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${toolport}${pathname}`, { timeout: 15_000 }).catch(() => undefined);
  await page.goto(String(authorizationUrl));
  let shown = await whichPage(page);
  let signedIn = false;
  if (shown === 'login') {
    await opts.onPage?.('login');
    await page.getByLabel('Email').fill(opts.email);
    await page.getByLabel('Password').fill(opts.password);
    const posted = posts('/oauth/login');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const response = await posted;
    shown = await whichPage(page);
    if (shown !== 'consent') throw await formRefused(page, 'signing in from the consent page', response);
    signedIn = true;
  }
  if (shown === 'error') throw await formRefused(page, 'opening the authorization URL', undefined);

  // Readable: the app's own name in the heading, and where the browser goes next.
  await page.getByRole('heading', { level: 1, name: `Let ${opts.appName} use your Toolport tools?` }).waitFor();
  await page.getByText(`you will be sent to ${opts.redirectHost}`).waitFor({ state: 'visible' });
  await opts.onPage?.('consent');
  for (const tool of opts.untick ?? []) {
    const box = page.locator(`input[type=checkbox][name=tool][value="${tool}"]`);
    if (!(await box.count())) throw new Error(`the consent page offers no checkbox for ${tool}`);
    if (!(await box.isChecked())) throw new Error(`the consent page did not preselect ${tool}`);
    await box.click();
    if (await box.isChecked()) throw new Error(`${tool} stayed ticked`);
  }
  if (opts.newTools) await page.getByRole('checkbox', { name: 'Also let it use tools I switch on later' }).check();
  if (opts.askEveryTool) await page.getByRole('checkbox', { name: 'Ask me before every tool call it makes' }).check();
  const redirectOrigin = `http://${opts.redirectHost}`;
  const posted = posts('/oauth/authorize/decision');
  await page.getByRole('button', { name: decision === 'allow' ? 'Allow' : 'Deny', exact: true }).click();
  const response = await posted;
  try {
    await page.waitForURL((u) => u.origin === redirectOrigin, { timeout: 15_000 });
  } catch {
    throw await formRefused(page, `pressing ${decision === 'allow' ? 'Allow' : 'Deny'} on the consent page`, response);
  }
  return { signedIn };
}

/**
 * A stand-in for the person's browser launcher, for apps that open the authorization URL
 * themselves: an executable script that appends its argument to a file the test reads.
 *
 * mcp-remote opens the URL with the `open` package, which on Linux runs its bundled copy of
 * xdg-open; with no desktop detected (no DISPLAY, no XDG_CURRENT_DESKTOP) that script falls to
 * `open_generic`, which runs each entry of `$BROWSER` with the URL. So `BROWSER=<this script>` is
 * the hook, as long as the child's environment names no desktop.
 */
export function browserHook(dir: string) {
  const file = path.join(dir, 'opened-urls.txt');
  const script = path.join(dir, 'browser.sh');
  writeFileSync(script, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${file}'\n`);
  chmodSync(script, 0o755);
  const opened = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
  return {
    script,
    file,
    env: { BROWSER: script },
    opened,
    /** The next URL "opened" after `seen` of them; the file is polled (fs.watch misses quick appends). */
    async nextUrl(seen = 0, timeoutMs = 60_000): Promise<string> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const urls = opened();
        if (urls.length > seen) return urls[seen]!;
        if (Date.now() > end) throw new Error(`nothing was opened through BROWSER=${script} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}
