import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { launchBrowser, newContext, phoneOverflow, screenshots, watchErrors } from './helpers/browser';
import { dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { Client, listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let receiver: Awaited<ReturnType<typeof startAddon>>;
/** The MCP app let in during the approval step, reused by the log and revoke steps. */
let app: McpApp | undefined;

before(async () => {
  await ensureDashboardBuilt(); // a no-op after `npm test`'s pretest; makes `node --test` alone work too
  tp = await startToolport();
  receiver = await startAddon();
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await receiver?.close();
  await tp?.stop();
});

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
    // Brotli for browsers that accept it (fetch decodes it; the size on the wire is smaller).
    const plain = await fetch(`${tp.url}${js}`, { headers: { 'accept-encoding': 'identity' } });
    assert.equal(plain.headers.get('content-encoding'), null);
    const br = await fetch(`${tp.url}${js}`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(br.headers.get('content-encoding'), 'br');
    assert.ok(Number(br.headers.get('content-length')) < Number(plain.headers.get('content-length')) / 2);
    assert.equal(await br.text(), await plain.text());
    // A coding refused with q=0 is never sent; `*` lets it through.
    for (const [header, encoding] of [['gzip, br;q=0', null], ['br;q=0.5', 'br'], ['BR', 'br'], ['*', 'br'], ['*;q=0', null], ['x-br', null]] as const) {
      const r = await fetch(`${tp.url}${js}`, { headers: { 'accept-encoding': header } });
      assert.equal(r.headers.get('content-encoding'), encoding, `Accept-Encoding: ${header}`);
      await r.arrayBuffer();
    }
    assert.equal((await fetch(`${tp.url}${js}.br`)).status, 404);
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

  it('answers an unknown /api route with the API\'s own 404, and other paths with the general one', async () => {
    const anonymous = new Client(tp.url);
    const { client: person } = await newPerson(tp.url, 'no-route');
    const cases = [
      [anonymous, 'GET', '/api/nope'],
      [anonymous, 'GET', '/api'],
      [person, 'POST', '/api/approvals/apr_x/nope'], // past the sign-in check of /approvals/*
      [person, 'DELETE', '/api/me'], // a route that exists, with a method it lacks
    ] as const;
    for (const [client, method, path] of cases) {
      const r = await client.request(method, path);
      assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.equal(r.body.detail, 'No such API route.', `${method} ${path}`);
    }
    const elsewhere = await fetch(`${tp.url}/nothing-here`, { headers: { accept: 'application/json' } });
    assert.equal(elsewhere.status, 404);
    assert.equal(elsewhere.headers.get('content-type'), 'application/problem+json');
    assert.equal((await elsewhere.json()).detail, 'Nothing here.');
  });
});

/** The browser person's session as an API client, for setting things up the way an app would. */
async function clientFor(page: Page): Promise<Client> {
  const client = new Client(tp.url);
  for (const c of await page.context().cookies(tp.url)) client.cookies.set(c.name, c.value);
  return client;
}

/** An add-on's webhook on 127.0.0.1: answers the ping challenge, confirms deletes, and records calls. */
async function startAddon() {
  const calls: Array<{ tool: string; arguments: unknown }> = [];
  let pings = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}');
      let answer: unknown = { text: 'ok' };
      if (body.type === 'ping') {
        pings++;
        answer = { challenge: body.challenge };
      } else if (body.type === 'tool.confirm') {
        answer = { confirm: { message: 'Delete the note “Groceries”?', info: [{ name: 'Created', value: 'Monday' }], style: 'destructive' } };
      } else if (body.type === 'tool.call') {
        calls.push({ tool: body.tool, arguments: body.arguments });
        answer = { text: body.tool === 'delete_note' ? 'Deleted.' : 'No notes found.' };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    calls,
    get pings() { return pings; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const manifest = (webhook: string) => ({
  id: 'notes',
  name: 'Notes',
  description: 'Your notes, searchable.',
  webhook,
  tools: [
    {
      name: 'search_notes', title: 'Search notes',
      summary: 'Finds notes containing every word of the query and returns each note\'s id, title and preview.',
      arguments: [{ name: 'query', summary: 'Words to look for.', kind: { text: { maxLength: 200 } }, required: false }],
    },
    {
      name: 'delete_note', title: 'Delete a note', summary: 'Deletes one note by id and returns nothing.',
      destructive: true, confirm: true,
      arguments: [
        { name: 'id', summary: 'The note\'s id.', kind: { text: { maxLength: 64 } } },
        { name: 'reason', summary: 'Why, for the history.', kind: { text: { maxLength: 1000 } }, required: false },
      ],
    },
  ],
});

type McpApp = Awaited<ReturnType<typeof connectApp>>['client'];

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
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
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
    await sw.focus();
    await page.keyboard.press('Space');
    await page.locator('[role=switch][aria-checked=true]', { hasText: 'AI apps' }).waitFor();
    assert.equal((await api.get('/api/me')).body.aiApps, true);
    await page.reload();
    assert.equal(await page.getByRole('switch', { name: 'AI apps', exact: true }).getAttribute('aria-checked'), 'true');
    await page.getByText('Claude', { exact: true }).click();
    const shots = await screenshots(page, 'home');
    assert.equal(shots.phoneOverflowPx, 0, 'no sideways scrolling on a 375 px phone');
  });

  it('rotates the MCP URL after a confirmation', async () => {
    const api = await clientFor(page);
    const before = (await api.get('/api/me')).body.mcpUrl;
    // By keyboard: Enter opens the confirmation with focus inside, Escape closes it.
    await page.getByRole('button', { name: 'Get a new URL' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Replace your MCP URL?' });
    await dialog.waitFor();
    assert.equal(await page.evaluate(() => Boolean(document.activeElement?.closest('dialog'))), true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'Get a new URL' }).click();
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

  it('publishes an add-on from the developer page, installs it and switches a tool on', async () => {
    const api = await clientFor(page);
    await page.getByRole('link', { name: 'Developers' }).click();
    await page.getByRole('heading', { name: 'Your add-ons' }).waitFor();

    // A manifest with an error first: every problem is listed with its JSON path.
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify({ ...manifest(receiver.url), id: 'Bad Id!' }));
    await page.getByRole('button', { name: 'Push manifest' }).click();
    await page.locator('#manifest-errors code', { hasText: '/id' }).first().waitFor();

    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(manifest(receiver.url), null, 2));
    await page.getByRole('button', { name: 'Push manifest' }).click();
    const secret = (await page.locator('#new-secret').textContent())!;
    assert.match(secret, /^whsec_/);
    assert.ok(receiver.pings > 0, 'Toolport pinged the webhook');
    await page.getByRole('link', { name: 'Open Notes' }).waitFor();
    await screenshots(page, 'developer');
    // The same id again publishes a new version (PUT), with no new secret.
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify({ ...manifest(receiver.url), description: 'Your notes, searchable and tidy.' }));
    await page.getByRole('button', { name: 'Push manifest' }).click();
    await page.getByText('A new version of notes is published.').waitFor();
    assert.equal(await page.locator('#new-secret').count(), 0);

    await page.getByRole('link', { name: 'Open Notes' }).click();
    await page.getByRole('heading', { name: 'Signing secret' }).waitFor();
    await page.getByText('Version 2', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate' }).click();
    const rotated = (await page.locator('#rotated-secret').textContent())!;
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);

    // Another developer's public add-on is in the catalog too.
    const other = await newPerson(tp.url, 'weather-dev');
    const weather = await other.client.post('/api/addons', {
      id: 'weather', name: 'Weather', description: 'Forecasts for any city, by the hour.', webhook: receiver.url, visibility: 'public',
      tools: [{ name: 'forecast', title: 'Forecast', summary: 'Returns the hourly forecast for a city as JSON.', arguments: [{ name: 'city', summary: 'The city.', kind: { text: { maxLength: 80 } } }] }],
    });
    assert.equal(weather.status, 201, weather.text);
    await listPublicly(tp.url, 'weather', other);

    await page.getByRole('link', { name: 'Add-ons' }).first().click();
    await page.getByRole('button', { name: 'Install Weather' }).waitFor();
    await screenshots(page, 'catalog');
    await page.getByRole('button', { name: 'Install Notes' }).click();
    await page.getByText('Notes is installed.').waitFor();
    const del = page.locator('[data-addon="notes"] [data-tool="delete_note"]');
    await del.getByText(/Destructive/).waitFor();
    for (const name of ['search_notes', 'delete_note']) {
      const sw = page.locator(`[data-addon="notes"] [data-tool="${name}"]`).getByRole('switch');
      assert.equal(await sw.getAttribute('aria-checked'), 'false', 'tools start off');
      await sw.click();
      await page.waitForFunction((n) => document.querySelector(`[data-tool="${n}"] [role=switch]`)?.getAttribute('aria-checked') === 'true', name);
    }
    const installs = (await api.get('/api/installs')).body as Array<{ addon: { id: string }; tools: Array<{ name: string; enabled: boolean }> }>;
    const notes = installs.find((i) => i.addon.id === 'notes')!;
    assert.deepEqual(notes.tools.map((x) => [x.name, x.enabled]).sort(), [['delete_note', true], ['search_notes', true]]);
    await screenshots(page, 'addons');
  });

  it('shows a pending approval live, with hidden characters made visible, and allows it', async () => {
    const api = await clientFor(page);
    const me = (await api.get('/api/me')).body;
    const { client } = await connectApp(me.mcpUrl, api, { name: 'Test App' });
    app = client;

    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.locator('[data-empty="approvals"]').waitFor();
    const calling = client.callTool({ name: 'notes__delete_note', arguments: { id: 'note\u202Etxt.exe' } });
    const card = page.locator('[data-approval]');
    await card.waitFor({ timeout: 15_000 });
    await card.getByText('⟦U+202E⟧').waitFor();
    await card.getByText('Delete the note “Groceries”?').waitFor();
    assert.match((await card.locator('.countdown').textContent()) ?? '', /\d+ s left/);
    await screenshots(page, 'approvals');
    await card.getByRole('button', { name: 'Allow' }).click();
    const result = (await calling) as { isError?: boolean; content?: Array<{ text?: string }> };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(receiver.calls.filter((c) => c.tool === 'delete_note').length, 1);
    await page.locator('[data-decided]').waitFor();
  });

  it('shows the call in the activity log', async (t) => {
    if (!app) return t.skip('needs a call made through the MCP endpoint');
    await page.getByRole('link', { name: 'Activity' }).click();
    // By the tool's title and the add-on's name, not `notes__delete_note` (#43).
    await page.locator('tr[data-call]', { hasText: 'Delete a note' }).first().waitFor();
    await page.locator('.chart svg rect').first().waitFor();
    await screenshots(page, 'activity');
  });

  it('removes an approval decided on another device, live', async (t) => {
    if (!app) return t.skip('needs an app let in through OAuth');
    const api = await clientFor(page);
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.locator('[data-empty="approvals"]').waitFor();
    const reason = `<img src=x onerror="document.title='pwned'"> ${'because '.repeat(40)}`;
    const calling = app.callTool({ name: 'notes__delete_note', arguments: { id: 'n2', reason } });
    const card = page.locator('[data-approval]');
    await card.waitFor({ timeout: 15_000 });
    // Markup in arguments is text, and a long value is folded until asked for.
    assert.equal(await card.locator('img').count(), 0);
    const fold = card.locator('details.fold');
    assert.equal(await fold.getAttribute('open'), null);
    await fold.locator('summary').click();
    assert.equal((await fold.locator('pre').textContent())?.trim(), reason.trim());
    assert.notEqual(await page.title(), 'pwned');
    const id = (await card.getAttribute('data-approval'))!;
    assert.equal((await api.post(`/api/approvals/${id}/decision`, { decision: 'deny' })).status, 200);
    await page.locator('[data-empty="approvals"]').waitFor(); // gone without a reload (approval.decided)
    const result = (await calling) as { isError?: boolean };
    assert.equal(result.isError, true, 'a denied call ends as a tool error');
    assert.equal(receiver.calls.filter((c) => c.tool === 'delete_note').length, 1, 'the denied call never reached the add-on');
  });

  it('shows the recorded outcome when an approval was already decided (409)', async (t) => {
    if (!app) return t.skip('needs an app let in through OAuth');
    const api = await clientFor(page);
    // A second tab whose live stream is cut, so it still shows an approval decided elsewhere.
    const stale = await page.context().newPage();
    await stale.route('**/api/events', (r) => r.abort());
    await stale.goto('/approvals');
    await stale.locator('[data-empty="approvals"]').waitFor();
    const calling = app.callTool({ name: 'notes__delete_note', arguments: { id: 'n3' } });
    const card = stale.locator('[data-approval]');
    await card.waitFor({ timeout: 15_000 });
    const id = (await card.getAttribute('data-approval'))!;
    assert.equal((await api.post(`/api/approvals/${id}/decision`, { decision: 'deny' })).status, 200);
    await card.getByRole('button', { name: 'Allow' }).click();
    const decided = stale.locator(`[data-decided="${id}"]`);
    await decided.waitFor();
    assert.match((await decided.textContent()) ?? '', /denied/i);
    assert.equal(((await calling) as { isError?: boolean }).isError, true);
    await stale.close();
  });

  it('shows deliveries and runs a check script on the developer page', async () => {
    await page.goto('/developer/addons/notes');
    await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
    if (app) await page.locator('tr[data-delivery]').first().waitFor();
    await page.getByLabel('Script (JSON)').fill(JSON.stringify([{ tool: 'search_notes', arguments: { query: 'milk' } }]));
    await page.getByRole('button', { name: 'Run check' }).click();
    await page.locator('.report li', { hasText: 'search_notes' }).waitFor({ timeout: 20_000 });
    await screenshots(page, 'developer-addon');
  });

  it('revokes an app after a confirmation', async (t) => {
    if (!app) return t.skip('needs an app let in through OAuth');
    const api = await clientFor(page);
    await page.getByRole('link', { name: 'Apps let in' }).click();
    const row = page.locator('[data-connection]', { hasText: 'Test App' });
    await row.getByText('Unverified').waitFor();
    await screenshots(page, 'apps');
    await row.getByRole('button', { name: 'Revoke Test App' }).click();
    await page.getByRole('dialog', { name: 'Revoke Test App?' }).getByRole('button', { name: 'Revoke access' }).click();
    await page.getByText('Test App can no longer reach your tools.').waitFor();
    assert.equal(((await api.get('/api/connections')).body as unknown[]).length, 0);
    await assert.rejects(app.listTools(), 'the revoked app is refused');
  });

  it('registers the service worker for the whole origin; a push shows Allow and Deny', async () => {
    await page.context().grantPermissions(['notifications'], { origin: tp.url });
    const cdp = await page.context().newCDPSession(page);
    const registered = new Promise<string>((resolve) =>
      cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
        const r = e.registrations.find((x) => x.scopeURL === `${tp.url}/`);
        if (r) resolve(r.registrationId);
      }),
    );
    await cdp.send('ServiceWorker.enable');
    const scope = await page.evaluate(async () => {
      const reg = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
      await navigator.serviceWorker.ready;
      return reg.scope;
    });
    assert.equal(scope, `${tp.url}/`);
    // Deliver a push the way the push service would (DevTools protocol), then read the notification.
    const payload = { approvalId: 'apr_test', title: 'Test App wants to delete a note', body: 'notes · delete_note', actionToken: 'tok' };
    const registrationId = await registered;
    const readShown = () =>
      page.evaluate(async () => {
        const reg = await navigator.serviceWorker.ready;
        for (let i = 0; i < 10; i++) {
          const [n] = await reg.getNotifications({ tag: 'apr_test' });
          if (n) return { title: n.title, body: n.body, actions: (n as Notification & { actions?: Array<{ action: string }> }).actions?.map((a) => a.action) };
          await new Promise((r) => setTimeout(r, 100));
        }
        return null;
      });
    // A push can reach a worker that is still starting up and be dropped; the push service retries too.
    let shown = null;
    for (let attempt = 0; attempt < 5 && !shown; attempt++) {
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: tp.url, registrationId, data: JSON.stringify(payload) });
      shown = await readShown();
    }
    assert.deepEqual(shown, { title: payload.title, body: payload.body, actions: ['allow', 'deny'] });
    await cdp.detach();
  });

  it('signs out', async () => {
    await page.goto('/');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(page.url(), `${tp.url}/signin`);
    assert.equal((await page.evaluate(() => fetch('/api/me').then((r) => r.status))), 401);
    await page.goto('/activity');
    await page.waitForURL('**/signin');
  });

  it('logs no errors and no CSP violations', () => {
    assert.deepEqual(errors, []);
  });

  it('never scrolls sideways on a 375 px phone', () => {
    assert.deepEqual(phoneOverflow, []);
  });
});

