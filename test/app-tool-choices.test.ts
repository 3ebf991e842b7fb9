// Issue #25, per-app tool choices: the consent page lists the person's switched-on tools, all
// ticked; what the person unticks the app never sees (tools/list) nor reaches (tools/call answers
// it as unknown); the Apps page edits the choice and the app is told its list changed; a tool
// switched on later reaches only the apps let in with "Also let it use tools I switch on later".
// The person's steps are clicks in Chromium; the apps are the SDK's own clients (v1, and v2 on
// 2026-07-28); forged forms and API bodies are sent over HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Page } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, type startAddonServer } from './helpers/addon-server';
import { pendingWhere } from './helpers/approvals';
import { installFor, listPublicly, newPerson, type Client } from './helpers/http';
import { BrowserAppProvider, decideInBrowser, startJourney, type CallbackServer } from './helpers/journey';
import { connectAppV2 } from './helpers/mcp-v2';
import { newContext, watchErrors } from './helpers/browser';
import { authorizeQuery, FORM, hiddenFields, pkce, register, REDIRECT } from './helpers/oauth-flow';
import type { Toolport } from './helpers/target';

const SEARCH = 'notes__search_notes';
const ADD = 'notes__add_note';
const DELETE = 'notes__delete_note';

let tp: Toolport;
let addon: Awaited<ReturnType<typeof startAddonServer>>;
let callback: CallbackServer;
let page: Page;
let errors: string[];
let stopJourney: () => Promise<void>;
let person: Awaited<ReturnType<typeof newPerson>>;

before(async () => {
  await ensureDashboardBuilt();
  ({ tp, addon, callback, page, errors, close: stopJourney } = await startJourney({
    search_notes: () => ({ text: 'No notes found.' }),
    add_note: (b) => ({ text: `Added: ${b.arguments.text}` }),
    delete_note: () => ({ text: 'Deleted.' }),
  }));
  const dev = await newPerson(tp.url, 'dev');
  const created = await dev.client.post('/api/addons', notesManifest('notes', addon.url, { visibility: 'public' }));
  assert.equal(created.status, 201, created.text);
  addon.setSecret(created.body.signingSecret);
  await listPublicly(tp.url, 'notes', dev);
  // Search and add on; delete stays off until the later-tools journey switches it on.
  person = await newPerson(tp.url, 'chooser');
  await installFor(person, 'notes', { search_notes: true, add_note: true });
  await page.context().addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
});
after(async () => {
  await stopJourney?.();
});

type Listed = { tools: Array<{ name: string }> };
const names = (listed: Listed) => listed.tools.map((t) => t.name);
const textOf = (result: unknown) => ((result as { content: Array<{ text?: string }> }).content ?? []).map((b) => b.text ?? '').join(' ');
const toolCalls = (tool: string) => addon.calls().filter((d) => d.body.tool === tool).length;

/** Resolves each time the handler is called: `next()` is the next notification (the test's timeout bounds it). */
function heard() {
  let fire!: () => void;
  let promise = new Promise<void>((resolve) => (fire = resolve));
  return {
    handler: () => fire(),
    next: async () => {
      await promise;
      promise = new Promise<void>((resolve) => (fire = resolve));
    },
  };
}

/** A v1 SDK app let in by the person in Chromium, with what they change on the consent page. */
async function letInFromBrowser(appName: string, choice: { untick?: string[]; newTools?: boolean; askEveryTool?: boolean }) {
  const provider = new BrowserAppProvider(appName, callback.url);
  const first = new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), { authProvider: provider });
  await assert.rejects(new McpClient({ name: appName, version: '1.0.0' }).connect(first), UnauthorizedError);
  const url = await provider.nextAuthorizationUrl(0);
  const seen = callback.hits.length;
  await decideInBrowser(page, url, { email: person.email, password: person.password, appName, redirectHost: callback.host, ...choice });
  const hit = await callback.next(seen);
  assert.ok(hit.code, `the app got a code: ${hit.query}`);
  await first.finishAuth(hit.code);
  const client = new McpClient({ name: appName, version: '1.0.0' });
  const changed = heard();
  client.setNotificationHandler(ToolListChangedNotificationSchema, changed.handler);
  await client.connect(new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), { authProvider: provider }));
  return { client, changed };
}

