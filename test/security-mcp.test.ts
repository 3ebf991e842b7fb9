import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ConfigError, parseConfig } from '@toolport/core';
import { hostAllowed } from '../apps/api/src/http/host-check';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { Client } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';
import { connect, register } from './helpers/oauth-flow';
import { until } from './helpers/wait';

/**
 * The MCP protocol suite (issue #10): what a hostile or broken client can send to a person's MCP
 * URL, and the answer each gets. Every case is also a row of docs/security.md.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let a: Awaited<ReturnType<typeof personWithNotes>> & { token: string };
let b: Awaited<ReturnType<typeof personWithNotes>> & { token: string };

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ add_note: () => ({ text: 'added' }), search_notes: () => ({ text: 'none' }) });
  const setup = async () => {
    const p = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true });
    const app = await register(tp.url);
    return { ...p, token: (await connect(tp.url, p.client, app.client_id, p.user.mcpUrl)).access_token };
  };
  a = await setup();
  b = await setup();
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const calls = () => hook.received.filter((d) => d.body.type === 'tool.call').length;
const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(body: unknown, headers: Record<string, string> = {}, who = a) {
  const res = await fetch(who.user.mcpUrl, {
    method: 'POST',
    headers: { ...JSON_HEADERS, authorization: `Bearer ${who.token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** A raw HTTP/1.1 request, for what fetch will not send: a chosen Host header, a chunked body. */
function raw(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; chunks?: Array<string | Buffer> },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: opts.method ?? 'POST', headers: opts.headers ?? {}, setHost: !opts.headers?.host, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    // The server may answer and close while we are still sending (that is the point of some cases):
    // such a write error is not the outcome, the response is.
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!answered && err.code !== 'EPIPE') reject(err);
    });
    void (async () => {
      for (const chunk of opts.chunks ?? []) {
        if (req.destroyed) break;
        await new Promise<void>((r) => (req.write(chunk) ? r() : req.once('drain', r)));
      }
      req.end();
    })();
  });
}

describe('MCP: malformed and invalid JSON-RPC', () => {
  it('answers broken JSON with -32700 and anything but one JSON-RPC 2.0 object with -32600, never reaching the add-on', async () => {
    const before = calls();
    for (const body of ['{"jsonrpc":', '', 'nul', '\u0000', '{"a":1}{"b":2}', '\uFEFF{"jsonrpc":"2.0"']) {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.json.error.code, -32700, JSON.stringify(body));
      // No id to answer: none, never null (the schemas allow no null id).
      assert.equal('id' in res.json, false);
    }
    for (const body of [[], [list], [list, { ...list, id: 2 }], 'null', '42', '"tools/list"', { id: 1, method: 'tools/list' }, { ...list, jsonrpc: '1.0' }, { ...list, jsonrpc: 2 }]) {
      const res = await post(typeof body === 'string' ? body : JSON.stringify(body));
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.json.error.code, -32600, JSON.stringify(body));
    }
    const text = await post(JSON.stringify(list), { 'content-type': 'text/plain' });
    assert.equal(text.status, 400);
    assert.equal(text.json.error.code, -32600);
    assert.equal(calls(), before);
  });

  it('answers a message that is not JSON-RPC with -32600, an unknown method with -32601, params of the wrong type with an error', async () => {
    const before = calls();
    const unknown = await post({ jsonrpc: '2.0', id: 7, method: 'tools/destroy', params: {} });
    assert.equal(unknown.json.error.code, -32601);
    assert.equal(unknown.json.id, 7);
    for (const body of [
      { jsonrpc: '2.0', id: 1, method: 5 },
      { jsonrpc: '2.0', id: 1, method: '' },
      { jsonrpc: '2.0', id: { x: 1 }, method: 'tools/list' },
      { jsonrpc: '2.0', id: [1], method: 'tools/list' },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: 'add_note' },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: [1] },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } },
    ]) {
      const res = await post(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.json.error.code, -32600, `${JSON.stringify(body)}: ${res.text}`);
    }
    // Well-formed JSON-RPC whose params name no tool: -32602 Invalid params, in a 200 like every
    // JSON-RPC error to a request (the SDK answered -32603 Internal error with its schema complaint).
    for (const params of [{ name: 42 }, {}, { name: null, arguments: {} }, undefined]) {
      const badParams = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', ...(params ? { params } : {}) });
      assert.equal(badParams.status, 200, badParams.text);
      assert.equal(badParams.json.error.code, -32602, badParams.text);
      assert.match(badParams.json.error.message, /params\.name/);
      assert.equal(badParams.json.id, 9);
    }
    assert.equal(calls(), before);
    // Still serving.
    assert.equal((await post(list)).status, 200);
  });
});

