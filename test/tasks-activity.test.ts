// Issue #39, "the person sees long calls": a call running as a task shows in Activity with the
// add-on's progress, and the person stops it there; the app then reads it cancelled, and the
// add-on's late answer is refused. Another person sees none of it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, type Size } from './helpers/dashboard';
import { newPerson } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { answer, modernWire } from './helpers/tasks';
import { startToolport, type Toolport } from './helpers/target';
import { until } from './helpers/wait';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ status: 202, body: {} }) });
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** A person whose app started a ten-minute search, which the add-on took and reports on. */
async function runningSearch(query: string) {
  const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'long', (m) => {
    (m.tools.find((t: any) => t.name === 'search_notes') as any).timeoutSeconds = 600;
  });
  const provider = new TestOAuthProvider('Claude');
  await connectAppV2(person.user.mcpUrl, person.client, { provider });
  const wire = modernWire(person.user.mcpUrl, provider);
  const created = await wire.call('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query } });
  assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
  const delivered = await until('the call reached the add-on', () => hook.calls().find((d) => d.body.addon === person.addonId));
  const answerUrl: string = delivered.body.call.answerUrl;
  assert.equal((await answer(answerUrl, hook.secret(), { progress: 'Searched 3 of 5 notebooks.' })).status, 204);
  return { person, wire, taskId: created.result.taskId as string, answerUrl };
}

describe('a running call in Activity', () => {
  for (const size of ['desktop', 'phone'] as Size[]) {
    it(`shows its progress and stops it with Cancel (${size})`, async () => {
      const { person, wire, taskId, answerUrl } = await runningSearch(`milk ${size}`);
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/activity');
        const running = page.getByRole('region', { name: 'Running now' });
        await running.waitFor();
        const item = running.locator(`li[data-task="${taskId}"]`);
        await item.getByText('Searched 3 of 5 notebooks.').waitFor();
        await item.getByText('Search notes').first().waitFor();
        await item.getByText('for Claude').waitFor();
        assert.deepEqual(await axeSerious(page), [], 'no serious accessibility problem');
        await screenshots(page, `tasks-activity-${size}`);

        // The add-on says more: the page shows it without a reload.
        assert.equal((await answer(answerUrl, hook.secret(), { progress: 'Searched 4 of 5 notebooks.' })).status, 204);
        await item.getByText('Searched 4 of 5 notebooks.').waitFor();

        // Its own page: running, what it is doing now, and its progress so far.
        await item.getByRole('link', { name: 'Details of Search notes for Claude' }).click();
        await page.locator('[data-call-page][data-state="running"]').waitFor();
        assert.deepEqual(await page.locator('.call-steps li').evaluateAll((els) => els.map((e) => e.getAttribute('data-step'))), ['task', 'attempt', 'progress', 'progress']);
        assert.match((await page.locator('.call-life').textContent()) ?? '', /Searched 4 of 5 notebooks\./);
        assert.deepEqual(await axeSerious(page), [], 'no serious accessibility problem on the call’s page');
        // The page follows the call: more progress shows without a reload.
        assert.equal((await answer(answerUrl, hook.secret(), { progress: 'Searched 5 of 5 notebooks.' })).status, 204);
        await page.locator('.call-life').getByText('Searched 5 of 5 notebooks.').first().waitFor();
        await page.goBack();
        await running.waitFor();

        await item.getByRole('button', { name: /^Cancel Search notes for Claude$/ }).click();
        await item.waitFor({ state: 'detached' });
        const got = (await wire.call('tasks/get', { taskId })).result;
        assert.equal(got.status, 'cancelled');
        assert.match(got.statusMessage, /Cancelled by the person/);
        const late = await answer(answerUrl, hook.secret(), { text: 'Found 2 notes.' });
        assert.equal(late.status, 410);
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  }

  it('shows a call that is not a task while its add-on works on it, and then in the log', async () => {
    // An ordinary call (its tool's time is within one request) whose add-on takes its time.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = await startAddonServer({
      search_notes: async () => {
        await held;
        return { text: 'Found 2 notes.' };
      },
    });
    const person = await personWithNotes(tp.url, slow, { search_notes: true }, 'slow');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, 'desktop');
    try {
      const calling = app.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: 'milk' } });
      const delivered = await until('the call reached the add-on', () => slow.calls().find((d) => d.body.tool === 'search_notes'));
      const callId: string = delivered.body.call.id;
      await page.goto('/activity');
      const item = page.getByRole('region', { name: 'Running now' }).locator(`li[data-call="${callId}"]`);
      await item.waitFor({ timeout: 15_000 });
      await item.getByText('At the add-on.').waitFor();
      await item.getByText('for Claude').waitFor();
      assert.equal(await item.getByRole('button', { name: /^Cancel/ }).count(), 0, 'only a task can be stopped from here');
      await item.getByRole('link', { name: 'Details of Search notes for Claude' }).click();
      await page.locator('[data-call-page][data-state="running"]').waitFor();

      release();
      const result = await calling;
      assert.deepEqual(result.content, [{ type: 'text', text: 'Found 2 notes.' }]);
      // The open page follows the call to its end, without a reload.
      await page.locator('[data-call-page][data-state="ended"]').waitFor();
      await page.goto('/activity');
      await page.locator(`tr[data-call="${callId}"]`).waitFor();
      assert.equal(await page.getByRole('region', { name: 'Running now' }).count(), 0, 'nothing runs any more');
      const log = (await person.client.get('/api/calls')).body.items;
      assert.deepEqual(log.map((c: { id: string; outcome: string }) => [c.id, c.outcome]), [[callId, 'ok']], 'one row, now ended');
      assert.deepEqual(errors, []);
    } finally {
      release();
      await close();
      await app.close();
      await slow.close();
    }
  });

  it('shows and cancels only the person’s own running calls', async () => {
    const { taskId, wire } = await runningSearch('someone else’s');
    const other = await newPerson(tp.url, 'other');
    assert.deepEqual((await other.client.get('/api/calls/running')).body, []);
    const res = await other.client.post(`/api/calls/running/${taskId}/cancel`);
    assert.equal(res.status, 404);
    assert.equal((await wire.call('tasks/get', { taskId })).result.status, 'working', 'still running');
  });
});