async function connectionNamed(who: Client, appName: string) {
  const list = (await who.get('/api/connections')).body as Array<{ id: string; appName: string; tools: string[]; newTools: boolean }>;
  const found = list.find((c) => c.appName === appName);
  assert.ok(found, `${appName} is among the connections: ${JSON.stringify(list)}`);
  return found;
}

describe('per-app tool choices, from the consent page to the Apps page', () => {
  let chosen: Awaited<ReturnType<typeof letInFromBrowser>>;
  let modern: Awaited<ReturnType<typeof connectAppV2>>['client'];
  let modernHeard: ReturnType<typeof heard>;
  let subscription: { close(): Promise<void> };

  it('lists the switched-on tools by add-on on the consent page, all ticked, the later-tools box not', async () => {
    const provider = new BrowserAppProvider('Look App', callback.url);
    await assert.rejects(new McpClient({ name: 'Look App', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), { authProvider: provider })), UnauthorizedError);
    await page.goto(String(await provider.nextAuthorizationUrl(0)));
    const notes = page.getByRole('group', { name: 'Notes' });
    await notes.waitFor();
    assert.equal(await notes.getByRole('checkbox', { name: /Search notes/ }).isChecked(), true);
    assert.equal(await notes.getByRole('checkbox', { name: /Add a note/ }).isChecked(), true);
    assert.equal(await page.getByRole('checkbox', { name: /Delete a note/ }).count(), 0, 'a tool that is off is not offered');
    assert.equal(await page.getByRole('checkbox', { name: 'Also let it use tools I switch on later' }).isChecked(), false);
    await page.getByText('a tool you switch on later is not given to this app').waitFor();
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    await page.waitForURL((u) => u.origin === new URL(callback.url).origin);
  });

  it('lets an app in with one tool unticked: its tools/list lacks it and tools/call says it was not given', async () => {
    chosen = await letInFromBrowser('Choosy App', { untick: [ADD] });
    assert.deepEqual(names(await chosen.client.listTools()), [SEARCH]);
    const before = toolCalls('add_note');
    const refused = await chosen.client.callTool({ name: ADD, arguments: { text: 'sneaky' } });
    assert.equal(refused.isError, true);
    assert.equal(textOf(refused), `The person has not given this app the tool "${ADD}". They can give it to this app in Toolport at ${tp.url}/apps; then call tools/list again.`);
    assert.equal(toolCalls('add_note'), before, 'nothing reached the add-on');
    const found = textOf(await chosen.client.callTool({ name: SEARCH, arguments: {} }));
    assert.equal(found, 'No notes found.');
    const connection = await connectionNamed(person.client, 'Choosy App');
    assert.deepEqual([connection.tools, connection.newTools], [[SEARCH], false]);

    // The same on 2026-07-28 (modern.ts): a v2 app the person lets in without add_note.
    ({ client: modern } = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Choosy v2', mode: 'auto', choice: { untick: [ADD] } }));
    assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.deepEqual(names(await modern.listTools()), [SEARCH]);
    const modernRefused = await modern.callTool({ name: ADD, arguments: { text: 'sneaky' } });
    assert.equal(modernRefused.isError, true);
    assert.match(textOf(modernRefused), /has not given this app the tool/);
    modernHeard = heard();
    modern.setNotificationHandler('notifications/tools/list_changed', modernHeard.handler);
    subscription = await modern.listen({ toolsListChanged: true });
  });

  it('adds the tool back on the Apps page in Chromium: the app is told its list changed and can call it', async () => {
    const told = chosen.changed.next();
    await page.goto(`${tp.url}/apps`);
    const card = page.locator(`[data-connection="${(await connectionNamed(person.client, 'Choosy App')).id}"]`);
    await card.getByText('Can use:').waitFor();
    await card.getByRole('button', { name: 'Choose tools for Choosy App' }).click();
    const box = card.getByRole('checkbox', { name: /Add a note/ });
    assert.equal(await box.isChecked(), false, 'the tool not chosen is unticked');
    assert.equal(await card.getByRole('checkbox', { name: /Search notes/ }).isChecked(), true);
    await box.check();
    await card.getByRole('button', { name: 'Save tools' }).click();
    await page.getByText('Choosy App can now use 2 tools.').waitFor();
    await told;
    assert.deepEqual(names(await chosen.client.listTools()), [SEARCH, ADD]);
    assert.equal(textOf(await chosen.client.callTool({ name: ADD, arguments: { text: 'back' } })), 'Added: back');
    // The other app's list did not change: the v2 app still lacks it.
    assert.deepEqual(names(await modern.listTools()), [SEARCH]);

    // Its own choice edited over the API: the 2026-07-28 listener is told.
    const connection = await connectionNamed(person.client, 'Choosy v2');
    const toldModern = modernHeard.next();
    const res = await person.client.put(`/api/connections/${connection.id}/tools`, { tools: [SEARCH, ADD], newTools: false });
    assert.equal(res.status, 200, res.text);
    await toldModern;
    assert.deepEqual(names(await modern.listTools()), [SEARCH, ADD]);
    assert.deepEqual(errors, []);
  });

  it('does not give a tool switched on later to an app let in before, unless the person ticked the later-tools box', async () => {
    const later = await letInFromBrowser('Later App', { newTools: true });
    assert.deepEqual(names(await later.client.listTools()), [SEARCH, ADD]);
    assert.equal((await connectionNamed(person.client, 'Later App')).newTools, true);

    const laterTold = later.changed.next();
    const switched = await person.client.patch('/api/installs/notes', { tools: { delete_note: true } });
    assert.equal(switched.status, 200, switched.text);
    await laterTold;
    assert.deepEqual(names(await later.client.listTools()), [SEARCH, ADD, DELETE]);
    assert.deepEqual(names(await chosen.client.listTools()), [SEARCH, ADD], 'not given to the app let in without the box');
    assert.deepEqual(names(await modern.listTools()), [SEARCH, ADD]);
    const refused = await chosen.client.callTool({ name: DELETE, arguments: { id: 'n1' } });
    assert.match(textOf(refused), /has not given this app the tool/);

    // The Apps page marks it for the apps that do not have it, and adding it there gives it.
    await page.goto(`${tp.url}/apps`);
    const card = page.locator(`[data-connection="${(await connectionNamed(person.client, 'Choosy App')).id}"]`);
    await card.getByText('1 switched-on tool is not given to it').waitFor();
    await card.getByRole('button', { name: 'Choose tools for Choosy App' }).press('Enter');
    // The list opens where the keyboard is: on its first checkbox.
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.type), 'checkbox');
    assert.equal(await card.getByRole('checkbox', { name: /Delete a note/ }).isChecked(), false);
    const toldChosen = chosen.changed.next();
    await card.getByRole('checkbox', { name: 'Also let it use tools I switch on later' }).check();
    await card.getByRole('checkbox', { name: /Delete a note/ }).check();
    await card.getByRole('button', { name: 'Save tools' }).click();
    await page.getByText('Choosy App can now use 3 tools.').waitFor();
    // Focus goes back to the button that opened the list, not to the page's start.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Choose tools for Choosy App');
    await toldChosen;
    assert.deepEqual(names(await chosen.client.listTools()), [SEARCH, ADD, DELETE]);
    assert.equal((await connectionNamed(person.client, 'Choosy App')).newTools, true);
    await later.client.close();
    assert.deepEqual(errors, []);
  });

  after(async () => {
    await subscription?.close().catch(() => {});
    await modern?.close().catch(() => {});
    await chosen?.client.close().catch(() => {});
  });
});

