import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { spawnToolport, type ToolportProcess } from './helpers/private-services';
import { createBacking, type Backing } from './helpers/target';

/**
 * A graceful stop (SIGTERM from Kubernetes, Ctrl-C's SIGINT) of a real process from the real entry
 * point, with destructive calls waiting for the person: every app hears that its call was
 * cancelled, on the connection it is waiting on (a JSON answer, or the end of its SSE stream),
 * nothing reaches the add-on, and the process exits by itself. On both targets.
 */
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const backings: Backing[] = [];
const procs: ToolportProcess[] = [];

before(async () => {
  hook = await startAddonServer({ delete_note: async (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
});
after(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
  await hook?.close();
  for (const b of backings) await b.drop();
});

type Settled = { result: { isError?: boolean; content?: unknown } } | { error: string };
const settle = (p: Promise<unknown>): Promise<Settled> =>
  p.then(
    (result) => ({ result: result as { isError?: boolean; content?: unknown } }),
    (err: Error) => ({ error: `${err.name}: ${err.message}` }),
  );
const textOf = (s: Settled) => ('result' in s ? ((s.result.content as Array<{ text?: string }> | undefined) ?? []).map((c) => c.text ?? '').join('') : '');

async function stopWithHeldCalls(signal: 'SIGTERM' | 'SIGINT', t: { diagnostic(m: string): void }) {
  const backing = await createBacking({ label: 'tp_stop' });
  backings.push(backing);
  // The calls wait out the grace for the person, then are answered: 8 s, not 25, keeps the last
  // 4 s of it for the answers, as in production (SHUTDOWN_GRACE_SECONDS).
  const proc = await spawnToolport('all', { ...backing.env, SHUTDOWN_GRACE_SECONDS: '8' }, { readyTimeoutMs: 120_000 });
  procs.push(proc);
  const person = await personWithNotes(proc.url, hook, { delete_note: true }, 'stop');
  const { provider } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  // The SDK's client on the app's tokens, noting how each tools/call was answered.
  const answeredAs = new Map<string, string>();
  const transport = new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), {
    authProvider: provider,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      if (body?.method === 'tools/call') answeredAs.set(body.params.arguments.id, res.headers.get('content-type') ?? '');
      return res;
    },
  });
  const client = new McpClient({ name: 'Claude', version: '1.0.0' });
  await client.connect(transport);

  const name = `${person.addonId}__delete_note`;
  const progress: string[] = [];
  const calls = {
    // No progress token: the answer is one JSON body.
    json: settle(client.callTool({ name, arguments: { id: `${signal}-json` } })),
    // A progress token: an SSE stream of progress notifications, then the answer.
    sse: settle(client.callTool({ name, arguments: { id: `${signal}-sse` } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') })),
  };
  let pending: Array<{ id: string; arguments: { id: string } }> = [];
  for (let i = 0; i < 300 && pending.length < 2; i++) {
    pending = (await person.client.get('/api/approvals?status=pending')).body;
    if (pending.length < 2) await sleep(50);
  }
  assert.equal(pending.length, 2, 'both calls wait for the person');
  assert.equal(answeredAs.get(`${signal}-sse`), 'text/event-stream', 'the call with a progress token is answered on an SSE stream');
  assert.ok(progress.length > 0, 'the streamed call heard where to approve');

  const signalled = Date.now();
  const exited = new Promise<number | null>((resolve) => proc.child.once('exit', (code) => resolve(code)));
  proc.child.kill(signal);
  const code = await Promise.race([exited, sleep(60_000).then(() => 'still running')]);
  t.diagnostic(`${signal}: exited with ${code} after ${Date.now() - signalled} ms`);
  assert.equal(code, 0, `the process exits by itself after ${signal}`);
  // The answers were written before the connections closed, so they are here by now or never.
  const unanswered = sleep(5_000).then((): Settled => ({ error: 'no answer, and the process is gone' }));
  const answers = await Promise.all([calls.json, calls.sse].map((c) => Promise.race([c, unanswered])));
  t.diagnostic(`${signal}: answers ${JSON.stringify(answers)}`);
  for (const [form, answer] of [['JSON', answers[0]!], ['SSE', answers[1]!]] as const) {
    assert.ok('result' in answer, `the ${form} call is answered before the connection closes, not cut: ${JSON.stringify(answer)}`);
    assert.equal(answer.result.isError, true, `${form}: a tool error`);
    assert.match(textOf(answer), /^The call was cancelled.*, so it did not run\.$/, `${form}: the shutdown sentence`);
  }
  assert.equal(answeredAs.get(`${signal}-json`), 'application/json', 'the call without a progress token is answered as JSON');
  assert.deepEqual(
    hook.calls().filter((d) => String(d.body.arguments.id).startsWith(`${signal}-`)),
    [],
    'nothing reached the add-on',
  );
  await client.close().catch(() => {});

  // Recorded as the shutdown's, once: a process started again on the same data shows it.
  const again = await spawnToolport('all', backing.env, { port: proc.port, readyTimeoutMs: 120_000 });
  procs.push(again);
  const all = (await person.client.get('/api/approvals?status=all')).body as Array<{ id: string; status: string; decidedBy: string }>;
  for (const p of pending) {
    const row = all.find((a) => a.id === p.id);
    assert.deepEqual({ status: row?.status, decidedBy: row?.decidedBy }, { status: 'cancelled', decidedBy: 'shutdown' }, p.arguments.id);
  }
  await again.kill('SIGTERM');
}

describe('a graceful stop answers every call waiting for approval', { concurrency: 2 }, () => {
  it('SIGTERM: the JSON and the SSE call are answered "cancelled", nothing runs, the process exits', (t) => stopWithHeldCalls('SIGTERM', t));
  it('SIGINT (Ctrl-C): the same', (t) => stopWithHeldCalls('SIGINT', t));
});