/**
 * Every failed request and console error a page makes, including the 4xx answers `watchErrors`
 * lets pass: a signed-out load must make none.
 */
function watchEverything(page: Page): string[] {
  const seen: string[] = [];
  page.on('response', (r) => { if (r.status() >= 400) seen.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`); });
  page.on('console', (m) => { if (m.type() === 'error') seen.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => seen.push(`page error: ${String(e)}`));
  return seen;
}

/**
 * Links and buttons that stand alone (not a few words inside a sentence) smaller than 24 px either
 * way (WCAG 2.2's target size), and text links lower than `linkMin` (44 px on a phone: a finger).
 */
const smallTargets = (page: Page, linkMin: number) =>
  page.evaluate((linkMin) => {
    const words = (t: string) => t.trim().split(/\s+/).filter(Boolean).length;
    return [...document.querySelectorAll<HTMLElement>('a[href], button')]
      .filter((el) => {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || el.closest('.visually-hidden, dialog:not([open]), .sidebar, .skip')) return false;
        const block = el.closest('p, li, td, dd, dt, h1, h2, h3, h4, div, label, form') ?? document.body;
        // Inside a sentence (WCAG's exception for inline links): the words around it are more than a few.
        const around = words(block.textContent ?? '') - words(el.textContent ?? '');
        if (around > 4) return false;
        const textLink = el.tagName === 'A' && !el.classList.contains('btn');
        return r.height < (textLink ? linkMin : 24) || r.width < 24;
      })
      .map((el) => `"${el.textContent?.trim()}" ${Math.round(el.getBoundingClientRect().width)}×${Math.round(el.getBoundingClientRect().height)}`);
  }, linkMin);

describe('the details a person notices', () => {
  it('titles the sign-in page "Sign in" and loads it signed out without a failed request', async () => {
    for (const start of ['/', '/signin', '/signup', '/activity']) {
      const ctx = await newContext(browser, tp.url, SIZES.desktop);
      const page = await ctx.newPage();
      const seen = watchEverything(page);
      // Every title the tab shows while the page loads, not only the last.
      await page.addInitScript(() => {
        const w = window as unknown as { titles: string[] };
        w.titles = [];
        new MutationObserver(() => { if (document.title && w.titles.at(-1) !== document.title) w.titles.push(document.title); })
          .observe(document, { subtree: true, childList: true, characterData: true });
      });
      try {
        await page.goto(start);
        const heading = start === '/signup' ? 'Create your account' : 'Sign in';
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        await page.waitForLoadState('networkidle');
        assert.equal(await page.title(), `${heading} · Toolport`, `the tab opened at ${start}`);
        const titles = await page.evaluate(() => (window as unknown as { titles: string[] }).titles);
        assert.deepEqual(titles.filter((t) => t !== 'Toolport' && t !== `${heading} · Toolport`), [], `the tab never names another page: ${titles.join(' → ')}`);
        assert.deepEqual(seen, [], `opening ${start} signed out`);
      } finally {
        await ctx.close();
      }
    }
  });

  it('weighs "Get a new URL" below "Copy URL" on Home: the rare, destructive one is the quiet one', async () => {
    const person = await newPerson(tp.url, 'weights');
    for (const size of Object.keys(SIZES) as Size[]) {
      const { page, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/');
        await page.getByTestId('mcp-url').waitFor();
        const look = (name: string) =>
          page.getByRole('button', { name, exact: true }).evaluate((el) => {
            const cs = getComputedStyle(el);
            const filled = !/rgba\(0, 0, 0, 0\)|transparent/.test(cs.backgroundColor) && cs.backgroundColor !== getComputedStyle(el.closest('.card')!).backgroundColor;
            const bordered = parseFloat(cs.borderTopWidth) > 0 && !/rgba\(0, 0, 0, 0\)|transparent/.test(cs.borderTopColor);
            const r = el.getBoundingClientRect();
            return { filled, bordered, fontSize: parseFloat(cs.fontSize), weight: Number(cs.fontWeight), height: r.height, width: r.width };
          });
        const copy = await look('Copy URL');
        const rotate = await look('Get a new URL');
        assert.equal(copy.filled, true, `${size}: Copy URL is the filled, primary button`);
        assert.deepEqual([rotate.filled, rotate.bordered], [false, false], `${size}: Get a new URL is neither filled nor outlined`);
        assert.ok(rotate.fontSize < copy.fontSize || rotate.weight < copy.weight, `${size}: Get a new URL has smaller or lighter text: ${JSON.stringify({ copy, rotate })}`);
        assert.ok(rotate.height >= 24 && rotate.width >= 24, `${size}: still a target of 24 px at least`);
        if (size === 'desktop') await screenshots(page, 'home-buttons');
      } finally {
        await close();
      }
    }
  });

  it('makes every link that stands alone a target: 24 px at least, 44 px high on a phone', async () => {
    const person = await newPerson(tp.url, 'targets');
    const found: string[] = [];
    for (const size of Object.keys(SIZES) as Size[]) {
      const min = size === 'phone' ? 44 : 24;
      const anon = await newContext(browser, tp.url, SIZES[size]);
      const tab = await anon.newPage();
      const signedIn = await dashboardAs(browser, tp.url, person.client, size);
      try {
        for (const path of ['/signin', '/signup', '/forgot-password', '/developers']) {
          await tab.goto(path);
          await tab.locator('#page-title').waitFor();
          for (const t of await smallTargets(tab, min)) found.push(`${size} ${path}: ${t}`);
        }
        // The sign-in page an app's authorization sends a signed-out person to (server-rendered).
        const { user } = await newPerson(tp.url, 'targets-app');
        const mcp = new URL(user.mcpUrl);
        const login = `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: (await new Client(tp.url).post('/oauth/register', { client_name: 'Targets', redirect_uris: ['http://127.0.0.1:9999/callback'] })).body.client_id, redirect_uri: 'http://127.0.0.1:9999/callback', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', resource: mcp.toString(), state: 's' })}`;
        await tab.goto(login);
        await tab.getByRole('heading', { level: 1, name: 'Sign in to Toolport' }).waitFor();
        for (const t of await smallTargets(tab, min)) found.push(`${size} oauth sign-in: ${t}`);
        for (const path of ['/', '/nothing-here']) {
          await signedIn.page.goto(path);
          await signedIn.page.locator('#page-title').waitFor();
          for (const t of await smallTargets(signedIn.page, min)) found.push(`${size} ${path}: ${t}`);
        }
      } finally {
        await anon.close();
        await signedIn.close();
      }
    }
    assert.deepEqual(found, []);
  });

  it('answers /developers: a page for add-on developers when signed out, the developer page when signed in', async () => {
    const ctx = await newContext(browser, tp.url, SIZES.phone);
    const page = await ctx.newPage();
    const seen = watchEverything(page);
    try {
      await page.goto('/developers');
      await page.getByRole('heading', { level: 1, name: 'Build add-ons for Toolport' }).waitFor();
      assert.equal(page.url(), `${tp.url}/developers`, 'not sent to sign in');
      assert.equal(await page.title(), 'Build add-ons for Toolport · Toolport');
      const text = (await page.locator('main').textContent()) ?? '';
      for (const said of ['@toolport/cli', '@toolport/addon-kit', 'docs/quickstart.md']) assert.ok(text.includes(said), `it names ${said}`);
      assert.deepEqual(seen, []);
      // Creating an account from there lands on the developer page.
      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.getByLabel('Email').fill(`developers-${process.pid}-${Date.now()}@example.com`);
      await page.getByLabel('Password').fill('correct horse battery');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL('**/developer');
      await page.getByRole('heading', { level: 1, name: 'Developers' }).waitFor();
      // Signed in, /developers is the developer page itself.
      await page.goto('/developers');
      await page.waitForURL('**/developer');
      await page.getByRole('heading', { level: 1, name: 'Developers' }).waitFor();
      await screenshots(page, 'developers-signed-in');
    } finally {
      await ctx.close();
    }
  });
});