describe('the seeds\' order: an app let in before any tool is switched on', () => {
  it('gets the tools the person then switches on in the dashboard, hears the change, and calls them', async () => {
    const p = await newPerson(tp.url, 'seed-order');
    assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
    const context = await newContext(page.context().browser()!, tp.url);
    const tab = await context.newPage();
    const tabErrors = watchErrors(tab, tp.url);
    try {
      // The app is let in first, signing in on the consent page: nothing is switched on yet, so the
      // page says the app gets the tools switched on later, with that box ticked.
      const provider = new BrowserAppProvider('Early App', callback.url);
      const first = new StreamableHTTPClientTransport(new URL(p.user.mcpUrl), { authProvider: provider });
      await assert.rejects(new McpClient({ name: 'Early App', version: '1.0.0' }).connect(first), UnauthorizedError);
      const seen = callback.hits.length;
      await decideInBrowser(tab, await provider.nextAuthorizationUrl(0), {
        email: p.email, password: p.password, appName: 'Early App', redirectHost: callback.host,
        onPage: async (kind) => {
          if (kind !== 'consent') return;
          await tab.getByText('this app will get the tools you switch on later').waitFor();
          assert.equal(await tab.getByRole('checkbox', { name: 'Also let it use tools I switch on later' }).isChecked(), true);
        },
      });
      const hit = await callback.next(seen);
      assert.ok(hit.code, `the app got a code: ${hit.query}`);
      await first.finishAuth(hit.code);
      const app = new McpClient({ name: 'Early App', version: '1.0.0' });
      const changed = heard();
      app.setNotificationHandler(ToolListChangedNotificationSchema, changed.handler);
      await app.connect(new StreamableHTTPClientTransport(new URL(p.user.mcpUrl), { authProvider: provider }));
      assert.deepEqual(names(await app.listTools()), []);

      // Then, in the dashboard, the person installs Notes and switches search on.
      const told = changed.next();
      await tab.goto(`${tp.url}/addons`);
      await tab.getByRole('button', { name: 'Install Notes' }).click();
      await tab.getByText('Notes is installed.').waitFor();
      await tab.locator('[data-addon="notes"] [data-tool="search_notes"]').getByRole('switch').click();
      await tab.waitForFunction(() => document.querySelector('[data-addon="notes"] [data-tool="search_notes"] [role=switch]')?.getAttribute('aria-checked') === 'true');
      await told;
      assert.deepEqual(names(await app.listTools()), [SEARCH]);
      assert.equal(textOf(await app.callTool({ name: SEARCH, arguments: {} })), 'No notes found.');
      assert.equal((await connectionNamed(p.client, 'Early App')).newTools, true);
      await app.close();
      assert.deepEqual(tabErrors, []);
    } finally {
      await context.close();
    }
  });
});

