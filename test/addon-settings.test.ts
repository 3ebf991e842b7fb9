// Issue #26, settings: an add-on declares per-install settings (manifest `settings`); the person fills
// them in when installing, in the dashboard's install dialog, and edits them on the add-on's page;
// the values are sealed at rest and travel in each signed delivery (`settings`). A secret is never
// shown again after saving; a call whose required setting is missing answers with a sentence saying
// where to set it, and nothing is delivered.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { and, eq } from 'drizzle-orm';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { installs, calls as callLog } from '../packages/core/src/db/schema/index';
import { messagesAt } from './helpers/manifest';
import { captureLog } from './helpers/log';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs } from './helpers/dashboard';
import { Client, listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';
import { signatureHeaders } from '../packages/core/src/outbound/signing';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
const { log, logged } = captureLog();
const tag = `${process.pid % 1000}-${randomBytes(2).toString('hex')}`;

/** The Notes manifest with a setting of each kind. */
const SETTINGS = [
  { name: 'api_key', title: 'API key', summary: 'From your Notes account page.', kind: 'secret', required: true },
  { name: 'signature', title: 'Signature', summary: 'Added under each note.', kind: 'text', default: '— sent from Toolport' },
  { name: 'max_notes', title: 'Most notes per search', kind: 'number', default: 20 },
  { name: 'markdown', title: 'Write Markdown', kind: 'boolean', default: true },
  { name: 'notebook', title: 'Notebook', kind: 'choice', choices: ['Personal', 'Work'], required: true, default: 'Personal' },
];

let dev: Awaited<ReturnType<typeof newPerson>>;

async function register(id: string, settings: unknown = SETTINGS) {
  const res = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public', settings }));
  assert.equal(res.status, 201, res.text);
  hook.setSecret(res.body.signingSecret);
  await listPublicly(tp.url, id, dev);
}

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport({ log });
  hook = await startAddonServer({ add_note: (body) => ({ text: `saved in ${body.settings?.notebook ?? 'nothing'}` }) });
  ({ browser, close: closeBrowser } = await launchBrowser());
  dev = await newPerson(tp.url, 'set-dev');
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

const sealedRow = async (userId: string, addonId: string) =>
  (await tp.svc.db.select().from(installs).where(and(eq(installs.userId, userId), eq(installs.addonId, addonId))))[0];

describe('manifest settings', () => {
  it('are checked like arguments, every problem with a sentence at its path', async () => {
    const bad = [
      { name: 'API key', title: 'x', kind: 'text' },
      { name: 'token', title: 'Token', kind: 'password' },
      { name: 'pick', title: 'Pick', kind: 'choice' },
      { name: 'secret_d', title: 'Secret', kind: 'secret', default: 'hunter2' },
      { name: 'n', title: 'N', kind: 'number', default: 'ten' },
      { name: 'c', title: 'C', kind: 'text', choices: ['a'] },
      { name: 'hidden', title: `Hid\u200bden`, kind: 'text' },
      { name: 'long', title: 'x'.repeat(61), summary: 'y'.repeat(201), kind: 'text' },
      { name: 'many', title: 'Many', kind: 'choice', choices: Array.from({ length: 21 }, (_, i) => `c${i}`) },
      { name: 'n', title: 'Again', kind: 'boolean' },
    ];
    const res = await dev.client.post('/api/addons', notesManifest(`set-bad-${tag}`, hook.url, { settings: bad }));
    assert.equal(res.status, 422, res.text);
    const at = (path: string) => messagesAt(res.body.errors, path);
    assert.match(at('/settings/0/name'), /setting name "API key" is not valid: a lowercase letter/);
    assert.match(at('/settings/1/kind'), /did you mean "secret"\?/);
    assert.match(at('/settings/2/choices'), /needs `choices`/);
    assert.match(at('/settings/3/default'), /secret setting cannot have a `default`/);
    assert.doesNotMatch(JSON.stringify(res.body), /hunter2/, 'the refusal does not echo the secret default');
    assert.match(at('/settings/4/default'), /must be a number/);
    assert.match(at('/settings/5/choices'), /Only a setting of kind "choice" takes `choices`/);
    assert.match(at('/settings/6/title'), /U\+200B \(a zero-width space\)/);
    assert.match(at('/settings/7/title'), /at most 60 characters/);
    assert.match(at('/settings/7/summary'), /at most 200 characters/);
    assert.match(at('/settings/8/choices'), /1 to 20 distinct/);
    assert.match(at('/settings/9/name'), /already used by \/settings\/4/);
    const tooMany = await dev.client.post('/api/addons', notesManifest(`set-many-${tag}`, hook.url, {
      settings: Array.from({ length: 21 }, (_, i) => ({ name: `s${i}`, title: `S${i}`, kind: 'text' })),
    }));
    assert.equal(tooMany.status, 422);
    assert.match(JSON.stringify(tooMany.body.errors), /at most 20 settings \(got 21\)/);
  });
});

describe('settings through the API and in deliveries', () => {
  const addonId = `set-notes-${tag}`;
  let person: Awaited<ReturnType<typeof newPerson>>;
  const secret = `sk_live_${randomBytes(12).toString('hex')}`;
  const signature = `sig-${randomBytes(6).toString('hex')}`;

  before(async () => {
    await register(addonId);
    person = await newPerson(tp.url, 'set-api');
    assert.equal((await person.client.patch('/api/settings', { aiApps: true })).status, 200);
  });

  it('refuses bad values at install, naming the setting and never echoing the value; nothing is installed', async () => {
    const res = await person.client.post('/api/installs', { addon: addonId, settings: { api_key: 42, max_notes: 'many', notebook: 'Garden', nope: 1 } });
    assert.equal(res.status, 422, res.text);
    const text = JSON.stringify(res.body);
    assert.match(text, /The setting \\"API key\\" must be a string/);
    assert.match(text, /The setting \\"Most notes per search\\" must be a number/);
    assert.match(text, /The setting \\"Notebook\\" must be one of \\"Personal\\", \\"Work\\"/);
    assert.match(text, /has no setting \\"nope\\"/);
    assert.doesNotMatch(text, /Garden/);
    assert.equal((await person.client.get(`/api/installs/${addonId}/settings`)).status, 404);
  });

  it('installs with settings, keeps the secret write-only, seals every value at rest', async () => {
    const res = await person.client.post('/api/installs', { addon: addonId, settings: { api_key: secret, signature, notebook: 'Work' } });
    assert.equal(res.status, 201, res.text);
    const got = await person.client.get(`/api/installs/${addonId}/settings`);
    assert.equal(got.status, 200, got.text);
    const by = Object.fromEntries(got.body.settings.map((s: { name: string }) => [s.name, s]));
    assert.deepEqual({ set: by.api_key.set, kind: by.api_key.kind, required: by.api_key.required, hasValue: 'value' in by.api_key }, { set: true, kind: 'secret', required: true, hasValue: false });
    assert.equal(by.signature.value, signature);
    assert.equal(by.max_notes.value, 20, 'the default is filled in when installing');
    assert.equal(by.markdown.value, true);
    assert.equal(by.notebook.value, 'Work');
    assert.deepEqual(got.body.missing, []);
    assert.ok(!got.text.includes(secret), 'the secret is never returned');
    assert.ok(!JSON.stringify((await person.client.get('/api/installs')).body).includes(secret));

    const row = await sealedRow(person.user.id, addonId);
    assert.ok(row?.settingsEnc, 'the values are stored');
    const raw = JSON.stringify(row);
    for (const plain of [secret, signature, 'Work', 'sk_live']) assert.ok(!raw.includes(plain), `no plaintext ${plain} in the row`);
    assert.ok(!raw.includes(Buffer.from(secret).toString('base64').slice(0, 16)), 'not merely encoded');
  });

  it('sends the values in every signed tool.call body, and the next call gets an edit', async () => {
    assert.equal((await person.client.patch(`/api/installs/${addonId}`, { tools: { add_note: true, delete_note: true } })).status, 200);
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Settings app' });
    try {
      const first = await client.callTool({ name: `${addonId}__add_note`, arguments: { text: 'hello' } });
      assert.equal(first.isError, undefined, JSON.stringify(first));
      assert.deepEqual(first.content, [{ type: 'text', text: 'saved in Work' }]);
      const sent = hook.calls().at(-1)!;
      assert.deepEqual(sent.body.settings, { api_key: secret, signature, max_notes: 20, markdown: true, notebook: 'Work' });

      const put = await person.client.put(`/api/installs/${addonId}/settings`, { values: { notebook: 'Personal', signature: null } });
      assert.equal(put.status, 200, put.text);
      assert.ok(!put.text.includes(secret));
      const second = await client.callTool({ name: `${addonId}__add_note`, arguments: { text: 'again' } });
      assert.deepEqual(second.content, [{ type: 'text', text: 'saved in Personal' }]);
      assert.deepEqual(hook.calls().at(-1)!.body.settings, { api_key: secret, max_notes: 20, markdown: true, notebook: 'Personal' }, 'an omitted secret keeps its value; null clears');

      // A tool.confirm carries them too (the add-on describes the call with them).
      await client.callTool({ name: `${addonId}__delete_note`, arguments: { id: 'n1' } });
      const confirm = hook.received.filter((d) => d.body.type === 'tool.confirm').at(-1);
      assert.ok(confirm, 'the add-on was asked to describe the call');
      assert.deepEqual(confirm.body.settings, { api_key: secret, max_notes: 20, markdown: true, notebook: 'Personal' });

      // Never in the call log, the logs or the Redis job (the job carries the sealed blob only).
      await tp.svc.logs.flushed();
      const rows = await tp.svc.db.select().from(callLog).where(eq(callLog.userId, person.user.id));
      assert.ok(rows.length >= 2);
      assert.ok(!JSON.stringify(rows).includes(secret));
      assert.ok(!logged.some((l) => l.includes(secret) || l.includes(signature)), 'no value in any log line');
    } finally {
      await client.close();
    }
  });

  it('refuses bad updates with a sentence naming the setting, and keeps what was saved', async () => {
    const put = (values: unknown) => person.client.put(`/api/installs/${addonId}/settings`, { values });
    const wrong = await put({ markdown: 'yes' });
    assert.equal(wrong.status, 422);
    assert.match(wrong.body.detail ?? wrong.body.title ?? wrong.text, /The setting "Write Markdown" must be true or false\./);
    const big = await put({ api_key: 'k'.repeat(1_000_000) });
    assert.ok(big.status === 413 || big.status === 422, big.text.slice(0, 200));
    assert.ok(big.text.length < 2_000, 'the refusal does not echo the megabyte');
    const long = await put({ api_key: `x${'k'.repeat(5_000)}` });
    assert.equal(long.status, 422);
    assert.match(long.text, /The setting \\?"API key\\?" is too long: at most 4,096 characters/);
    assert.ok(!long.text.includes('kkkkkkkk'));
    const text = await put({ signature: 'y'.repeat(2_001) });
    assert.equal(text.status, 422);
    assert.match(text.text, /at most 2,000 characters/);
    const inf = await person.client.request('PUT', `/api/installs/${addonId}/settings`, '{"values": {"max_notes": 1e400}}');
    assert.equal(inf.status, 422, 'JSON has no infinity: 1e400 reads as Infinity, and is refused');
    const unknown = await put({ colour: 'red' });
    assert.equal(unknown.status, 422);
    assert.match(unknown.text, /has no setting \\?"colour\\?"/);
    const clearRequired = await put({ api_key: null });
    assert.equal(clearRequired.status, 422);
    assert.match(clearRequired.text, /"API key\\?" is required: it can be replaced, not cleared/);
    const shape = await person.client.put(`/api/installs/${addonId}/settings`, { notebook: 'Work' });
    assert.equal(shape.status, 422);
    assert.match(shape.text, /\{\\?"values\\?"/);
    const kept = await person.client.get(`/api/installs/${addonId}/settings`);
    const by = Object.fromEntries(kept.body.settings.map((s: { name: string }) => [s.name, s]));
    assert.equal(by.api_key.set, true);
    assert.equal(by.markdown.value, true);
    assert.equal(by.notebook.value, 'Personal');
  });

  it('another person\'s install does not exist', async () => {
    const other = await newPerson(tp.url, 'set-other');
    assert.equal((await other.client.get(`/api/installs/${addonId}/settings`)).status, 404);
    const put = await other.client.put(`/api/installs/${addonId}/settings`, { values: { notebook: 'Work' } });
    assert.equal(put.status, 404);
    const bare = await other.client.put(`/api/installs/${addonId}/settings`, { notebook: 'Work' });
    assert.equal(bare.status, 404, 'a malformed request does not tell whether the install exists');
    const anon = new Client(tp.url);
    assert.equal((await anon.get(`/api/installs/${addonId}/settings`)).status, 401);
  });

  it('a missing required setting answers with where to set it, and nothing is delivered', async () => {
    const id = `set-miss-${tag}`;
    await register(id, [{ name: 'notebook', title: 'Notebook', kind: 'text' }]);
    const p = await newPerson(tp.url, 'set-miss');
    assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
    assert.equal((await p.client.post('/api/installs', { addon: id })).status, 201);
    assert.equal((await p.client.patch(`/api/installs/${id}`, { tools: { add_note: true, delete_note: true } })).status, 200);
    // A new release adds a required secret: the install shows it missing, with no silent default.
    const pushed = await dev.client.put(`/api/addons/${id}`, notesManifest(id, hook.url, { visibility: 'public', settings: [
      { name: 'notebook', title: 'Notebook', kind: 'text' },
      { name: 'api_key', title: 'API key', kind: 'secret', required: true },
    ] }));
    assert.ok(pushed.status < 300, pushed.text);
    const view = await p.client.get(`/api/installs/${id}/settings`);
    assert.deepEqual(view.body.missing, ['api_key']);
    const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Missing app' });
    try {
      const before = hook.received.length;
      for (const tool of ['add_note', 'delete_note']) {
        const res = await client.callTool({ name: `${id}__${tool}`, arguments: tool === 'add_note' ? { text: 'x' } : { id: 'n1' } });
        assert.equal(res.isError, true);
        assert.deepEqual(res.content, [{ type: 'text', text: `The add-on "Notes" needs a setting before it can run: "API key". Set it in Toolport: ${tp.url}/addons/${id}` }]);
      }
      assert.equal(hook.received.length, before, 'nothing was delivered (not even a tool.confirm)');
      await tp.svc.logs.flushed();
      const rows = await tp.svc.db.select().from(callLog).where(eq(callLog.userId, p.user.id));
      assert.deepEqual(rows.map((r) => r.outcome), ['needs_setup', 'needs_setup']);
      assert.equal((await p.client.put(`/api/installs/${id}/settings`, { values: { api_key: 'now-set' } })).status, 200);
      const ok = await client.callTool({ name: `${id}__add_note`, arguments: { text: 'x' } });
      assert.equal(ok.isError, undefined, JSON.stringify(ok));
      assert.deepEqual(hook.calls().at(-1)!.body.settings, { api_key: 'now-set' });
    } finally {
      await client.close();
    }
  });
});

describe('settings in the dashboard', () => {
  it('are filled in in the install dialog, edited on the add-on\'s page, and a saved secret is never in the page', async () => {
    const id = `set-ui-${tag}`;
    await register(id);
    const p = await newPerson(tp.url, 'set-ui');
    assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
    const secret = `ui_secret_${randomBytes(10).toString('hex')}`;
    const tab = await dashboardAs(browser, tp.url, p.client, 'desktop');
    try {
      const { page } = tab;
      await page.goto(`/addons/${id}`);
      await page.getByRole('button', { name: 'Install' }).click();
      const dialog = page.getByRole('dialog', { name: /Install Notes/ });
      await dialog.waitFor();
      assert.deepEqual(await axeSerious(page), [], 'the install dialog is axe-clean');
      await screenshots(page, 'addon-settings-install');
      const key = dialog.getByLabel('API key');
      assert.equal(await key.getAttribute('type'), 'password');
      await key.fill(secret);
      assert.equal(await dialog.getByLabel('Signature').inputValue(), '— sent from Toolport', 'defaults are filled in');
      await dialog.getByLabel('Signature').fill('Cheers, UI');
      await dialog.getByLabel('Most notes per search').fill('7');
      await dialog.getByLabel('Write Markdown').uncheck();
      await dialog.getByLabel('Notebook').selectOption('Work');
      await dialog.getByRole('button', { name: 'Install' }).click();
      await page.getByText('Notes is installed').waitFor();
      assert.equal((await sealedRow(p.user.id, id))?.settingsEnc?.includes(secret), false);

      // The add-on's page: the saved secret is only said to be saved, then replaced.
      const form = page.getByRole('form', { name: 'Settings of Notes' });
      await form.waitFor();
      await form.getByText('Saved').first().waitFor();
      assert.ok(!(await page.content()).includes(secret), 'the secret is not in the page');
      assert.equal(await form.getByLabel('Notebook').inputValue(), 'Work');
      assert.deepEqual(await axeSerious(page), []);
      await page.emulateMedia({ colorScheme: 'dark' });
      assert.deepEqual(await axeSerious(page), [], 'and in dark mode');
      await screenshots(page, 'addon-settings-page-dark');
      await page.emulateMedia({ colorScheme: 'light' });
      await form.getByRole('button', { name: 'Replace API key' }).click();
      await form.getByLabel('API key').fill(`${secret}-2`);
      await form.getByLabel('Notebook').selectOption('Personal');
      await form.getByRole('button', { name: 'Save settings' }).click();
      await page.getByText('Settings saved').waitFor();
      assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Save settings', 'focus stays on Save, not <body>');
      assert.ok(!(await page.content()).includes(secret));

      // The values reach the add-on in the next call.
      assert.equal((await p.client.patch(`/api/installs/${id}`, { tools: { add_note: true } })).status, 200);
      const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'UI app' });
      try {
        const res = await client.callTool({ name: `${id}__add_note`, arguments: { text: 'from the UI' } });
        assert.deepEqual(res.content, [{ type: 'text', text: 'saved in Personal' }]);
        assert.deepEqual(hook.calls().at(-1)!.body.settings, { api_key: `${secret}-2`, signature: 'Cheers, UI', max_notes: 7, markdown: false, notebook: 'Personal' });
      } finally {
        await client.close();
      }
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
  });
});

describe('settings from the Add-ons page', () => {
  it('the catalog card’s Install asks for the settings first, and the installed card leads to the add-on’s page', async () => {
    const id = `set-card-${tag}`;
    await register(id);
    const p = await newPerson(tp.url, 'set-card');
    assert.equal((await p.client.patch('/api/settings', { aiApps: true })).status, 200);
    const tab = await dashboardAs(browser, tp.url, p.client, 'phone');
    try {
      const { page } = tab;
      await page.goto('/addons');
      await page.getByRole('searchbox').fill(id);
      const card = page.locator(`.catalog-item[data-addon="${id}"]`);
      await card.getByRole('button', { name: 'Install Notes' }).click();
      const dialog = page.getByRole('dialog', { name: /Install Notes/ });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Install Notes', 'focus is back on Install');
      assert.ok(!((await p.client.get('/api/installs')).body as any[]).some((i) => i.addon.id === id), 'Cancel installed nothing');

      await card.getByRole('button', { name: 'Install Notes' }).click();
      await dialog.getByLabel('API key').fill('card-secret-value');
      await dialog.getByRole('button', { name: 'Install' }).click();
      const installed = page.locator(`article.addon[data-addon="${id}"]`);
      await installed.waitFor();
      assert.deepEqual((await p.client.get(`/api/installs/${id}/settings`)).body.missing, [], 'the required setting was asked for at install');

      await installed.getByRole('link', { name: /^Details of Notes/ }).click();
      await page.waitForURL(new RegExp(`/addons/${id}$`));
      await page.getByRole('form', { name: 'Settings of Notes' }).waitFor();
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
  });
});

describe('the kits: ctx.settings', () => {
  const whsec = `whsec_${randomBytes(32).toString('base64')}`;
  const deliver = async (handler: (r: Request) => Promise<Response>, tool: string, args: Record<string, unknown>, sent?: unknown, userId = 'usr_k') => {
    const callId = `call_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'tool.call', addon: 'kit', tool, arguments: args,
      call: { id: callId, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
      user: { id: userId }, app: { name: 'Test', clientId: 'c' },
      ...(sent !== undefined ? { settings: sent } : {}),
    });
    const headers = signatureHeaders({ id: callId, timestamp: Date.now() / 1000, body, secrets: [whsec] });
    const res = await handler(new Request('http://kit.test/webhook', { method: 'POST', headers, body }));
    assert.equal(res.status, 200);
    return (await res.json()) as any;
  };

  it('TypeScript: typed from the declaration, defaults filled in, the manifest declares them', async () => {
    // Imported here: before the kit knew settings, the rest of this file still ran (and failed on its own).
    const { defineAddon, setting, settings, text, tool } = await import('@toolport/addon-kit');
    const seen: unknown[] = [];
    const kit = settings({
      api_key: setting.secret({ title: 'API key', required: true }),
      signature: setting.text({ title: 'Signature', default: '-- Toolport' }),
      limit: setting.number({ title: 'Limit' }),
      tone: setting.choice({ title: 'Tone', choices: ['calm', 'warm'], default: 'calm' }),
    });
    const addon = defineAddon({
      id: 'kit-settings', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', settings: kit,
      tools: {
        echo: kit.tool({
          title: 'Echo', summary: 'Echoes.', arguments: { text: text({ maxLength: 20, summary: 'What.' }) },
          run: ({ text: t }, ctx) => {
            // Typed: a required secret and a defaulted text are strings; an optional number may be absent.
            const key: string = ctx.settings.api_key;
            const sig: string = ctx.settings.signature;
            const limit: number | undefined = ctx.settings.limit;
            const tone: 'calm' | 'warm' = ctx.settings.tone;
            // @ts-expect-error an undeclared setting does not exist
            void ctx.settings.colour;
            seen.push({ ...ctx.settings });
            return `${t} ${sig} ${key.length} ${limit ?? '-'} ${tone}`;
          },
        }),
        plain: tool({ title: 'Plain', summary: 'Reads settings untyped.', run: (_a, ctx) => String(ctx.settings.signature) }),
      },
    });
    assert.deepEqual(addon.manifest().settings, [
      { name: 'api_key', title: 'API key', kind: 'secret', required: true },
      { name: 'signature', title: 'Signature', kind: 'text', default: '-- Toolport' },
      { name: 'limit', title: 'Limit', kind: 'number' },
      { name: 'tone', title: 'Tone', kind: 'choice', choices: ['calm', 'warm'], default: 'calm' },
    ]);
    const handler = addon.handler({ secrets: [whsec] });
    assert.deepEqual(await deliver(handler, 'echo', { text: 'hi' }, { api_key: 'sk_1', limit: 3, tone: 'loud', extra: 1 }), { text: 'hi -- Toolport 4 3 calm' });
    assert.deepEqual(seen.at(-1), { api_key: 'sk_1', signature: '-- Toolport', limit: 3, tone: 'calm' }, 'a wrong kind falls back to the default; undeclared ones are left out');
    assert.deepEqual(await deliver(handler, 'plain', {}, { signature: 'mine' }), { text: 'mine' });
    // Toolport's own manifest check accepts what the kit writes.
    const { checkManifest } = await import('../packages/core/src/addons/manifest');
    assert.deepEqual(checkManifest(addon.manifest()).manifest.settings?.map((s) => s.name), ['api_key', 'signature', 'limit', 'tone']);
  });

  it('Python: the kit\'s own unittest of settings passes', () => {
    const dir = path.join(import.meta.dirname, '../packages/addon-kit-python/tests');
    const run = spawnSync('python3', ['-m', 'unittest', 'test_settings'], { cwd: dir, encoding: 'utf8' });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /Ran [1-9]\d* tests?[\s\S]*OK/);
  });

  it('the Notes example signs each note with the person\'s signature setting', async () => {
    const { createNotesAddon } = await import('@toolport/example-notes');
    const notes = createNotesAddon();
    assert.deepEqual(notes.manifest().settings?.map((s) => [s.name, s.kind]), [['signature', 'text']]);
    const handler = notes.handler({ secrets: [whsec] });
    await deliver(handler, 'add_note', { text: 'Groceries\nOat milk' }, { signature: '— Ana' });
    await deliver(handler, 'add_note', { text: 'Unsigned\nNo signature set' }, {});
    const found = await deliver(handler, 'search_notes', {}, {});
    const previews = found.json.notes.map((n: { title: string; preview: string }) => [n.title, n.preview]);
    assert.ok(previews.some(([title, preview]: string[]) => title === 'Groceries' && preview!.includes('— Ana')), JSON.stringify(previews));
    assert.ok(previews.some(([title, preview]: string[]) => title === 'Unsigned' && !preview!.includes('—')), JSON.stringify(previews));
  });
});
