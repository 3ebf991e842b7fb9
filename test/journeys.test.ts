// A person's journeys end to end in real Chromium: every step a person takes is a click or a key in
// the browser (the dashboard, Toolport's sign-in and consent pages), and the app is the SDK's own
// client with a real loopback redirect URI. test/helpers/mcp.ts `consent()` posts the consent form
// from Node, which is how a browser-only bug (a form post carrying `Origin: null`) went unseen.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, type startAddonServer } from './helpers/addon-server';
import { screenshots } from './helpers/browser';
import { listPublicly, newPerson } from './helpers/http';
import { BrowserAppProvider, decideInBrowser, startJourney, type CallbackServer } from './helpers/journey';
import type { Toolport } from './helpers/target';

const PASSWORD = 'correct horse battery';

let tp: Toolport;
let addon: Awaited<ReturnType<typeof startAddonServer>>;
let callback: CallbackServer;
let stopJourney: () => Promise<void>;
/** The person's one tab: the dashboard, then the pages the app sends them to. */
let page: Page;
let errors: string[];

before(async () => {
  await ensureDashboardBuilt();
  ({ tp, addon, callback, page, errors, close: stopJourney } = await startJourney({
    search_notes: () => ({ text: 'No notes found.' }),
    delete_note: () => ({ text: 'Deleted.' }),
  }));

  // The developer's side, over the API: the Notes add-on, public, on a local webhook.
  const dev = await newPerson(tp.url, 'dev');
  const created = await dev.client.post('/api/addons', notesManifest('notes', addon.url, { visibility: 'public' }));
  assert.equal(created.status, 201, created.text);
  addon.setSecret(created.body.signingSecret);
  await listPublicly(tp.url, 'notes', dev);
  // A destructive call is described by the add-on first; `{confirm: null}` would skip the approval.
  addon.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
});
after(async () => {
  await stopJourney?.();
});

const toolCalls = (tool: string) => addon.calls().filter((d) => d.body.tool === tool).length;

/** Login and consent pages must read well on a phone too: screenshots, and no sideways scroll. */
async function checkOAuthPage(kind: 'login' | 'consent') {
  const shot = await screenshots(page, `journey-${kind}`);
  assert.equal(shot.phoneOverflowPx, 0, `the ${kind} page scrolls sideways on a 375 px phone`);
}

/** The person of the first journey: the Deny journey reuses them. */
let email = '';
let mcpUrl = '';