/** A consent page for a fresh app of `who`, and its form's hidden fields, over HTTP. */
async function consentForm(who: Client, mcpUrl: string) {
  const app = await register(tp.url);
  const { challenge } = pkce();
  const page = await who.get(authorizeQuery({
    response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: mcpUrl, scope: 'tools', state: 'st-1',
  }));
  assert.equal(page.status, 200, page.text.slice(0, 300));
  return { page, hidden: hiddenFields(page.text) };
}

/** Posts Allow with these extra fields as a forged or hand-made form would. */
async function allowWith(who: Client, hidden: Record<string, string>, extra: Array<[string, string]>) {
  const form = new URLSearchParams({ ...hidden, decision: 'allow' });
  for (const [k, v] of extra) form.append(k, v);
  return who.request('POST', '/oauth/authorize/decision', form.toString(), FORM);
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
/** The refusal sentence on a consent page shown again, as the person reads it. */
const errorOn = (html: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1]?.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]!);

describe('bad input', () => {
  it('asks before every tool call of an app let in with "Ask me before every tool call", until the person turns it off on the Apps page', async () => {
    const careful = await letInFromBrowser('Careful App', { askEveryTool: true });
    const connection = await connectionNamed(person.client, 'Careful App');
    assert.equal((connection as { askEveryTool?: boolean }).askEveryTool, true);
    // A read-only tool, which runs unasked for any other app: this one waits for the person.
    const before = toolCalls('search_notes');
    const calling = careful.client.callTool({ name: SEARCH, arguments: { query: 'careful' } });
    const pending = await pendingWhere(person.client, (args) => args?.query === 'careful', 'the careful search');
    assert.equal(toolCalls('search_notes'), before, 'nothing ran before the person answered');
    await page.goto(`${tp.url}/approvals/${pending.id}`);
    await page.getByRole('button', { name: 'Allow' }).click();
    assert.equal(textOf(await calling), 'No notes found.');

    // Off on the Apps page: the next call runs unasked.
    await page.goto(`${tp.url}/apps`);
    const card = page.locator(`[data-connection="${connection.id}"]`);
    const box = card.getByRole('checkbox', { name: 'Ask me before every tool call it makes' });
    assert.equal(await box.isChecked(), true);
    const saved = page.waitForResponse((r) => r.url().endsWith(`/api/connections/${connection.id}/ask`) && r.request().method() === 'PUT');
    await box.uncheck();
    assert.equal((await saved).status(), 200);
    assert.equal(textOf(await careful.client.callTool({ name: SEARCH, arguments: { query: 'unasked' } })), 'No notes found.');
    const asked = (await person.client.get('/api/approvals?status=pending')).body as Array<{ arguments: { query?: string } }>;
    assert.ok(!asked.some((a) => a.arguments?.query === 'unasked'), 'the second call did not ask');
    // The Add-ons page says, per switched-on tool, which apps have it.
    await page.goto(`${tp.url}/addons`);
    const searchApps = page.locator('li[data-tool="search_notes"] [data-apps-with-tool]');
    await searchApps.waitFor();
    assert.match((await searchApps.textContent()) ?? '', /Apps with it: .*Careful App/);
    // Another person cannot turn it on for this app.
    const other = await newPerson(tp.url, 'not-the-owner');
    assert.equal((await other.client.put(`/api/connections/${connection.id}/ask`, { askEveryTool: true })).status, 404);
    assert.equal((await person.client.put(`/api/connections/${connection.id}/ask`, { askEveryTool: 'yes' })).status, 422);
    await careful.client.close();
    assert.deepEqual(errors, []);
  });

  it('refuses a consent form naming a tool the person does not have switched on, installed, or at all; makes no connection', async () => {
    const other = await newPerson(tp.url, 'other');
    await installFor(other, 'notes', { search_notes: true, add_note: true, delete_note: true });
    const p = await newPerson(tp.url, 'forger');
    await installFor(p, 'notes', { search_notes: true, add_note: true });
    const cases: Array<[string, Array<[string, string]>, RegExp]> = [
      ['a tool that is off', [['tool', SEARCH], ['tool', DELETE]], /names tools you do not have: "notes__delete_note" is not one of the tools you have switched on, so the app was not let in/],
      ['an add-on not installed', [['tool', 'calendar__add_event']], /"calendar__add_event" is not one of the tools you have switched on/],
      ['a name that is no tool', [['tool', '<script>']], /"<script>" is not one of the tools/],
      ['a tool twice', [['tool', SEARCH], ['tool', SEARCH]], /names a tool more than once/],
      ['more tools than are on', [['tool', SEARCH], ['tool', ADD], ['tool', SEARCH]], /names 3 tools and you have 2 switched on/],
      ['the later-tools box twice', [['tool', SEARCH], ['new_tools', 'yes'], ['new_tools', 'yes']], /Also let it use tools I switch on later/],
    ];
    for (const [what, extra, sentence] of cases) {
      const { hidden } = await consentForm(p.client, p.user.mcpUrl);
      const res = await allowWith(p.client, hidden, extra);
      assert.equal(res.status, 400, `${what}: ${res.status} ${res.headers.get('location')}`);
      assert.equal(res.headers.get('location'), null, `${what}: no redirect`);
      assert.match(errorOn(res.text) ?? '', sentence, what);
      assert.ok(!res.text.includes('<script>'), `${what}: the name is escaped`);
    }
    // Another person's switched-on tool is not this person's: delete_note is on for `other` only.
    const { hidden } = await consentForm(p.client, p.user.mcpUrl);
    const res = await allowWith(p.client, hidden, [['tool', DELETE]]);
    assert.equal(res.status, 400);
    assert.deepEqual((await p.client.get('/api/connections')).body, [], 'no connection was made');
  });

  it('shows the page again after a refusal with the person\'s own ticks, and then lets the app in', async () => {
    const p = await newPerson(tp.url, 'again');
    await installFor(p, 'notes', { search_notes: true, add_note: true });
    const { hidden } = await consentForm(p.client, p.user.mcpUrl);
    const refused = await allowWith(p.client, hidden, [['tool', ADD], ['tool', DELETE]]);
    assert.equal(refused.status, 400);
    assert.match(refused.text, new RegExp(`value="${ADD}" checked`));
    assert.doesNotMatch(refused.text, new RegExp(`value="${SEARCH}" checked`), 'what the person unticked stays unticked');
    const allowed = await allowWith(p.client, hiddenFields(refused.text), [['tool', ADD]]);
    assert.equal(allowed.status, 303, allowed.text.slice(0, 300));
    assert.ok(new URL(allowed.headers.get('location')!).searchParams.get('code'));
    const [connection] = (await p.client.get('/api/connections')).body;
    assert.deepEqual([connection.tools, connection.newTools], [[ADD], false]);
  });

  it('lets an app in with no tool ticked, and says what that means; a person with no tool on is told so', async () => {
    const p = await newPerson(tp.url, 'none');
    await installFor(p, 'notes', { search_notes: true });
    const { page: shown, hidden } = await consentForm(p.client, p.user.mcpUrl);
    assert.match(shown.text, /Untick every tool and the app is let in with none/);
    const allowed = await allowWith(p.client, hidden, []);
    assert.equal(allowed.status, 303);
    assert.deepEqual((await p.client.get('/api/connections')).body[0].tools, []);

    const bare = await newPerson(tp.url, 'bare');
    const { page: empty } = await consentForm(bare.client, bare.user.mcpUrl);
    assert.match(empty.text, /You have no tools switched on yet\. With the box below ticked, this app will get the tools you switch on later/);
    assert.match(empty.text, /name="new_tools" value="yes" checked/, 'with nothing to tick, the later-tools box starts ticked');
    assert.doesNotMatch(empty.text, /name="tool"/);
  });

  it('refuses a choice on the Apps page API naming tools that are not on, twice, too many, or for another person\'s app', async () => {
    const p = await newPerson(tp.url, 'api');
    await installFor(p, 'notes', { search_notes: true, add_note: true });
    const { hidden } = await consentForm(p.client, p.user.mcpUrl);
    assert.equal((await allowWith(p.client, hidden, [['tool', SEARCH]])).status, 303);
    const [mine] = (await p.client.get('/api/connections')).body;
    const put = (body: unknown, who = p.client, id = mine.id) => who.put(`/api/connections/${id}/tools`, body);

    const off = await put({ tools: [SEARCH, DELETE, 'calendar__x'], newTools: false });
    assert.equal(off.status, 422, off.text);
    assert.equal(off.body.detail, '"notes__delete_note" and "calendar__x" are not among the tools you have switched on, so nothing was changed.');
    assert.deepEqual(off.body.errors.map((e: { path: string }) => e.path), ['/tools/1', '/tools/2']);
    const twice = await put({ tools: [SEARCH, SEARCH], newTools: false });
    assert.equal(twice.status, 422);
    assert.match(twice.body.detail, /named more than once/);
    const many = await put({ tools: Array.from({ length: 4097 }, () => SEARCH), newTools: false });
    assert.equal(many.status, 422);
    assert.match(many.body.detail + JSON.stringify(many.body.errors), /at most 4096 tools/);
    for (const body of [{ tools: [SEARCH] }, { tools: SEARCH, newTools: false }, [SEARCH]]) {
      assert.equal((await put(body)).status, 422, JSON.stringify(body));
    }
    const stranger = await newPerson(tp.url, 'stranger');
    await installFor(stranger, 'notes', { search_notes: true, add_note: true });
    const theirs = await put({ tools: [SEARCH, ADD], newTools: true }, stranger.client);
    assert.equal(theirs.status, 404, theirs.text);
    assert.equal((await put({ tools: [SEARCH], newTools: false }, p.client, 'grt_nope')).status, 404);
    const [after] = (await p.client.get('/api/connections')).body;
    assert.deepEqual([after.tools, after.newTools], [[SEARCH], false], 'nothing changed');
    // And a good one, with zero tools.
    const none = await put({ tools: [], newTools: true });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body, { tools: [], newTools: true });
  });
});