describe('MCP: size and depth', () => {
  it('refuses a chunked body past 1 MB with 413 without a Content-Length to go by', async () => {
    const piece = Buffer.alloc(64 * 1024, 0x20);
    const res = await raw(a.user.mcpUrl, {
      headers: { ...JSON_HEADERS, authorization: `Bearer ${a.token}`, 'transfer-encoding': 'chunked' },
      chunks: ['{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"', ...Array.from({ length: 20 }, () => piece), '"}}'],
    });
    assert.equal(res.status, 413);
    assert.equal(JSON.parse(res.text).error.code, -32600);
    // A chunked body under the limit is read whole.
    const small = await raw(a.user.mcpUrl, {
      headers: { ...JSON_HEADERS, authorization: `Bearer ${a.token}`, 'transfer-encoding': 'chunked' },
      chunks: ['{"jsonrpc":"2.0",', '"id":1,"method":"tools/list",', '"params":{}}'],
    });
    assert.equal(small.status, 200, small.text);
    assert.ok(JSON.parse(small.text).result.tools.length >= 1);
  });

  it('refuses a Content-Length past 1 MB before reading the body', async () => {
    const res = await post({ ...list, params: { pad: 'x'.repeat(1024 * 1024 + 1) } });
    assert.equal(res.status, 413);
    assert.equal(res.json.error.code, -32600);
  });

  it('survives deep nesting: in arguments it is a tool error, elsewhere a JSON-RPC answer; the add-on never hears of it', async () => {
    const before = calls();
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const objDeep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    for (const nested of [deep(20), deep(50_000), objDeep(20), objDeep(50_000)]) {
      const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"${a.addonId}__add_note","arguments":{"text":${nested}}}}`;
      const res = await post(body);
      assert.equal(res.status, 200, res.text.slice(0, 200));
      assert.equal(res.json.result.isError, true, res.text.slice(0, 200));
      assert.match(res.json.result.content[0].text, /nested too deeply/);
    }
    const inMeta = await post(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"x":${deep(50_000)}}}}`);
    assert.ok([200, 400].includes(inMeta.status), `${inMeta.status}`);
    assert.equal(calls(), before);
    assert.equal((await post(list)).status, 200);
  });
});

