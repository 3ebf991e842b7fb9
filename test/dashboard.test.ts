import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newContext, screenshots, watchErrors, PHONE } from './helpers/browser';
import { Client } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  tp = await startToolport();
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await tp?.stop();
});

/** Does the API route exist on this server? (Others build some of them right now.) */
async function routeExists(client: Client, path: string) {
  const r = await client.get(path);
  return !(r.status === 404 && /No such API route/.test(r.text));
}

describe('dashboard static serving', () => {
  it('serves index.html at / with a strict CSP, no inline script and no-cache', async () => {
    const res = await fetch(`${tp.url}/`, { headers: { accept: 'text/html' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 1);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs!, /src="\/assets\/app-[A-Z0-9]+\.js"/);
      assert.equal(body!.trim(), '', 'no inline script');
    }
  });

  it('gives hashed assets a long immutable cache and answers unknown ones with 404', async () => {
    const html = await (await fetch(`${tp.url}/`)).text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const css = /href="(\/assets\/[^"]+\.css)"/.exec(html)![1]!;
    for (const p of [js, css]) {
      const r = await fetch(`${tp.url}${p}`);
      assert.equal(r.status, 200, p);
      assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      await r.arrayBuffer();
    }
    assert.match((await fetch(`${tp.url}${js}`)).headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal((await fetch(`${tp.url}/assets/app-NOPE.js`)).status, 404);
    assert.equal((await fetch(`${tp.url}/assets/..%2Fbuild.json`)).status, 404);
    assert.equal((await fetch(`${tp.url}/build.json`)).status, 404);
  });

  it('serves the service worker at /sw.js for the whole origin', async () => {
    const r = await fetch(`${tp.url}/sw.js`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('service-worker-allowed'), '/');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.match(await r.text(), /notificationclick/);
  });

  it('falls back to index.html for app paths that accept HTML, never for the API', async () => {
    const page = await fetch(`${tp.url}/addons`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<div id="root">/);
    const json = await fetch(`${tp.url}/addons`, { headers: { accept: 'application/json' } });
    assert.equal(json.status, 404);
    const api = await fetch(`${tp.url}/api/nothing-here`, { headers: { accept: 'text/html' } });
    assert.equal(api.status, 404);
    assert.equal(api.headers.get('content-type'), 'application/problem+json');
    const health = await fetch(`${tp.url}/healthz`, { headers: { accept: 'text/html' } });
    assert.deepEqual(await health.json(), { status: 'ok' });
  });
});

/** The browser person's session as an API client, for setting things up the way an app would. */
async function clientFor(page: Page): Promise<Client> {
  const client = new Client(tp.url);
  for (const c of await page.context().cookies(tp.url)) client.cookies.set(c.name, c.value);
  return client;
}

async function signUp(page: Page, label: string) {
  const email = `${label}-${process.pid}-${Date.now()}@example.com`;
  await page.goto('/');
  await page.waitForURL('**/signin');
  await page.getByRole('link', { name: 'Create an account' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
  return email;
}

describe('the dashboard in a browser', () => {
  let page: Page;
  let errors: string[];
  before(async () => {
    const ctx = await newContext(browser, tp.url);
    page = await ctx.newPage();
    errors = watchErrors(page);
  });
  after(async () => { await page?.context().close(); });

  it('signs up, shows the MCP URL, copies it and turns AI apps on', async () => {
    await page.goto('/signin');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await screenshots(page, 'signin');
    await page.getByLabel('Email').fill('nobody@example.com');
    await page.getByLabel('Password').fill('wrong password here');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The email or password is wrong.' }).waitFor();

    await signUp(page, 'browser');
    const api = await clientFor(page);
    const me = (await api.get('/api/me')).body;
    assert.equal(await page.getByTestId('mcp-url').textContent(), me.mcpUrl);

    await page.getByRole('button', { name: 'Copy URL' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), me.mcpUrl);

    const sw = page.getByRole('switch', { name: /AI apps/ });
    assert.equal(await sw.getAttribute('aria-checked'), 'false');
    await sw.click();
    await page.getByRole('switch', { name: 'AI apps on' }).waitFor();
    assert.equal((await api.get('/api/me')).body.aiApps, true);
    await page.reload();
    assert.equal(await page.getByRole('switch', { name: 'AI apps on' }).getAttribute('aria-checked'), 'true');
    await page.getByText('Claude', { exact: true }).click();
    const shots = await screenshots(page, 'home');
    assert.equal(shots.phoneOverflowPx, 0, 'no sideways scrolling on a 375 px phone');
  });

  it('rotates the MCP URL after a confirmation', async () => {
    const api = await clientFor(page);
    const before = (await api.get('/api/me')).body.mcpUrl;
    await page.getByRole('button', { name: 'Get a new URL' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replace your MCP URL?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await api.get('/api/me')).body.mcpUrl, before, 'cancel changes nothing');
    await page.getByRole('button', { name: 'Get a new URL' }).click();
    await dialog.getByRole('button', { name: 'Replace URL' }).click();
    await page.getByText('You have a new MCP URL').waitFor();
    const after = (await api.get('/api/me')).body.mcpUrl;
    assert.notEqual(after, before);
    assert.equal(await page.getByTestId('mcp-url').textContent(), after);
  });

  it('creates an API key that is shown once', async () => {
    await page.getByRole('link', { name: 'Developers' }).click();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('laptop <b>CLI</b>');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.locator('#new-key').textContent())!;
    assert.match(key, /^tpk_/);
    await page.getByText('laptop <b>CLI</b>', { exact: true }).waitFor(); // escaped, not markup
    assert.equal(await new Client(tp.url, key).get('/api/keys').then((r) => r.status), 401, 'a key cannot manage keys');
    await screenshots(page, 'keys');
    await page.reload();
    await page.getByText('laptop <b>CLI</b>', { exact: true }).waitFor();
    assert.equal(await page.getByText(key).count(), 0, 'the key is not shown again');

    await page.getByRole('button', { name: 'Revoke key laptop <b>CLI</b>' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('No keys yet.').waitFor();
  });

  it('shows "not available yet" when a route is missing', async () => {
    await page.route('**/api/connections', (route) =>
      route.fulfill({ status: 404, contentType: 'application/problem+json', body: JSON.stringify({ status: 404, detail: 'No such API route.' }) }),
    );
    await page.getByRole('link', { name: 'Apps let in' }).click();
    await page.getByText('Connected apps are not available yet.').waitFor();
    await page.unroute('**/api/connections');
  });

  it('logs no errors and no CSP violations', () => {
    assert.deepEqual(errors, []);
  });
});
