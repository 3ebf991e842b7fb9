// Issue #39, "a task is the durable call" and "in-app approval on 2026-07-28": a destructive call of a
// long tool is a task from the start. The app holds its task while the person decides; on 2026-07-28
// the task is `input_required` with the approval's page, the app's own answer approves nothing, and
// the person decides on the page in Chromium. A deny ends the task without anything sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApplicationInputHandler, createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import { dashboardAs } from './helpers/dashboard';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { answer, modernWire, TASKS } from './helpers/tasks';
import { restartToolport, startToolport, type Toolport } from './helpers/target';
import { until } from './helpers/wait';

const MODERN = '2026-07-28';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport({ keepBacking: true });
  hook = await startAddonServer({ delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
  await tp?.backing.drop();
});

const restart = async () => {
  tp = await restartToolport(tp);
};

const textOf = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join('\n');

/** A person whose Notes add-on's destructive delete may take ten minutes (or `seconds`): it runs only as a task. */
const personWithLongDelete = (prefix: string, seconds = 600) =>
  personWithNotes(tp.url, hook, { delete_note: true }, prefix, (m) => {
    (m.tools.find((t: any) => t.name === 'delete_note') as any).timeoutSeconds = seconds;
  });

/** The person decides on the approval's own page, in Chromium. */
async function decideOnPage(person: Awaited<ReturnType<typeof personWithLongDelete>>, url: string, decision: 'Allow' | 'Deny', reason?: string) {
  const tab = await dashboardAs(browser, tp.url, person.client, 'desktop');
  try {
    await tab.page.goto(url);
    if (reason) await tab.page.getByLabel('Reason, if you deny').fill(reason);
    await tab.page.getByRole('button', { name: decision }).click();
    await tab.page.locator(`[data-outcome="${decision === 'Allow' ? 'allowed' : 'denied'}"]`).waitFor();
    assert.deepEqual(tab.errors, []);
  } finally {
    await tab.close();
  }
}

