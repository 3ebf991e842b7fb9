// Issue #42, "context for the add-on": each delivery names the app's session or conversation when
// the app gives one (2025-11-25's Mcp-Session-Id, or a conversationId in the call's _meta), as a
// pseudonym: stable across the calls of one session, different in another, never the app's raw id.
// Through the SDK clients v1 and v2, as apps make calls; on services through the BullMQ job.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none found' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const SESSION = /^ses_[\w-]{26}$/;

/** The `call.session` of the delivery the call with this query made (undefined: none sent). */
function sessionOf(query: string): string | undefined {
  const delivery = hook.calls().find((d) => d.body.arguments?.query === query);
  assert.ok(delivery, `the call "${query}" reached the add-on`);
  return delivery.body.call.session;
}

describe('the app’s session, as the add-on sees it', () => {
  it('is stable across one SDK v1 connection’s calls and differs for a new connection (Mcp-Session-Id)', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'ses');
    const name = `${person.addonId}__search_notes`;
    const { client, provider } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const again = new McpClient({ name: 'Claude', version: '1.0.0' });
    try {
      for (const query of ['v1-a', 'v1-b']) assert.equal((await client.callTool({ name, arguments: { query } })).isError, undefined);
      const first = sessionOf('v1-a');
      assert.match(first ?? '', SESSION);
      assert.equal(sessionOf('v1-b'), first, 'the same session both times');

      // The same app (same grant) connecting again: a new session.
      await again.connect(new StreamableHTTPClientTransport(new URL(person.user.mcpUrl), { authProvider: provider }));
      await again.callTool({ name, arguments: { query: 'v1-c' } });
      assert.match(sessionOf('v1-c') ?? '', SESSION);
      assert.notEqual(sessionOf('v1-c'), first, 'another connection is another session');
    } finally {
      await again.close();
      await client.close();
    }
  });

  it('follows a conversationId the app puts in _meta on 2026-07-28, and is absent without one', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'conv');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Cursor' });
    try {
      const call = (query: string, _meta?: Record<string, unknown>) => client.callTool({ name, arguments: { query }, ...(_meta ? { _meta } : {}) });
      await call('v2-a', { conversationId: 'conversation-1' });
      await call('v2-b', { conversationId: 'conversation-1' });
      await call('v2-c', { conversationId: 'conversation-2' });
      await call('v2-none');
      await call('v2-bad', { conversationId: 'x'.repeat(201) });

      const one = sessionOf('v2-a');
      assert.match(one ?? '', SESSION);
      assert.equal(sessionOf('v2-b'), one, 'one conversation, one value');
      assert.match(sessionOf('v2-c') ?? '', SESSION);
      assert.notEqual(sessionOf('v2-c'), one, 'another conversation, another value');
      assert.ok(!JSON.stringify(hook.calls().map((d) => d.body)).includes('conversation-1'), 'the app’s own id never reaches the add-on');
      assert.equal(sessionOf('v2-none'), undefined, 'no session when the app names none (2026-07-28 has no Mcp-Session-Id)');
      assert.equal(sessionOf('v2-bad'), undefined, 'an id over 200 characters is not passed on');
    } finally {
      await client.close();
    }
  });
});
