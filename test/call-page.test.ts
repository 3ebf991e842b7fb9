// Issue #39, "a call's own page shows its whole life" (and #43's "an allowed call that then failed
// is shown as Allowed"): from the approval page and from Activity the person opens the call, which
// says it was asked, allowed where, sent, and how it really ended; nobody else can open it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { pendingOf } from './helpers/approvals';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
let app: Awaited<ReturnType<typeof connectApp>>['client'];

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  // The add-on breaks on a note whose id starts "broken": it answers 400, as a bug in it would.
  hook = await startAddonServer({ delete_note: (body) => (String(body.arguments?.id).startsWith('broken') ? { status: 400, body: { oops: true } } : { text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?', style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
  person = await personWithNotes(tp.url, hook, { delete_note: true }, 'callpage');
  app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
});
after(async () => {
  await app?.close();
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

const textOfResult = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join('\n');
const stepsOf = (page: import('playwright-core').Page) => page.locator('.call-steps li').allTextContents();

describe('a call’s own page', () => {
  for (const size of Object.keys(SIZES) as Size[]) {
    it(`tells the truth about an allowed call whose add-on then failed, from its approval (${SIZES[size].width} px)`, async () => {
      const noteId = `broken-${size}`;
      const calling = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
      const pending = await pendingOf(person.client, noteId);
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto(`/approvals/${pending.id}`);
        await page.getByRole('button', { name: 'Allow' }).click();
        await page.locator('[data-outcome="allowed"]').waitFor();
        const result = await calling;
        assert.equal(result.isError, true, 'the app was told the call failed');
        await page.getByRole('link', { name: 'What happened to the call' }).click();
        await page.waitForURL(/\/calls\/call_/);
        const life = page.locator('[data-call-page]');
        await life.waitFor();
        assert.equal(await life.getAttribute('data-state'), 'ended');
        assert.equal((await page.locator('[data-fact="outcome"]').innerText()).replace(/\s+/g, ' ').trim(), 'Failed You allowed it · the add-on failed while handling it: it may or may not have run, so check before trying again.');
        assert.deepEqual(await page.locator('.call-steps li').evaluateAll((els) => els.map((e) => e.getAttribute('data-step'))), ['attempt', 'asked', 'decided', 'attempt', 'ended']);
        const steps = await stepsOf(page);
        assert.match(steps[0]!, /Asked Notes to describe it for you: it described the call/);
        assert.match(steps[1]!, /Toolport asked you to approve it\./);
        assert.match(steps[2]!, new RegExp(`You allowed it in the dashboard\\. Receipt ${pending.id}\\.`));
        assert.match(steps[3]!, /Sent to Notes: it answered with an error status \(HTTP 400, \d+ ms\)\./);
        assert.match(steps[4]!, /Ended: Failed/);
        const { scrollWidth, clientWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
        assert.ok(scrollWidth <= clientWidth, `${scrollWidth} > ${clientWidth}`);
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `call-page-failed-${size}`);
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  }

  it('says what came of an allowed call whose add-on could not be reached: on Recent, the approval’s page and the call’s page', async () => {
    const down = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
    down.onConfirm(() => ({ confirm: { message: 'Delete this note?', style: 'destructive' } }));
    const them = await personWithNotes(tp.url, down, { delete_note: true }, 'callpage-down');
    const theirApp = (await connectApp(them.user.mcpUrl, them.client, { name: 'Cursor' })).client;
    const { page, errors, close } = await dashboardAs(browser, tp.url, them.client, 'phone');
    try {
      const calling = theirApp.callTool({ name: `${them.addonId}__delete_note`, arguments: { id: 'n-down' } });
      const pending = await pendingOf(them.client, 'n-down');
      // The add-on goes down while the person decides.
      await down.close();
      await page.goto('/approvals');
      await page.locator(`[data-approval="${pending.id}"]`).getByRole('button', { name: 'Allow' }).click();
      const result = await calling;
      assert.equal(result.isError, true);
      assert.match(textOfResult(result), /could not be reached/);
      assert.equal(down.calls().length, 0, 'nothing reached the add-on');

      const said = 'the add-on could not be reached, so it did not run';
      const row = page.locator(`[data-decided="${pending.id}"][data-ran="no"]`);
      await row.waitFor();
      assert.match(await row.locator('.recent-outcome').innerText(), new RegExp(`^Allowed\\s*· ${said}`));
      assert.equal((await row.locator('[data-args]').innerText()).trim(), 'id: "n-down"');
      // The row itself opens the call.
      await row.click();
      await page.waitForURL(/\/calls\/call_/);
      await page.locator('[data-call-page][data-state="ended"]').waitFor();
      assert.equal((await page.locator('[data-fact="outcome"]').innerText()).replace(/\s+/g, ' ').trim(), `Failed You allowed it · ${said}.`);

      await page.goto(`/approvals/${pending.id}`);
      const outcome = page.locator('[data-outcome="allowed"][data-ran="no"]');
      await outcome.waitFor();
      assert.match(await outcome.innerText(), new RegExp(`Allowed in the dashboard · ${said}\\.`));
      assert.deepEqual(await axeSerious(page), []);
      assert.deepEqual(errors, []);
    } finally {
      await close();
      await theirApp.close();
    }
  });

  it('shows a call still waiting for the person as waiting, with the way to decide it', async () => {
    const calling = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n-wait' } });
    const pending = await pendingOf(person.client, 'n-wait');
    const { callId } = (await person.client.get(`/api/approvals/${pending.id}`)).body;
    assert.match(callId, /^call_/);
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, 'phone');
    try {
      await page.goto(`/calls/${callId}`);
      const life = page.locator('[data-call-page][data-state="waiting"]');
      await life.waitFor();
      assert.equal((await page.locator('[data-fact="outcome"]').textContent())?.trim(), 'Waiting for your approval.');
      await page.getByRole('link', { name: 'Decide' }).click();
      await page.waitForURL(`**/approvals/${pending.id}`);
      await page.getByRole('button', { name: 'Allow' }).click();
      assert.equal(textOfResult(await calling), 'Deleted.');
      await page.getByRole('link', { name: 'What happened to the call' }).click();
      await page.locator('[data-call-page][data-state="ended"]').waitFor();
      assert.match((await stepsOf(page)).at(-1)!, /Ended: Answered/);
      assert.deepEqual(await axeSerious(page), []);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('opens from Activity’s row, and from Recent approvals; nobody else can open it', async () => {
    const calling = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n-fine' } });
    const pending = await pendingOf(person.client, 'n-fine');
    assert.equal((await person.client.post(`/api/approvals/${pending.id}/decision`, { decision: 'allow' })).status, 200);
    assert.equal((await calling).isError, undefined);
    const [row] = (await person.client.get('/api/calls')).body.items;
    assert.equal(row.tool, 'delete_note');
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, 'desktop');
    try {
      await page.goto('/activity');
      await page.locator(`tr[data-call="${row.id}"] a`).click();
      await page.waitForURL(`**/calls/${row.id}`);
      await page.locator('[data-call-page]').waitFor();
      assert.equal((await page.locator('h1').textContent())?.trim(), 'Delete a note');
      assert.match((await stepsOf(page)).at(-1)!, /Ended: Answered/);

      await page.goto('/approvals');
      await page.getByRole('link', { name: /What happened to Delete a note/ }).first().click();
      await page.waitForURL(`**/calls/${row.id}`);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }

    const other = await newPerson(tp.url, 'callpage-other');
    const theirs = await other.client.get(`/api/calls/${row.id}`);
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.detail, 'That call does not exist.');
    assert.equal((await person.client.get('/api/calls/not-a-call')).status, 404);
    const seen = await dashboardAs(browser, tp.url, other.client, 'desktop');
    try {
      await seen.page.goto(`/calls/${row.id}`);
      await seen.page.getByRole('heading', { name: 'Call not found' }).waitFor();
    } finally {
      await seen.close();
    }
  });
});