describe('a person connects an AI app, all in the browser', () => {
  let provider: BrowserAppProvider;
  let app: McpClient | undefined;

  it('signs up in the dashboard, turns AI apps on and copies the MCP URL', async () => {
    email = `journey-${process.pid}-${Date.now()}@example.com`;
    await page.goto('/');
    await page.waitForURL('**/signin');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();

    await page.getByRole('switch', { name: 'AI apps', exact: true }).click();
    await page.locator('[role=switch][aria-checked=true]', { hasText: 'AI apps' }).waitFor();

    await page.getByRole('button', { name: 'Copy URL' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    mcpUrl = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(mcpUrl, await page.getByTestId('mcp-url').textContent());
    assert.match(mcpUrl, new RegExp(`^${tp.url}/u/[A-Za-z0-9_-]+/mcp$`));
  });

  it('installs Notes from the catalog and switches its tools on, the destructive one too', async () => {
    await page.getByRole('link', { name: 'Add-ons' }).first().click();
    await page.getByRole('button', { name: 'Install Notes' }).click();
    await page.getByText('Notes is installed.').waitFor();
    for (const tool of ['search_notes', 'delete_note']) {
      await page.locator(`[data-addon="notes"] [data-tool="${tool}"]`).getByRole('switch').click();
      await page.waitForFunction((t) => document.querySelector(`[data-addon="notes"] [data-tool="${t}"] [role=switch]`)?.getAttribute('aria-checked') === 'true', tool);
    }
    await page.locator('[data-addon="notes"] [data-tool="delete_note"]').getByText(/Destructive/).waitFor();
    // Saved, not just drawn: a reload shows them on.
    await page.reload();
    for (const tool of ['search_notes', 'delete_note']) {
      const sw = page.locator(`[data-addon="notes"] [data-tool="${tool}"]`).getByRole('switch');
      await sw.waitFor();
      assert.equal(await sw.getAttribute('aria-checked'), 'true', `${tool} stays on`);
    }
  });

  it('signs out, so the app\'s sign-in happens on the consent page', async () => {
    await page.goto('/');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => fetch('/api/me').then((r) => r.status)), 401);
  });

  it('lets the SDK client in: signs in from the consent page, reads it, presses Allow', async () => {
    assert.ok(mcpUrl, 'needs the MCP URL copied from the dashboard');
    provider = new BrowserAppProvider('Journey App', callback.url);
    // The SDK's real flow: connect, get 401, register, hand over the authorization URL, throw.
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await assert.rejects(new McpClient({ name: 'Journey App', version: '1.0.0' }).connect(transport), UnauthorizedError);
    const authorizationUrl = await provider.nextAuthorizationUrl(0);
    assert.equal(authorizationUrl.origin, tp.url);

    const seen = callback.hits.length;
    const { signedIn } = await decideInBrowser(page, authorizationUrl, {
      email, password: PASSWORD, decision: 'allow', appName: 'Journey App', redirectHost: callback.host, onPage: checkOAuthPage,
    });
    assert.equal(signedIn, true, 'Toolport asked the signed-out person to sign in first');
    const hit = await callback.next(seen);
    await page.getByRole('heading', { name: 'You can go back to the app.' }).waitFor(); // Chromium really landed there
    assert.ok(hit.code, `the redirect carries a code: ${hit.query}`);
    assert.equal(hit.error, null);
    assert.equal(hit.state, provider.states.at(-1), 'the state the app sent comes back');
    assert.equal(hit.iss, tp.url, 'RFC 9207: the issuer comes back too');

    await transport.finishAuth(hit.code);
    assert.ok(provider.tokens()?.access_token, 'the app holds tokens');
    const connected = new McpClient({ name: 'Journey App', version: '1.0.0' });
    await connected.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
    app = connected;
  });

  it('the app lists the tools switched on and searches notes', async () => {
    assert.ok(app, 'needs the app let in');
    const { tools } = await app.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['notes__delete_note', 'notes__search_notes']);
    const result = (await app.callTool({ name: 'notes__search_notes', arguments: { query: 'milk' } })) as { isError?: boolean; content: Array<{ text?: string }> };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.content[0]?.text, 'No notes found.');
    assert.equal(toolCalls('search_notes'), 1);
  });

  it('a destructive call waits until the person presses Allow on the Approvals page', async () => {
    assert.ok(app, 'needs the app let in');
    const calling = app.callTool({ name: 'notes__delete_note', arguments: { id: 'n1' } }) as Promise<{ isError?: boolean; content: Array<{ text?: string }> }>;
    calling.catch(() => {}); // awaited below; no unhandled rejection if a step before fails
    // Signed in by the consent page's form: the same cookie opens the dashboard.
    await page.goto('/');
    await page.getByRole('link', { name: 'Approvals' }).click();
    const card = page.locator('[data-approval]');
    await card.waitFor({ timeout: 15_000 });
    await card.getByText('Journey App').first().waitFor();
    await card.getByText('Delete the note n1?').waitFor(); // the add-on's own description of this call
    assert.equal(toolCalls('delete_note'), 0, 'nothing reached the add-on before Allow');
    await card.getByRole('button', { name: 'Allow' }).click();
    const result = await calling;
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.content[0]?.text, 'Deleted.');
    assert.equal(toolCalls('delete_note'), 1, 'the add-on received exactly one call');
    await page.locator('[data-decided]').waitFor();
  });

  it('revokes the app on "Apps let in"; the app\'s next call fails', async () => {
    assert.ok(app, 'needs the app let in');
    await page.getByRole('link', { name: 'Apps let in' }).click();
    const row = page.locator('[data-connection]', { hasText: 'Journey App' });
    await row.getByText(`Returns to ${callback.host}`).waitFor();
    await row.getByRole('button', { name: 'Revoke Journey App' }).click();
    await page.getByRole('dialog', { name: 'Revoke Journey App?' }).getByRole('button', { name: 'Revoke access' }).click();
    await page.getByText('Journey App can no longer reach your tools.').waitFor();
    await page.reload();
    await page.getByText('No app is let in yet.').waitFor();

    const asked = provider.authorizationUrls.length;
    await assert.rejects(app.callTool({ name: 'notes__search_notes', arguments: {} }), UnauthorizedError);
    assert.equal(toolCalls('search_notes'), 1, 'the refused call never reached the add-on');
    // Its refresh token is dead too: the SDK can only send the person back to consent. The call
    // meets the 401, and so may the client's list-changed GET stream when it reconnects: each
    // sends the app to authorize, and neither gets in.
    assert.ok(provider.authorizationUrls.length > asked, 'the app was sent to authorize again');
    await app.close();
  });
});

describe('a person denies an app on the consent page', () => {
  it('sends access_denied and the state back to the app, which gets no tokens', async () => {
    assert.ok(mcpUrl, 'needs the person of the first journey');
    // Signed in already by the first journey's consent page; if that failed, by the dashboard's own
    // form, so this journey still reaches (and checks) the Deny button.
    await page.goto('/');
    const signInForm = page.getByRole('heading', { name: 'Sign in', exact: true });
    await page.getByRole('heading', { level: 1, name: 'Home' }).or(signInForm).waitFor();
    if (await signInForm.isVisible()) {
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Home' }).waitFor();
    }
    const provider = new BrowserAppProvider('Nosy App', callback.url);
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await assert.rejects(new McpClient({ name: 'Nosy App', version: '1.0.0' }).connect(transport), UnauthorizedError);
    const seen = callback.hits.length;
    await decideInBrowser(page, await provider.nextAuthorizationUrl(0), {
      email, password: PASSWORD, decision: 'deny', appName: 'Nosy App', redirectHost: callback.host,
    });
    const hit = await callback.next(seen);
    await page.getByRole('heading', { name: 'The app was not let in.' }).waitFor();
    assert.equal(hit.error, 'access_denied');
    assert.equal(hit.code, null);
    assert.equal(hit.state, provider.states.at(-1));
    assert.equal(provider.tokens(), undefined, 'no tokens for a denied app');

    await page.goto('/apps');
    await page.getByText('No app is let in yet.').waitFor();
  });
});

describe('the pages along the way', () => {
  it('logged no console errors and no CSP violations (dashboard, sign-in, consent)', () => {
    assert.deepEqual(errors, []);
  });
});
