import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { defineAddon, NOT_APPROVED, serveNode, text, tool, type CallContext } from '@toolport/addon-kit';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { installFor, listPublicly, newPerson, type Client } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Issue #24: one time budget per call, nothing delivered after the app was answered, honest
 * results, and the approval receipt an add-on can require.
 */
/**
 * This file's call budget (CALL_BUDGET_SECONDS): the contract's 55 s cut to 20, so the measured case
 * below runs at that scale instead of sleeping through a minute. 20 still gives the 12-second tool
 * all its time.
 */
const BUDGET_SECONDS = 20;
/** A moment of the measured case (ms against the 55 s budget), at this file's budget. */
const scaled = (ms: number) => Math.round((ms * BUDGET_SECONDS) / 55);

let tp: Toolport;
before(async () => {
  tp = await startToolport({ env: { CALL_BUDGET_SECONDS: String(BUDGET_SECONDS) } });
});
after(async () => {
  await tp?.stop();
});

type Result = { isError?: boolean; content: Array<{ type: string; text?: string }> };
const textOf = (r: Result) => r.content.map((b) => b.text ?? '').join(' ');

/** Polls until `read` returns something (the call and delivery logs are written behind the call). */
async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await read();
    if (v !== undefined) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const loggedCall = (person: { client: Client }, tool: string) =>
  until(async () => ((await person.client.get('/api/calls?limit=50')).body.items as any[]).find((c) => c.tool === tool), `the ${tool} call in the call log`);

describe('one budget per call', () => {
  it('answers the app inside the budget when confirm, approval and retries would pass it, and never delivers after', async () => {
    // The measured case: a 4.5 s confirm step, the person allowing at 28 s, attempts that take 9 s
    // each and fail. Under one 30 s allowance per step the whole took ~61 s, past the SDK's 60 s.
    // Every moment of it is scaled to this file's budget (scaled()), as the budget is.
    let start = 0;
    const attempts: number[] = [];
    const performed: number[] = [];
    const hook = await startAddonServer({
      delete_note: async () => {
        const at = Date.now() - start;
        attempts.push(at);
        if (at >= scaled(56_000)) {
          performed.push(at);
          return { text: 'Deleted.' };
        }
        await sleep(scaled(9_000));
        return { status: 503, body: { error: 'busy' } };
      },
    });
    hook.onConfirm(async () => {
      await sleep(scaled(4_500));
      return { confirm: { message: 'Delete the note “n1”?', style: 'destructive' } };
    });
    try {
      const person = await personWithNotes(tp.url, hook, { delete_note: true });
      const { client } = await connectApp(person.user.mcpUrl, person.client);
      start = Date.now();
      // The SDK's default request timeout (60 s): nothing passed.
      const answered = client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } }).then(
        (r) => ({ result: r as Result, at: Date.now() - start }),
        (err: unknown) => ({ error: err, at: Date.now() - start }),
      );
      const approval = await until(async () => ((await person.client.get('/api/approvals?status=pending')).body as any[])[0], 'the approval');
      await sleep(Math.max(0, scaled(4_500 + 28_000) - (Date.now() - start)));
      assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' })).status, 200);

      const outcome = await answered;
      assert.ok('result' in outcome, `the app was answered, not timed out: ${'error' in outcome ? String(outcome.error) : ''}`);
      assert.equal(outcome.result.isError, true);
      assert.match(textOf(outcome.result), /did not answer in time.*may or may not have completed/);
      // Wait past where the old allowances would have sent one more attempt.
      await sleep(Math.max(0, scaled(64_000) - (Date.now() - start)));
      assert.deepEqual(performed, [], 'the add-on performed nothing');
      assert.ok(attempts.length >= 1 && attempts.every((a) => a < outcome.at), `every attempt began before the app was answered: ${attempts} < ${outcome.at}`);
      const logged = await loggedCall(person, 'delete_note');
      assert.equal(logged.decision, 'allowed');
      assert.equal(logged.outcome, 'timed_out');
    } finally {
      await hook.close();
    }
  });

  it('gives a 12-second tool one attempt with all its time, and it succeeds once', async () => {
    const hook = await startAddonServer({
      search_notes: async () => {
        await sleep(12_000);
        return { text: 'Found it.' };
      },
    });
    try {
      const person = await personWithNotes(tp.url, hook, { search_notes: true });
      const { client } = await connectApp(person.user.mcpUrl, person.client);
      const result = (await client.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: 'slow' } })) as Result;
      assert.equal(result.isError, undefined, textOf(result));
      assert.equal(textOf(result), 'Found it.');
      assert.equal(hook.calls().length, 1, 'sent once');
      assert.equal((await loggedCall(person, 'search_notes')).outcome, 'ok');
    } finally {
      await hook.close();
    }
  });

  it('keeps to a tool\'s own shorter timeout from its manifest', async () => {
    const hook = await startAddonServer({
      search_notes: async () => {
        await sleep(4_000);
        return { text: 'Too late.' };
      },
    });
    try {
      const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'notes', (m) => {
        (m.tools[0] as Record<string, unknown>).timeoutSeconds = 1;
      });
      const { client } = await connectApp(person.user.mcpUrl, person.client);
      const result = (await client.callTool({ name: `${person.addonId}__search_notes`, arguments: { query: 'x' } })) as Result;
      assert.equal(result.isError, true);
      assert.match(textOf(result), /did not answer in time, so Toolport stopped waiting after 1 seconds\. Try again later\./);
      assert.equal(hook.calls().length, 1);
      assert.equal((await loggedCall(person, 'search_notes')).outcome, 'timed_out');
    } finally {
      await hook.close();
    }
  });

  it('refuses a timeoutSeconds outside 1 to 3600 at registration, with its JSON path', async () => {
    const dev = await newPerson(tp.url, 'timeouts');
    for (const bad of [0, 3601, 2.5, '10']) {
      const res = await dev.client.post('/api/addons', {
        id: `to-${randomUUID().slice(0, 8)}`, name: 'T', description: 'Times.', webhook: 'https://example.com/hook',
        tools: [{ name: 'slow', title: 'Slow', summary: 'Returns late.', timeoutSeconds: bad, arguments: [] }],
      });
      assert.equal(res.status, 422, `${bad}: ${res.text}`);
      assert.ok(res.body.errors.some((e: { path: string }) => e.path === '/tools/0/timeoutSeconds'), res.text);
    }
  });
});

