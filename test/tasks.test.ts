// Issue #39, durable calls: a tool that takes minutes runs as an MCP task on both revisions; its
// add-on accepts the call and answers later at a signed answer URL; the task outlives the API
// process that made it; bad answers, other apps and a silent add-on are refused or bounded.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http, { type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { defineAddon, serveNode, text, tool } from '@toolport/addon-kit';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { startToolportCli } from './helpers/cli';
import { installFor, listPublicly, newPerson } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { restartToolport, startToolport, type Toolport } from './helpers/target';
import { until } from './helpers/wait';
import { answer, listen, modernWire, TASKS } from './helpers/tasks';

const MODERN = '2026-07-28';

let tp: Toolport;
before(async () => {
  tp = await startToolport({ keepBacking: true });
});
after(async () => {
  await tp?.stop();
  await tp?.backing.drop();
});

const restart = async () => {
  tp = await restartToolport(tp);
};

const textOf = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join('\n');

describe('a two-minute tool as a task, its add-on answering later (the TypeScript kit)', () => {
  let server: Server;
  let runs = 0;
  let release: () => void = () => {};
  let reached: () => void = () => {};
  let started = new Promise<void>((r) => (reached = r));
  const addon = defineAddon({
    id: `export-${process.pid % 1000}`,
    name: 'Exports',
    description: 'Exports the notes.',
    webhook: 'http://127.0.0.1:1/hook',
    tools: {
      export_notes: tool({
        title: 'Export notes',
        summary: 'Exports every note as one file; takes a couple of minutes.',
        readOnly: true,
        timeoutSeconds: 120,
        arguments: { format: text({ maxLength: 10, summary: 'The file format.' }) },
        run: async (args, ctx) => {
          runs++;
          await ctx.progress('Exported half of the notes.');
          await new Promise<void>((r) => {
            release = r;
            reached();
          });
          return `Exported 42 notes as ${args.format}.`;
        },
      }),
    },
  });
  let secrets: string[] = [];
  let addonId = '';
  let dev: Awaited<ReturnType<typeof newPerson>>;
  let manifest: Record<string, unknown>;

  before(async () => {
    server = await serveNode(addon.handler({ secrets: () => secrets }), 0, '127.0.0.1');
    dev = await newPerson(tp.url, 'dev');
    manifest = { ...addon.manifest({ webhook: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook` }), visibility: 'public' };
    addonId = manifest.id as string;
    const created = await dev.client.post('/api/addons', manifest);
    assert.equal(created.status, 201, created.text);
    secrets = [created.body.signingSecret];
    await listPublicly(tp.url, addonId, dev);
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const fresh = () => {
    started = new Promise<void>((r) => (reached = r));
  };

  it('on 2026-07-28 (client v2 with the tasks requester): a task, polled to its answer across a restart of the API process', async () => {
    fresh();
    const person = await newPerson(tp.url);
    await installFor(person, addonId, { export_notes: true });
    const provider = new TestOAuthProvider('Claude');
    const { client } = await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const listed = await client.listTools();
    assert.ok(listed.tools.some((t) => t.name === `${addonId}__export_notes`));
    const wire = modernWire(person.user.mcpUrl, provider);
    const session = createTaskSessionFromClient(client, {
      endpointId: 'toolport-test',
      rawDispatch: wire.dispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'Claude', version: '1.0.0' }, clientCapabilities: {} },
    });
    const before = runs;
    const execution = await session.callTool(`${addonId}__export_notes`, { format: 'pdf' });
    assert.equal(execution.kind, 'task', 'Toolport answered with a task');
    const taskId = execution.handle!.taskId;
    await started;
    const polled = await until('the add-on’s progress as the task’s status', async () => {
      const got = await wire.call('tasks/get', { taskId });
      return got.result?.statusMessage === 'Exported half of the notes.' ? got.result : undefined;
    });
    assert.equal(polled.status, 'working');
    assert.equal(polled.resultType, 'complete');
    assert.ok(polled.ttlMs > 120_000 && polled.pollIntervalMs > 0);

    await restart();
    release();
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, 'completed');
    assert.equal(textOf(resultFromTaskOutcome(outcome)), 'Exported 42 notes as pdf.');
    assert.equal(runs - before, 1, 'the add-on ran the tool once');
    await session.close();
    await client.close();
  });

  it('`toolport dev` shows the add-on’s progress and its later answer as they come', async () => {
    fresh();
    const key = await dev.client.post('/api/keys', { name: 'dev loop' });
    assert.equal(key.status, 201, key.text);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tasks-dev-'));
    writeFileSync(path.join(dir, 'addon.json'), JSON.stringify(manifest, null, 2));
    const cli = await startToolportCli(['dev', 'addon.json'], { config: path.join(dir, 'config.json'), env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key.body.key }, cwd: dir });
    try {
      await cli.waitFor(new RegExp(`^Streaming deliveries of ${addonId} live\\.`));
      const person = await newPerson(tp.url);
      await installFor(person, addonId, { export_notes: true });
      const provider = new TestOAuthProvider('Claude');
      await connectAppV2(person.user.mcpUrl, person.client, { provider });
      const created = await modernWire(person.user.mcpUrl, provider).call('tools/call', { name: `${addonId}__export_notes`, arguments: { format: 'csv' } });
      assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
      await started;
      assert.match(await cli.waitFor(/ export_notes \(progress\)/), /^\d\d:\d\d:\d\d\.\d{3} {2}export_notes \(progress\) {2}Exported half of the notes\.$/);
      release();
      assert.match(await cli.waitFor(/ export_notes \(answered later\)/), /export_notes \(answered later\) {2}ok$/);
      // An answer Toolport refuses is shown too, with why: here a second one.
      const log = await dev.client.get(`/api/addons/${addonId}/deliveries`);
      const callId: string = log.body.deliveries.find((d: { type: string }) => d.type === 'tool.answer').callId;
      assert.equal((await answer(`${tp.url}/api/answers/${callId}`, secrets[0]!, { text: 'Again.' })).status, 409);
      assert.match(await cli.waitFor(/ export_notes \(answer refused\)/), /export_notes \(answer refused\) {2}This call has its answer already; an answer counts once\.$/);
    } finally {
      cli.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on 2025-11-25 (client v1): `task` on tools/call, then tasks/get and tasks/result across a restart', async () => {
    fresh();
    const person = await newPerson(tp.url);
    await installFor(person, addonId, { export_notes: true });
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Cursor' });
    const listed = await client.listTools();
    assert.deepEqual(listed.tools.find((t) => t.name === `${addonId}__export_notes`)?.execution, { taskSupport: 'required' });
    assert.ok(client.getServerCapabilities()?.tasks?.requests?.tools?.call, 'tasks on tools/call are declared');
    const created = await client.request(
      { method: 'tools/call', params: { name: `${addonId}__export_notes`, arguments: { format: 'csv' }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const { taskId } = created.task;
    assert.equal(created.task.status, 'working');
    await started;
    await restart();
    release();
    const done = await until('the task completed', async () => {
      const task = await client.experimental.tasks.getTask(taskId);
      return task.status === 'completed' ? task : undefined;
    });
    assert.equal(done.taskId, taskId);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    assert.equal(textOf(result), 'Exported 42 notes as csv.');
    await client.close();
  });

  it('refuses the tool to an app that did not ask for a task, before anything reaches the add-on', async () => {
    const person = await newPerson(tp.url);
    await installFor(person, addonId, { export_notes: true });
    const before = runs;
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Old app' });
    // 2025-11-25: a tool whose taskSupport is "required", called without `task`, is -32601.
    await assert.rejects(client.callTool({ name: `${addonId}__export_notes`, arguments: { format: 'pdf' } }), (err: any) => {
      assert.equal(err.code, -32601);
      assert.match(err.message, /runs only as a task.*call it with params.task.*Nothing was sent/);
      return true;
    });

    const provider = new TestOAuthProvider('Modern app');
    await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const wire = modernWire(person.user.mcpUrl, provider, {});
    const refused = await wire.call('tools/call', { name: `${addonId}__export_notes`, arguments: { format: 'pdf' } });
    assert.equal(refused.error?.code, -32021, JSON.stringify(refused));
    assert.deepEqual(refused.error.data, { requiredCapabilities: { extensions: { [TASKS]: {} } } });
    assert.match(refused.error.message, /runs only as a task/);
    const notDeclared = await wire.call('tasks/get', { taskId: 'task_x' });
    assert.equal(notDeclared.error?.code, -32021);
    assert.equal(runs, before, 'nothing reached the add-on');
  });
});

describe('bad answers, other apps, cancellation and a silent add-on', () => {
  let hook: Awaited<ReturnType<typeof startAddonServer>>;
  let secret = '';
  const accepted = () => ({ status: 202, body: {} });

  before(async () => {
    hook = await startAddonServer({ search_notes: accepted });
    const realSet = hook.setSecret.bind(hook);
    hook.setSecret = (s: string) => {
      secret = s;
      realSet(s);
    };
  });
  after(() => hook?.close());

  /** A person whose app (2026-07-28, tasks declared) started a task of the two-minute search. */
  async function started() {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'later', (m) => {
      (m.tools.find((t: any) => t.name === 'search_notes') as any).timeoutSeconds = 120;
    });
    const provider = new TestOAuthProvider(`App ${randomUUID().slice(0, 6)}`);
    await connectAppV2(person.user.mcpUrl, person.client, { provider });
    const wire = modernWire(person.user.mcpUrl, provider);
    const created = await wire.call('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'milk' } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const delivered = await until('the call reached the add-on', () => hook.calls().find((d) => d.body.addon === person.addonId));
    const answerUrl: string = delivered.body.call.answerUrl;
    assert.match(answerUrl, /\/api\/answers\/call_/);
    const taskId: string = created.result.taskId;
    await until('the task says the add-on accepted it', async () => (await wire.call('tasks/get', { taskId })).result?.statusMessage?.includes('accepted'));
    return { person, provider, wire, taskId, answerUrl, delivered };
  }

  it('takes one signed answer; refuses unsigned, forged, unknown, another call’s, oversized and second answers', async () => {
    const { person, wire, taskId, answerUrl } = await started();
    assert.equal((await fetch(answerUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"x"}' })).status, 401);
    const forged = await answer(answerUrl, `whsec_${Buffer.alloc(32, 7).toString('base64')}`, { text: 'forged' });
    assert.equal(forged.status, 401);
    assert.match(forged.body.detail, /signature does not match/);
    // An unknown call reads as a bad signature: which calls exist is nobody else's business.
    assert.equal((await answer(answerUrl.replace(/call_[\w-]+$/, 'call_nope'), secret, { text: 'x' })).status, 401);
    // One call's answer, signed by the same add-on, posted to another call: refused.
    const other = await wire.call('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'eggs' } });
    assert.equal(other.result?.resultType, 'task', JSON.stringify(other));
    const otherUrl: string = (await until('the second call reached the add-on', () => hook.calls().find((d) => d.body.addon === person.addonId && d.body.call.answerUrl !== answerUrl))).body.call.answerUrl;
    const elsewhere = await answer(answerUrl, secret, { text: 'Found nothing.' }, { signedFor: otherUrl });
    assert.equal(elsewhere.status, 401);
    assert.match(elsewhere.body.detail, /another call/);
    assert.equal(await answer(answerUrl, secret, { text: 'x' }, { id: `msg_${randomUUID()}` }).then((r) => r.status), 401, 'a webhook-id that names no call');
    const huge = await new Promise<number>((resolve, reject) => {
      const req = http.request(answerUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(100 * 1024 * 1024), 'webhook-id': 'msg_x', 'webhook-signature': 'v1,x' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.write('{"text":"');
    });
    assert.equal(huge, 413);
    const bad = await answer(answerUrl, secret, { txt: 'typo' });
    assert.equal(bad.status, 422);
    assert.match(bad.body.detail, /exactly one of/);
    assert.equal((await answer(answerUrl, secret, { progress: 'Searched 3 of 5 notebooks.' })).status, 204);
    assert.equal((await wire.call('tasks/get', { taskId })).result.statusMessage, 'Searched 3 of 5 notebooks.');

    assert.equal((await answer(answerUrl, secret, { text: 'Found 2 notes about milk.' })).status, 204);
    const done = (await wire.call('tasks/get', { taskId })).result;
    assert.equal(done.status, 'completed');
    assert.equal(textOf(done.result), 'Found 2 notes about milk.');
    const twice = await answer(answerUrl, secret, { text: 'Found 3 notes.' });
    assert.equal(twice.status, 409);
    assert.equal(textOf((await wire.call('tasks/get', { taskId })).result.result), 'Found 2 notes about milk.', 'the first answer stands');
  });

  it('keeps the files of a later answer for the task’s app, which reads them with resources/read', async () => {
    const { wire, taskId, answerUrl } = await started();
    const csv = 'note,words\nmilk,2\n';
    const answered = await answer(answerUrl, secret, { text: 'Found 1 note.', artifacts: [{ name: 'found.csv', mediaType: 'text/csv', data: Buffer.from(csv).toString('base64') }] });
    assert.equal(answered.status, 204, JSON.stringify(answered.body));
    const done = (await wire.call('tasks/get', { taskId })).result;
    assert.equal(done.status, 'completed');
    const link = done.result.content.find((b: { type: string }) => b.type === 'resource_link');
    assert.equal(link?.name, 'found.csv', JSON.stringify(done.result));
    const read = await wire.call('resources/read', { uri: link.uri });
    assert.deepEqual(read.result?.contents, [{ uri: link.uri, mimeType: 'text/csv', text: csv }], JSON.stringify(read));
  });

  it('tells an app listening for its task (subscriptions/listen) of each change and of its answer', async () => {
    const { person, provider, taskId, answerUrl } = await started();
    const stream = await listen(person.user.mcpUrl, provider, { taskIds: [taskId, 'task_not_mine'] });
    try {
      const ack = await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged');
      assert.deepEqual(ack.params.notifications, { taskIds: [taskId] }, 'only its own working task is followed');
      assert.equal((await answer(answerUrl, secret, { progress: 'Searched 1 of 5 notebooks.' })).status, 204);
      const working = await stream.next((m) => m.method === 'notifications/tasks');
      assert.equal(working.params.taskId, taskId);
      assert.equal(working.params.status, 'working');
      assert.equal(working.params.statusMessage, 'Searched 1 of 5 notebooks.');
      assert.equal(working.params._meta['io.modelcontextprotocol/subscriptionId'], stream.id);
      assert.equal((await answer(answerUrl, secret, { json: { found: 2 } })).status, 204);
      const done = await stream.next((m) => m.method === 'notifications/tasks');
      assert.equal(done.params.status, 'completed');
      assert.deepEqual(done.params.result.structuredContent, { found: 2 });
    } finally {
      stream.close();
    }
    const undeclared = await listen(person.user.mcpUrl, provider, { taskIds: [taskId] }, {});
    assert.equal((await undeclared.next()).error?.code, -32021);
  });

  it('shows a task only to the app that made it; an unknown task is not found', async () => {
    const { person, taskId } = await started();
    const other = new TestOAuthProvider('Another app');
    await connectAppV2(person.user.mcpUrl, person.client, { provider: other });
    const otherWire = modernWire(person.user.mcpUrl, other);
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const got = await otherWire.call(method, { taskId, inputResponses: {} });
      assert.equal(got.error?.code, -32602, `${method}: ${JSON.stringify(got)}`);
      assert.match(got.error.message, /Task not found/);
    }
    assert.equal((await otherWire.call('tasks/get', { taskId: 'task_unknown' })).error?.code, -32602);
  });

  /** The person's call log row of this task's call (written where the task ended). */
  const logged = (person: { client: { get(p: string): Promise<{ body: any }> } }) =>
    until('the call in the person’s log', async () => ((await person.client.get('/api/calls')).body.items as any[]).find((c) => c.tool === 'search_notes'));

  it('cancels a task: it ends cancelled, and the add-on’s later answer is refused', async () => {
    const { person, wire, taskId, answerUrl } = await started();
    assert.deepEqual((await wire.call('tasks/update', { taskId, inputResponses: { nothing: { action: 'accept' } } })).result, { resultType: 'complete', _meta: (await wire.call('tasks/update', { taskId, inputResponses: {} })).result._meta });
    const cancelled = await wire.call('tasks/cancel', { taskId });
    assert.equal(cancelled.result?.resultType, 'complete', JSON.stringify(cancelled));
    assert.equal((await wire.call('tasks/get', { taskId })).result.status, 'cancelled');
    const late = await answer(answerUrl, secret, { text: 'Found it.' });
    assert.equal(late.status, 410);
    assert.match(late.body.detail, /cancelled/);
    assert.equal((await logged(person)).outcome, 'cancelled', 'the call log says how it ended');
  });

  it('ends a task whose add-on never answers, with a sentence, once its time is up', async () => {
    const { person, wire, taskId, answerUrl } = await started();
    const clock = tp.svc.clock;
    tp.svc.clock = { now: () => new Date(Date.now() + 121_000) };
    try {
      const ended = (await wire.call('tasks/get', { taskId })).result;
      assert.equal(ended.status, 'completed');
      assert.equal(ended.result.isError, true);
      assert.match(textOf(ended.result), /did not answer within 2 minutes.*may or may not have completed/);
      assert.equal((await answer(answerUrl, secret, { text: 'Too late.' })).status, 410);
    } finally {
      tp.svc.clock = clock;
    }
    assert.equal((await logged(person)).outcome, 'timed_out', 'the call log says how it ended');
  });
});

describe('open tasks per person', () => {
  it('refuses a task past the person’s limit with a sentence, and nothing reaches the add-on', async () => {
    const small = await startToolport({ env: { LIMIT_OPEN_TASKS: '1' } });
    const hook = await startAddonServer({ search_notes: () => ({ status: 202, body: {} }) });
    try {
      const person = await personWithNotes(small.url, hook, { search_notes: true }, 'limit', (m) => {
        (m.tools.find((t: any) => t.name === 'search_notes') as any).timeoutSeconds = 600;
      });
      const provider = new TestOAuthProvider('Busy app');
      await connectAppV2(person.user.mcpUrl, person.client, { provider });
      const wire = modernWire(person.user.mcpUrl, provider);
      const first = await wire.call('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'a' } });
      assert.equal(first.result?.resultType, 'task');
      await until('the first call reached the add-on', () => hook.calls().length === 1);
      const second = await wire.call('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'b' } });
      assert.equal(second.result?.resultType, 'complete', JSON.stringify(second));
      assert.equal(second.result.isError, true);
      assert.match(textOf(second.result), /already has 1 calls running as tasks/);
      assert.equal(hook.calls().length, 1);
    } finally {
      await hook.close();
      await small.stop();
    }
  });
});
