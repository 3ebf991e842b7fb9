import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { startToolport, type Toolport } from './helpers/target';
import { connect, register } from './helpers/oauth-flow';

/**
 * MCP revisions on one endpoint (issue #27): request ids as MCP allows them, version negotiation
 * and the revisions' error shapes, 2026-07-28's stateless requests and what each refuses. Raw HTTP,
 * so every header and byte is the test's; the SDK clients on both revisions are in real-clients and
 * mcp-list-changed, the official suite in conformance.test.ts.
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

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
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

/** A 2026-07-28 request with its headers as the revision requires them. */
function modern(id: unknown, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  return post({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...ENVELOPE, ...(params._meta as object) } } }, {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...name,
    ...headers,
  });
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
      assert.equal((await modern(id, 'tools/list')).json.id, id);
      assert.equal((await modern(id, 'server/discover')).json.id, id);
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

describe('version negotiation', () => {
  it('answers an unsupported MCP-Protocol-Version with 400 and UnsupportedProtocolVersionError: data.supported and data.requested', async () => {
    for (const version of ['1900-01-01', 'latest', '2027-01-01']) {
      for (const body of [{ jsonrpc: '2.0', id: 5, method: 'tools/list' }, { jsonrpc: '2.0', id: 5, method: 'server/discover', params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': version } } }]) {
        const res = await post(body, { 'mcp-protocol-version': version, 'mcp-method': body.method });
        assert.equal(res.status, 400, res.text);
        assert.equal(res.json.error.code, -32022, res.text);
        assert.equal(res.json.id, 5);
        assert.deepEqual(res.json.error.data, { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'], requested: version });
      }
    }
  });

  it('serves every supported revision: the handshake for 2025-11-25 and earlier, server/discover for 2026-07-28', async () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
      assert.equal(init.json.result.protocolVersion, version);
      // Tasks came with 2025-11-25 (the tasks on tools/call Toolport serves; tasks.test.ts).
      const tasks = version === '2025-11-25' ? { tasks: { cancel: {}, requests: { tools: { call: {} } } } } : {};
      assert.deepEqual(init.json.result.capabilities, { tools: { listChanged: true }, resources: {}, ...tasks });
      assert.equal((await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-protocol-version': version })).status, 200);
    }
    const discover = await modern('d', 'server/discover');
    assert.equal(discover.status, 200);
    assert.deepEqual(discover.json.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07']);
    assert.deepEqual(discover.json.result.capabilities, { tools: { listChanged: true }, resources: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } });
    assert.equal(discover.json.result.resultType, 'complete');
    assert.deepEqual(discover.json.result._meta, { 'io.modelcontextprotocol/serverInfo': { name: 'Toolport', version: '0.1.0' } });
    assert.match(discover.json.result.instructions, /add-ons/);
    assert.equal(discover.json.result.cacheScope, 'private');
    assert.ok(Number.isInteger(discover.json.result.ttlMs));
  });
});

describe('2026-07-28 requests', () => {
  it('lists and calls with resultType, the caching hints and serverInfo; a progress token streams the progress, then the result', async () => {
    const listed = await modern(1, 'tools/list');
    assert.equal(listed.status, 200);
    const { result } = listed.json;
    assert.equal(result.resultType, 'complete');
    assert.deepEqual([result.ttlMs, result.cacheScope], [30_000, 'private']);
    assert.equal(result._meta['io.modelcontextprotocol/serverInfo'].name, 'Toolport');
    assert.deepEqual(result.tools.map((t: { name: string }) => t.name), [`${p.addonId}__search_notes`, `${p.addonId}__add_note`]);
    // The same tools, as 2025-11-25 lists them.
    assert.deepEqual(result.tools, (await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).json.result.tools);

    const called = await modern(2, 'tools/call', { name: `${p.addonId}__add_note`, arguments: { text: 'hello' } });
    assert.equal(called.status, 200);
    assert.equal(called.headers.get('content-type'), 'application/json');
    assert.equal(called.json.result.resultType, 'complete');
    assert.equal(called.json.result.content[0].text, 'added');
    assert.equal(called.json.result._meta['io.modelcontextprotocol/serverInfo'].name, 'Toolport');

    const streamed = await modern(3, 'tools/call', { name: `${p.addonId}__add_note`, arguments: { text: 'hi' }, _meta: { progressToken: 'pt' } });
    assert.equal(streamed.headers.get('content-type'), 'text/event-stream');
    assert.equal(streamed.json.id, 3);
    assert.equal(streamed.json.result.resultType, 'complete');
    // An unknown tool is a tool error, as in every revision Toolport speaks (a model can act on it).
    const unknown = await modern(4, 'tools/call', { name: 'nope__nothing', arguments: {} });
    assert.equal(unknown.json.result.isError, true);
  });

  it('answers a method this revision removed or Toolport does not offer with 404 and -32601, keeping the id', async () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'prompts/list', 'completion/complete', 'tasks/list', 'unknown/method']) {
      const res = await modern(`m-${method}`, method);
      assert.equal(res.status, 404, `${method}: ${res.text}`);
      assert.equal(res.json.error.code, -32601, method);
      assert.equal(res.json.id, `m-${method}`);
    }
  });

  it('accepts a notification with 202, and _meta keys outside the reserved prefixes (trace context, vendors)', async () => {
    const note = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'none' } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/cancelled' });
    assert.equal(note.status, 202);
    const traced = await modern(1, 'tools/list', { _meta: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01', 'com.example/tag': 'x', 'io.example.mcp/y': 1 } });
    assert.equal(traced.status, 200, traced.text);
  });

  it('opens subscriptions/listen: the acknowledgment first, with the subscription id and only what it honours', async () => {
    const controller = new AbortController();
    const res = await fetch(p.user.mcpUrl, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${p.token}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sub-1', method: 'subscriptions/listen', params: { _meta: ENVELOPE, notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['x://y'] } } }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    const ack = JSON.parse(/^data: (.*)$/m.exec(text)![1]!);
    assert.deepEqual(ack, {
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' }, notifications: { toolsListChanged: true } },
    });
    controller.abort();
    const bad = await modern(2, 'subscriptions/listen', { notifications: 'tools' });
    assert.equal(bad.json.error.code, -32602);
  });
});

describe('2026-07-28: bad input, each refused with the revision\'s error shape and nothing run', () => {
  const call = (meta: Record<string, unknown>, headers: Record<string, string> = {}) =>
    post({ jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: `${p.addonId}__add_note`, arguments: { text: 'x' }, _meta: meta } }, {
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': `${p.addonId}__add_note`,
      ...headers,
    });
  const { 'io.modelcontextprotocol/clientCapabilities': _caps, ...withoutCapabilities } = ENVELOPE;

  it('refuses a request without the fields 2026-07-28 requires with 400 and -32602', async () => {
    const before = calls();
    for (const meta of [withoutCapabilities, { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': 42 }, { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': [] },
      { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'x' } }, { ...ENVELOPE, 'io.modelcontextprotocol/logLevel': 'loud' }, { ...ENVELOPE, progressToken: 1.5 }]) {
      const res = await call(meta);
      assert.equal(res.status, 400, `${JSON.stringify(meta)}: ${res.text}`);
      assert.equal(res.json.error.code, -32602, res.text);
      assert.equal(res.json.id, 11);
      assert.match(res.json.error.message, /^Invalid params: /);
    }
    // The modern header with no _meta at all, or _meta without the protocol version.
    for (const params of [{}, { _meta: {} }, { _meta: withoutCapabilities }].map((m) => ({ ...m }))) {
      const res = await post({ jsonrpc: '2.0', id: 12, method: 'tools/list', params }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.error.code, -32602, res.text);
    }
    assert.equal(calls(), before);
  });

  it('refuses unknown keys under the reserved _meta prefixes with -32602, naming the key', async () => {
    for (const key of ['io.modelcontextprotocol/protocolversion', 'io.modelcontextprotocol/subscriptionId', 'dev.mcp/anything', 'org.modelcontextprotocol.api/x']) {
      const res = await call({ ...ENVELOPE, [key]: 'x' });
      assert.equal(res.status, 400, key);
      assert.equal(res.json.error.code, -32602, res.text);
      assert.ok(res.json.error.message.includes(key), res.text);
    }
  });

  it('refuses mixed revisions in one request: -32020 where headers and body disagree, -32602 where the body mixes them', async () => {
    const before = calls();
    const mismatches: Array<[Record<string, unknown>, Record<string, string>]> = [
      [ENVELOPE, { 'mcp-protocol-version': '2025-11-25' }],
      [ENVELOPE, { 'mcp-method': 'tools/list' }],
      [ENVELOPE, { 'mcp-name': 'other__tool' }],
      [ENVELOPE, { 'mcp-name': '=?base64?not base64?=' }],
      [{ ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }, {}],
    ];
    for (const [meta, headers] of mismatches) {
      const res = await call(meta, headers);
      assert.equal(res.status, 400, `${JSON.stringify(headers)}: ${res.text}`);
      assert.equal(res.json.error.code, -32020, res.text);
      assert.equal(res.json.id, 11);
    }
    // A header the revision requires, missing.
    for (const drop of ['mcp-protocol-version', 'mcp-method', 'mcp-name']) {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${p.token}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': `${p.addonId}__add_note` };
      delete headers[drop];
      const res = await fetch(p.user.mcpUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 13, method: 'tools/call', params: { name: `${p.addonId}__add_note`, arguments: { text: 'x' }, _meta: ENVELOPE } }) });
      assert.equal(res.status, 400, drop);
      assert.equal((await res.json()).error.code, -32020, drop);
    }
    // The handshake under the modern header; the per-request envelope naming a handshake revision; 2026-07-28 fields in a 2025 request.
    const init = await post({ jsonrpc: '2.0', id: 14, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, { 'mcp-protocol-version': MODERN });
    assert.deepEqual([init.status, init.json.error.code, init.json.id], [400, -32020, 14]);
    const legacyClaim = await call({ ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }, { 'mcp-protocol-version': '2025-11-25' });
    assert.deepEqual([legacyClaim.status, legacyClaim.json.error.code], [400, -32602]);
    const stray = await post({ jsonrpc: '2.0', id: 15, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } } }, { 'mcp-protocol-version': '2025-11-25' });
    assert.deepEqual([stray.status, stray.json.error.code, stray.json.id], [400, -32602, 15]);
    // A Base64-encoded Mcp-Name is its value.
    const encoded = await call(ENVELOPE, { 'mcp-name': `=?base64?${Buffer.from(`${p.addonId}__add_note`).toString('base64')}?=` });
    assert.equal(encoded.status, 200, encoded.text);
    assert.equal(calls(), before + 1);
  });

  it('refuses a request without an Accept of both kinds with 406, on either revision', async () => {
    const res = await call(ENVELOPE, { accept: 'application/json' });
    assert.equal(res.status, 406);
    assert.equal(res.json.id, 11);
    const legacy = await post({ jsonrpc: '2.0', id: 16, method: 'tools/list' }, { accept: 'application/json' });
    assert.deepEqual([legacy.status, legacy.json.id], [406, 16]);
  });
});