describe('MCP: origin, host, protocol version and sessions', () => {
  it('refuses a foreign Origin (including "null") with 403, and takes none or its own', async () => {
    for (const origin of ['https://evil.example', 'null', `${tp.config.publicOrigin}.evil.example`, tp.config.publicOrigin.replace('http:', 'https:')]) {
      const res = await post(list, { origin });
      assert.equal(res.status, 403, origin);
      assert.equal(res.json.error.code, -32000);
    }
    assert.equal((await post(list, { origin: tp.config.publicOrigin })).status, 200);
  });

  it('refuses a foreign Host (DNS rebinding) with 421 before looking at the token', async () => {
    const port = new URL(tp.url).port;
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`, `attacker.localhost:${port}`, `10.0.0.5:${port}`]) {
      const res = await raw(a.user.mcpUrl, { headers: { ...JSON_HEADERS, host, authorization: `Bearer ${a.token}` }, chunks: [JSON.stringify(list)] });
      assert.equal(res.status, 421, host);
      assert.equal(JSON.parse(res.text).error.code, -32000, host);
    }
    // PUBLIC_URL is loopback here: every loopback spelling (any port) is the same machine.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, `127.0.0.1.:${port}`]) {
      const res = await raw(a.user.mcpUrl, { headers: { ...JSON_HEADERS, host, authorization: `Bearer ${a.token}` }, chunks: [JSON.stringify(list)] });
      assert.equal(res.status, 200, `${host}: ${res.text}`);
    }
  });

  it('refuses an unsupported MCP-Protocol-Version header with 400, listing the versions it speaks', async () => {
    for (const version of ['1999-01-01', 'latest', '2025-06-18; drop table']) {
      const res = await post(list, { 'mcp-protocol-version': version });
      assert.equal(res.status, 400, version);
      assert.equal(res.json.error.code, -32022, version);
      assert.ok(res.json.error.data.supported.includes('2026-07-28'));
      assert.equal(res.json.error.data.requested, version);
    }
    assert.equal((await post(list, { 'mcp-protocol-version': '2025-06-18' })).status, 200);
  });

  it('keeps no sessions: the session id given at initialize is random and names nothing, and another person\'s session id or token opens nothing of theirs', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const init = await post(initialize);
    assert.equal(init.status, 200);
    // Given so that clients that open the change stream only under one do (the Python SDK).
    const given = init.headers.get('mcp-session-id') ?? '';
    assert.match(given, /^[0-9a-f-]{36}$/);
    assert.notEqual((await post(initialize)).headers.get('mcp-session-id'), given, 'a new one each time: it identifies nothing');
    // A session id is ignored: what answers is decided by the bearer token and the URL only.
    const withSession = await post(list, { 'mcp-session-id': 'b-session-0000' });
    assert.equal(withSession.status, 200);
    assert.ok(withSession.json.result.tools.every((t: { name: string }) => t.name.startsWith(`${a.addonId}__`)));
    // A's token on B's URL, with or without a session id: 401.
    for (const headers of [{}, { 'mcp-session-id': 'anything' }] as Array<Record<string, string>>) {
      const res = await fetch(b.user.mcpUrl, { method: 'POST', headers: { ...JSON_HEADERS, authorization: `Bearer ${a.token}`, ...headers }, body: JSON.stringify(list) });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate')!, /invalid_token/);
    }
    // DELETE (session termination) is refused: there is nothing to end.
    const del = await fetch(a.user.mcpUrl, { method: 'DELETE', headers: { authorization: `Bearer ${a.token}`, 'mcp-session-id': 'x' } });
    assert.equal(del.status, 405);
  });

  it('answers the dashboard and API for a foreign Host with 421 too, but probes whatever the Host', async () => {
    const port = new URL(tp.url).port;
    for (const path of ['/', '/api/me', '/oauth/authorize', '/.well-known/oauth-authorization-server']) {
      const res = await raw(`${tp.url}${path}`, { method: 'GET', headers: { host: `evil.example:${port}`, cookie: [...a.client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
      assert.equal(res.status, 421, path);
      assert.equal(JSON.parse(res.text).status, 421);
    }
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await raw(`${tp.url}${path}`, { method: 'GET', headers: { host: `10.1.2.3:${port}` } });
      assert.equal(res.status, 200, path);
    }
    assert.equal((await new Client(tp.url).get('/healthz')).status, 200);
  });
});

describe('MCP: change streams shared between a person\'s apps (issue #41)', () => {
  /** A 2025-11-25 GET change stream of the app holding `token`: its status, and whether it has ended. */
  function openStream(token: string) {
    const u = new URL(a.user.mcpUrl);
    return new Promise<{ status: number; ended: () => boolean; close: () => void }>((resolve) => {
      let ended = false;
      const req = httpRequest(
        { host: u.hostname, port: u.port, path: u.pathname, method: 'GET', agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25' } },
        (res) => {
          res.on('close', () => (ended = true));
          res.resume();
          resolve({ status: res.statusCode!, ended: () => ended, close: () => req.destroy() });
        },
      );
      // Ended by the server before it answered: as good as a stream that ended.
      req.on('error', () => resolve({ status: 0, ended: () => true, close: () => {} }));
      req.end();
    });
  }

  it('lets no app lock out the person\'s others: past its share an app gives up its oldest stream, and at the limit the app holding the most does', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) tokens.push((await connect(tp.url, a.client, (await register(tp.url)).client_id, a.user.mcpUrl)).access_token);
    const all: Array<Awaited<ReturnType<typeof openStream>>> = [];
    const open = async (token: string) => {
      const s = await openStream(token);
      all.push(s);
      return s;
    };
    const live = (list: typeof all) => list.filter((s) => s.status === 200 && !s.ended());
    try {
      // One app opens the person's whole limit at once: it keeps its share, the rest end.
      const burst = await Promise.all(Array.from({ length: 16 }, () => open(tokens[0]!)));
      // Another app still gets one.
      const other = await open(tokens[1]!);
      assert.equal(other.status, 200, 'not locked out (429)');
      await until('the app kept 4 of its 16 streams', () => live(burst).length === 4);

      // Four apps with four streams each: the person's limit of 16.
      const held = [other];
      for (const token of [tokens[1]!, tokens[1]!, tokens[1]!, tokens[2]!, tokens[2]!, tokens[2]!, tokens[2]!, tokens[3]!, tokens[3]!, tokens[3]!, tokens[3]!]) {
        const s = await open(token);
        assert.equal(s.status, 200);
        held.push(s);
      }
      // A fifth app: the first app holding four gives up its oldest, and the newcomer is served.
      const fifth = await open(tokens[4]!);
      assert.equal(fifth.status, 200, 'a fifth app is served at the limit');
      await until('a stream of the app holding the most ended', () => live(burst).length === 3);
      assert.equal(live(held).length, 12, 'the other apps keep theirs');
      assert.equal(live([fifth]).length, 1);
    } finally {
      for (const s of all) s.close();
    }
  });
});

describe('Host settings (DNS-rebinding protection)', () => {
  it('answers PUBLIC_URL\'s host in any spelling of it, ALLOWED_HOSTS, and no loopback unless PUBLIC_URL is loopback', () => {
    const config = parseConfig({ PUBLIC_URL: 'https://toolport.example.com', ALLOWED_HOSTS: 'api.internal:8080, Other.Example.com' });
    assert.equal(config.allowLoopbackHosts, false);
    for (const host of ['toolport.example.com', 'TOOLPORT.example.COM', 'toolport.example.com:443', 'toolport.example.com.', 'api.internal:8080', 'other.example.com']) {
      assert.equal(hostAllowed(config, host), true, host);
    }
    for (const host of [undefined, '', 'toolport.example.com:8443', 'api.internal', 'localhost', '127.0.0.1:8080', '[::1]', 'evil.example',
      'toolport.example.com.evil.example', 'toolport.example.com@evil.example', 'evil.example@toolport.example.com', 'toolport.example.com/x', 'toolport.example.com x', '*']) {
      assert.equal(hostAllowed(config, host), false, String(host));
    }
    const local = parseConfig({ PORT: '8080' });
    assert.equal(local.allowLoopbackHosts, true);
    for (const host of ['localhost:8080', '127.0.0.1:3000', '[::1]:8080', 'localhost']) assert.equal(hostAllowed(local, host), true, host);
    for (const host of ['evil.example:8080', 'localhost.evil.example:8080', '127.0.0.2:8080', '0.0.0.0:8080']) assert.equal(hostAllowed(local, host), false, host);
  });

  it('reports a bad ALLOWED_HOSTS entry at start with the other problems', () => {
    assert.throws(() => parseConfig({ ALLOWED_HOSTS: 'ok.example.com,http://x.example/,a b', PORT: 'x' }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.filter((p) => p.startsWith('ALLOWED_HOSTS')).length, 2, err.message);
      assert.ok(err.problems.some((p) => p.startsWith('PORT')));
      return true;
    });
  });

  it('answers the hosts docker-compose and infra/k8s send', () => {
    // docker-compose: nginx passes the browser's Host (localhost:8080) for the default PUBLIC_URL.
    assert.equal(hostAllowed(parseConfig({ PUBLIC_URL: 'http://localhost:8080' }), 'localhost:8080'), true);
    // k8s: the Ingress routes its host to the pods with that Host; PUBLIC_URL in the ConfigMap names it.
    const configMap = parse(readFileSync(new URL('../infra/k8s/configmap.yaml', import.meta.url), 'utf8'));
    const ingress = parse(readFileSync(new URL('../infra/k8s/ingress.yaml', import.meta.url), 'utf8'));
    const config = parseConfig({ PUBLIC_URL: configMap.data.PUBLIC_URL });
    for (const rule of ingress.spec.rules) assert.equal(hostAllowed(config, rule.host), true, rule.host);
  });
});
