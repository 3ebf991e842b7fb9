// Issue #39, in-app approval on 2026-07-28: a call waiting for the person answers `input_required`
// with the approval page (URL-mode elicitation) and a signed requestState; the app's own answer
// never approves; its retry waits for the call, which runs once, where it is held.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser } from './helpers/browser';
import { dashboardAs } from './helpers/dashboard';
import { TestOAuthProvider } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { startToolport, type Toolport } from './helpers/target';
import { stillWaiting, until } from './helpers/wait';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: async (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

type Action = 'accept' | 'decline' | 'cancel';
interface Elicited { mode?: string; elicitationId?: string; url?: string; message: string }

/** The approval a page's URL names (2026-07-28's URL mode carries no elicitationId). */
const approvalOf = (e: Elicited | undefined) => e?.url?.match(/\/approvals\/(apr_[\w-]+)$/)?.[1];

/** The SDK v2 client on 2026-07-28, declaring URL elicitation and answering each with `action`. */
async function modernApp(person: Awaited<ReturnType<typeof personWithNotes>>, action: Action, name = 'Claude') {
  const elicitations: Elicited[] = [];
  const provider = new TestOAuthProvider(name);
  const { client } = await connectAppV2(person.user.mcpUrl, person.client, {
    name,
    provider,
    capabilities: { elicitation: { url: {} } },
    prepare: (c) =>
      c.setRequestHandler('elicitation/create', async (req) => {
        elicitations.push(req.params as Elicited);
        return { action };
      }),
  });
  return { client, provider, elicitations };
}

const textOf = (result: any) => (result.content as Array<{ text: string }>).map((b) => b.text).join('\n');

describe('in-app approval on 2026-07-28 (input_required)', () => {
  it('offers the call’s page; the app’s accept approves nothing; the person allows in Chromium; the call runs once', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'mrtr');
    const app = await modernApp(person, 'accept');
    assert.equal(app.client.getNegotiatedProtocolVersion(), '2026-07-28');
    const before = hook.calls().length;
    const call = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
    const e = await until('the approval page, offered in the app', () => app.elicitations[0], 15_000);
    assert.equal(e.mode, 'url');
    const approvalId = approvalOf(e);
    assert.ok(approvalId, `the URL is the call's approval page: ${e.url}`);
    assert.equal(e.url, `${tp.url}/approvals/${approvalId}`);
    assert.equal(e.elicitationId, undefined, '2026-07-28 has no elicitationId');
    assert.match(e.message, /Delete a note/);

    await stillWaiting(call);
    const row = await person.client.get(`/api/approvals/${approvalId}`);
    assert.equal(row.status, 200, row.text);
    assert.equal(row.body.status, 'pending', 'the app’s accept decided nothing');
    assert.equal(hook.calls().length, before, 'nothing ran on the app’s accept');

    const tab = await dashboardAs(browser, tp.url, person.client, 'desktop');
    try {
      await tab.page.goto(e.url!);
      const card = tab.page.locator(`[data-approval-id="${approvalId}"]`);
      await card.getByText('Delete the note n1?').waitFor();
      await card.getByRole('button', { name: 'Allow' }).click();
      const result: any = await call;
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(textOf(result), 'Deleted n1.');
      assert.deepEqual(tab.errors, []);
    } finally {
      await tab.close();
    }
    assert.equal(hook.calls().length, before + 1, 'delivered once');
    assert.equal(app.elicitations.length, 1, 'the person was asked once');
    const log = (await person.client.get('/api/calls')).body.items[0];
    assert.equal(log.outcome, 'ok');
    assert.equal(log.decidedBy, 'dashboard');
    await app.client.close();
  });

  for (const action of ['decline', 'cancel'] as const) {
    it(`an app that answers ${action} ends the call at once, as cancelled by the app; nothing is delivered`, async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, `mrtr-${action}`);
      const app = await modernApp(person, action);
      const before = hook.calls().length;
      const result: any = await app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n2' } });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /declined or cancelled in the app before the person decided/);
      const id = approvalOf(app.elicitations[0]);
      assert.ok(id, 'the page was offered before the app declined');
      const row = await person.client.get(`/api/approvals/${id}`);
      assert.equal(row.body.status, 'cancelled');
      assert.equal(row.body.decidedBy, 'app');
      assert.equal(hook.calls().length, before, 'nothing was delivered');
      await app.client.close();
    });
  }
});

describe('a requestState Toolport did not issue, or for another call', () => {
  it('is refused with a sentence, and changes nothing', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'mrtr-bad');
    const other = await modernApp(person, 'accept', 'Cursor');
    const tool = `${person.addonId}__delete_note`;
    const post = async (token: string, id: number, params: Record<string, unknown>) => {
      const res = await fetch(person.user.mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': tool,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: tool,
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
            },
          },
        }),
      });
      assert.equal(res.status, 200);
      return (await res.json()) as any;
    };
    const app = await modernApp(person, 'accept', 'Claude');
    const token = app.provider.saved!.access_token;
    const first = await post(token, 1, { arguments: { id: 'n3' } });
    assert.equal(first.result.resultType, 'input_required', JSON.stringify(first));
    const state: string = first.result.requestState;
    const approvalId = approvalOf(first.result.inputRequests.approval.params)!;

    const tampered = state.replace(/\.([^.]+)$/, (_, mac: string) => `.${mac.slice(0, -2)}xx`);
    const forged = await post(token, 2, { arguments: { id: 'n3' }, requestState: tampered });
    assert.equal(forged.error.code, -32602);
    assert.match(forged.error.message, /not one Toolport issued/);

    const otherArgs = await post(token, 3, { arguments: { id: 'n4' }, requestState: state });
    assert.match(otherArgs.error.message, /belongs to another call/);

    const otherApp = await post(other.provider.saved!.access_token, 4, { arguments: { id: 'n3' }, requestState: state, inputResponses: { approval: { action: 'decline' } } });
    assert.match(otherApp.error.message, /belongs to another call/);

    const badAnswer = await post(token, 5, { arguments: { id: 'n3' }, requestState: state, inputResponses: { approval: { action: 'allow' } } });
    assert.match(badAnswer.error.message, /inputResponses\.approval/);

    const row = await person.client.get(`/api/approvals/${approvalId}`);
    assert.equal(row.body.status, 'pending', 'none of them decided or ended the call');
    // The app's own decline, with its own state, still ends it.
    const declined = await post(token, 6, { arguments: { id: 'n3' }, requestState: state, inputResponses: { approval: { action: 'decline' } } });
    assert.equal(declined.result.isError, true, JSON.stringify(declined));
    assert.equal((await person.client.get(`/api/approvals/${approvalId}`)).body.status, 'cancelled');
    await app.client.close();
    await other.client.close();
  });
});
