import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { startToolport, type Toolport } from './helpers/target';
import { connect, register } from './helpers/oauth-flow';

/**
 * MCP revisions on one endpoint (issue #27): request ids as MCP allows them. Raw HTTP, so every
 * header and byte is the test's.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let p: Awaited<ReturnType<typeof personWithNotes>> & { token: string };

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ add_note: () => ({ text: 'added' }), search_notes: () => ({ text: 'none' }) });
  const person = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true });
  const app = await register(tp.url);
  p = { ...person, token: (await connect(tp.url, person.client, app.client_id, person.user.mcpUrl)).access_token };
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const calls = () => hook.calls().length;

async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(p.user.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${p.token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  // A streamed answer: its last data line is the response.
  const data = text.startsWith('event:') ? [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!)) : undefined;
  return { status: res.status, headers: res.headers, text, data, json: data ? data.at(-1) : text ? JSON.parse(text) : undefined };
}

describe('request ids', () => {
  it('refuses a fractional, null or inexact integer id with -32600 Invalid Request, without an id, before anything runs', async () => {
    const before = calls();
    for (const id of ['1.5', 'null', '9007199254740993', '-0.25', '1e400']) {
      for (const method of ['tools/list', 'ping', 'tools/call']) {
        const res = await post(`{"jsonrpc":"2.0","id":${id},"method":"${method}","params":{"name":"${p.addonId}__add_note","arguments":{"text":"x"}}}`);
        assert.equal(res.status, 400, `${id} ${method}: ${res.text}`);
        assert.equal(res.json.error.code, -32600, `${id} ${method}: ${res.text}`);
        assert.match(res.json.error.message, /string or an integer/);
        assert.equal('id' in res.json, false, `no id, never null: ${res.text}`);
      }
    }
    assert.equal(calls(), before);
  });

  it('answers string ids (empty, numeric-looking) and integer ids with the id exactly as sent, on every path', async () => {
    const init = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } };
    for (const id of ['', '1', 'abc', '01', 0, -1, 2 ** 53 - 1]) {
      const list = await post({ jsonrpc: '2.0', id, method: 'tools/list' });
      assert.equal(list.json.id, id, list.text.slice(0, 200));
      const call = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `${p.addonId}__search_notes`, arguments: {} } });
      assert.equal(call.json.id, id);
      assert.equal(call.json.result.isError, undefined, call.text);
      const streamed = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `${p.addonId}__search_notes`, arguments: {}, _meta: { progressToken: id } } });
      assert.equal(streamed.json.id, id);
      assert.equal((await post({ jsonrpc: '2.0', id, method: 'ping' })).json.id, id);
      assert.equal((await post({ jsonrpc: '2.0', id, method: 'initialize', params: init })).json.id, id);
    }
  });

  it('answers an error without an id when none could be read, never with id: null', async () => {
    for (const body of ['{"jsonrpc":', '[]', '{"jsonrpc":"2.0","method":5,"id":1}']) {
      const res = await post(body);
      assert.equal(res.status, 400, body);
      assert.equal('id' in res.json, false, res.text);
    }
    const wrongMethod = await fetch(p.user.mcpUrl, { method: 'DELETE', headers: { authorization: `Bearer ${p.token}` } });
    assert.equal('id' in (await wrongMethod.json()), false);
  });
});