describe('a destructive long call is a task while the person decides', () => {
  it('on 2026-07-28 (client v2, the tasks requester): the task is input_required with the page; the app’s accept approves nothing; the person allows; the task completes', async () => {
    const person = await personWithLongDelete('taskapprove');
    const provider = new TestOAuthProvider('Claude');
    const { client } = await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const declared = { extensions: { [TASKS]: {} }, elicitation: { url: {} } };
    const wire = modernWire(person.user.mcpUrl, provider, declared);
    const asked: Array<Record<string, unknown>> = [];
    const session = createTaskSessionFromClient(client, {
      endpointId: 'toolport-test',
      rawDispatch: wire.dispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'Claude', version: '1.0.0' }, clientCapabilities: declared },
      onInputRequest: createApplicationInputHandler({
        elicitation: async (request) => {
          asked.push(request.params);
          return { action: 'accept' };
        },
        sampling: async () => {
          throw new Error('Toolport never asks for sampling');
        },
        roots: async () => {
          throw new Error('Toolport never asks for roots');
        },
      }),
    });
    const noteId = `t-${Date.now()}`;
    const sent = () => hook.calls().filter((d) => d.body.arguments?.id === noteId);
    const execution = await session.callTool(`${person.addonId}__delete_note`, { id: noteId });
    assert.equal(execution.kind, 'task', 'the app has its task before the person decided');
    const taskId = execution.handle!.taskId;

    const waiting = await until('the task asks for the approval', async () => {
      const got = await wire.call('tasks/get', { taskId });
      return got.result?.status === 'input_required' ? got.result : undefined;
    });
    const request = waiting.inputRequests.approval;
    assert.equal(request.method, 'elicitation/create');
    assert.equal(request.params.mode, 'url');
    assert.match(request.params.url, new RegExp(`^${tp.url}/approvals/apr_`));
    assert.match(request.params.message, /approve "delete_note" from Notes/);
    const settled = execution.settle();
    // The requester shows the page to its person and answers "accept": that approves nothing.
    const shown = await until('the app was asked to show the page', () => asked[0]);
    assert.equal(shown.url, request.params.url);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await wire.call('tasks/get', { taskId })).result.status, 'input_required', 'still waiting after the app’s accept');
    assert.equal(sent().length, 0, 'nothing was sent on the app’s accept');
    // The add-on cannot answer a call it was never sent, though it knows its id from the confirm step.
    const confirm = hook.received.find((d) => d.body.type === 'tool.confirm' && d.body.arguments?.id === noteId)!;
    const callId = String(confirm.headers['webhook-id']).replace(/_confirm$/, '');
    const early = await answer(`${tp.url}/api/answers/${encodeURIComponent(callId)}`, hook.secret(), { text: 'Faked.' });
    assert.equal(early.status, 409, JSON.stringify(early));
    assert.match(early.body.detail, /waiting for the person’s approval/);

    await decideOnPage(person, request.params.url, 'Allow');
    const { outcome } = await settled;
    const result: any = resultFromTaskOutcome(outcome);
    assert.equal(textOf(result), `Deleted ${noteId}.`);
    assert.equal(sent().length, 1, 'sent once, after the person allowed');
    assert.match(String(sent()[0]!.body.approval?.id), /^apr_/, 'with the person’s receipt');
    await session.close();
    await client.close();
  });

  it('on 2026-07-28: the task waiting for the person survives a restart of the API process (a deploy); the person allows on the new one; it completes', async () => {
    const person = await personWithLongDelete('taskdeploy');
    const provider = new TestOAuthProvider('Claude');
    await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const wire = modernWire(person.user.mcpUrl, provider, { extensions: { [TASKS]: {} }, elicitation: { url: {} } });
    const noteId = `r-${Date.now()}`;
    const created = await wire.call('tools/call', { name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result.taskId;
    const waiting = await until('input_required', async () => {
      const got = await wire.call('tasks/get', { taskId });
      return got.result?.status === 'input_required' ? got.result : undefined;
    });
    await restart();
    const after = await wire.call('tasks/get', { taskId });
    assert.equal(after.result?.status, 'input_required', `the deploy did not cancel it: ${JSON.stringify(after)}`);
    await decideOnPage(person, waiting.inputRequests.approval.params.url, 'Allow');
    const done = await until(
      'the task completed',
      async () => {
        const got = await wire.call('tasks/get', { taskId });
        return got.result?.status === 'completed' ? got.result : undefined;
      },
      20_000,
    );
    assert.equal(textOf(done.result), `Deleted ${noteId}.`);
    assert.equal(hook.calls().filter((d) => d.body.arguments?.id === noteId).length, 1, 'sent once');
  });

  it('on 2026-07-28: the app’s decline by tasks/update ends the task at once; nothing is sent', async () => {
    const person = await personWithLongDelete('taskdecline', 60);
    const provider = new TestOAuthProvider('Claude');
    await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const wire = modernWire(person.user.mcpUrl, provider, { extensions: { [TASKS]: {} }, elicitation: { url: {} } });
    const noteId = `d-${Date.now()}`;
    const created = await wire.call('tools/call', { name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result.taskId;
    await until('input_required', async () => (await wire.call('tasks/get', { taskId })).result?.status === 'input_required');
    // The add-on's minute has not begun while the person decides: read past it, the task still waits.
    const clock = tp.svc.clock;
    const later = new Date(Date.now() + 120_000);
    tp.svc.clock = { now: () => later };
    try {
      assert.equal((await wire.call('tasks/get', { taskId })).result?.status, 'input_required', 'not lapsed by the add-on’s time');
    } finally {
      tp.svc.clock = clock;
    }
    const bad = await wire.call('tasks/update', { taskId, inputResponses: { approval: { action: 'allow' } } });
    assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
    const other = await wire.call('tasks/update', { taskId: 'task_nope', inputResponses: { approval: { action: 'decline' } } });
    assert.match(other.error?.message ?? '', /Task not found/);
    const declined = await wire.call('tasks/update', { taskId, inputResponses: { approval: { action: 'decline' } } });
    assert.equal(declined.result?.resultType, 'complete', JSON.stringify(declined));
    const ended = await until('the task ended', async () => {
      const got = await wire.call('tasks/get', { taskId });
      return got.result?.status === 'completed' ? got.result : undefined;
    });
    assert.equal(ended.result.isError, true);
    assert.match(textOf(ended.result), /declined or cancelled in the app before the person decided, so the call did not run/);
    assert.equal(hook.calls().filter((d) => d.body.arguments?.id === noteId).length, 0);
  });

  it('on 2025-11-25 (client v1): the task comes at once, naming the page; the person denies with a reason; tasks/result says so; nothing is sent', async () => {
    const person = await personWithLongDelete('taskdeny');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Cursor' });
    const noteId = `v1-${Date.now()}`;
    const created = await client.request(
      { method: 'tools/call', params: { name: `${person.addonId}__delete_note`, arguments: { id: noteId }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const { taskId } = created.task;
    const waiting = await until('the task names the approval page', async () => {
      const task = await client.experimental.tasks.getTask(taskId);
      return /\/approvals\/apr_/.test(task.statusMessage ?? '') ? task : undefined;
    });
    assert.equal(waiting.status, 'working');
    const url = /(http:\/\/\S+\/approvals\/apr_[\w-]+)/.exec(waiting.statusMessage!)![1]!;
    await decideOnPage(person, url, 'Deny', 'Keep that note.');
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.match(textOf(result), /The person denied this call\. Their reason: "Keep that note\."/);
    assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'completed');
    assert.equal(hook.calls().filter((d) => d.body.arguments?.id === noteId).length, 0, 'nothing was sent');
    await client.close();
  });
});