describe('honest results', () => {
  it('passes the add-on\'s isError on as a tool error, logged as one, with a sentence when it gave none', async () => {
    const hook = await startAddonServer({
      search_notes: (body) =>
        body.arguments.query === 'silent'
          ? { content: [], isError: true }
          : body.arguments.query === 'odd'
            ? { content: [{ type: 'text', text: 'x' }], isError: 'yes' }
            : { content: [{ type: 'text', text: 'The notes index is rebuilding.' }], isError: true },
    });
    try {
      const person = await personWithNotes(tp.url, hook, { search_notes: true });
      const { client } = await connectApp(person.user.mcpUrl, person.client);
      const call = (query: string) => client.callTool({ name: `${person.addonId}__search_notes`, arguments: { query } }) as Promise<Result>;
      const said = await call('milk');
      assert.equal(said.isError, true);
      assert.equal(textOf(said), 'The notes index is rebuilding.');
      const logged = await loggedCall(person, 'search_notes');
      assert.equal(logged.outcome, 'refused');
      const silent = await call('silent');
      assert.equal(silent.isError, true);
      assert.equal(textOf(silent), 'The tool reported an error without saying what went wrong.');
      const odd = await call('odd');
      assert.equal(odd.isError, true);
      assert.match(textOf(odd), /could not read/);
    } finally {
      await hook.close();
    }
  });
});

describe('the approval receipt, through the kit', () => {
  const seen: Array<CallContext['approval']> = [];
  let secrets: string[] = [];
  let server: Server;
  let webhook: string;
  const addonId = `receipts-${process.pid % 1000}`;
  const addon = defineAddon({
    id: addonId,
    name: 'Receipts',
    description: 'Wipes and crashes, for tests.',
    webhook: 'https://example.invalid/hook',
    visibility: 'public',
    tools: {
      wipe: tool({
        title: 'Wipe a drawer',
        summary: 'Empties one drawer and returns how many things were in it.',
        destructive: true,
        requireApproval: true,
        arguments: { drawer: text({ summary: 'The drawer.', maxLength: 40 }) },
        run: (args, ctx) => {
          seen.push(ctx.approval);
          return `Wiped ${args.drawer}.`;
        },
      }),
      boom: tool({
        title: 'Explode',
        summary: 'Throws inside the add-on and returns nothing.',
        run: () => {
          throw new Error('a bug in the add-on');
        },
      }),
    },
  });
  before(async () => {
    server = await serveNode(addon.handler({ secrets: () => secrets, onError: () => {} }), 0, '127.0.0.1');
    webhook = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  let dev: Awaited<ReturnType<typeof newPerson>>;
  async function installed() {
    if (!dev) {
      dev = await newPerson(tp.url, 'kit-dev');
      const created = await dev.client.post('/api/addons', addon.manifest({ webhook }));
      assert.equal(created.status, 201, created.text);
      secrets = [created.body.signingSecret];
      await listPublicly(tp.url, addonId, dev);
    }
    const person = await newPerson(tp.url, 'kit-person');
    await installFor(person, addonId, { wipe: true, boom: true });
    return { dev, person };
  }

  it('carries the person\'s approval into the signed body; the kit checks it and refuses a call without one', async () => {
    const { person } = await installed();
    const { client } = await connectApp(person.user.mcpUrl, person.client);
    const calling = client.callTool({ name: `${addonId}__wipe`, arguments: { drawer: 'socks' } }) as Promise<Result>;
    const approval = await until(async () => ((await person.client.get('/api/approvals?status=pending')).body as any[])[0], 'the approval');
    assert.equal((await person.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' })).status, 200);
    const result = await calling;
    assert.equal(textOf(result), 'Wiped socks.');
    const receipt = seen.at(-1)!;
    assert.ok(receipt, 'ctx.approval is set');
    assert.equal(receipt.id, approval.id);
    assert.equal(receipt.channel, 'dashboard');
    assert.ok(receipt.decidedAt instanceof Date && Number.isFinite(receipt.decidedAt.getTime()));
    assert.match(receipt.argumentsHash, /^sha256:[0-9a-f]{64}$/);

    // Deliveries signed with the add-on's secret but without a matching approval: refused before run.
    const forged = async (approvalField: Record<string, unknown> | undefined) => {
      const body = JSON.stringify({
        type: 'tool.call', addon: addonId, tool: 'wipe', arguments: { drawer: 'shoes' },
        call: { id: `call_${randomUUID()}`, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
        user: { id: 'usr_x' }, app: { name: 'Forger', clientId: 'cli_x' },
        ...(approvalField ? { approval: approvalField } : {}),
      });
      const id = `msg_${randomUUID()}`;
      const at = new Date();
      const res = await fetch(webhook, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secrets[0]!).sign(id, at, body) },
        body,
      });
      return (await res.json()) as { error?: string };
    };
    const runs = seen.length;
    assert.deepEqual(await forged(undefined), { error: NOT_APPROVED });
    assert.deepEqual(await forged({ ...receipt, decidedAt: receipt.decidedAt.toISOString() }), { error: NOT_APPROVED }, 'a receipt for other arguments');
    assert.equal(seen.length, runs, 'run was never called');
  });

  it('shows a tool that threw inside the kit as the add-on failing in the delivery log, not as "200 ok"', async () => {
    const { dev, person } = await installed();
    const { client } = await connectApp(person.user.mcpUrl, person.client);
    const result = (await client.callTool({ name: `${addonId}__boom`, arguments: {} })) as Result;
    assert.equal(result.isError, true);
    assert.equal(textOf(result), 'The add-on failed; try again later.');
    const delivery = await until(
      async () => ((await dev.client.get(`/api/addons/${addonId}/deliveries`)).body.deliveries as any[]).find((d) => d.callId && d.errorClass),
      'the delivery',
    );
    assert.equal(delivery.errorClass, 'addon_failed');
    assert.match(delivery.detail, /code failed/);
    const logged = await loggedCall(person, 'boom');
    assert.equal(logged.outcome, 'failed');
  });
});
