import assert from 'node:assert/strict';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { startAddonServer, personWithNotes as setupPerson } from './helpers/addon-server';
import { newPerson } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';
import { createApp } from '../apps/api/src/app';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const notes = new Map<string, Array<{ id: string; text: string }>>();

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({
    add_note: (b) => {
      const list = notes.get(b.user.id) ?? [];
      const id = `n${list.length + 1}`;
      list.push({ id, text: b.arguments.text });
      notes.set(b.user.id, list);
      return { json: { id, title: b.arguments.text.split('\n')[0] } };
    },
    search_notes: (b) => ({ text: (notes.get(b.user.id) ?? []).map((n) => n.text).join('\n') || 'No notes.' }),
    delete_note: () => ({ text: 'deleted' }),
  });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const personWithNotes = (tools: Record<string, boolean> = { add_note: true, search_notes: true }) => setupPerson(tp.url, hook, tools);

describe('the first hosted tool call, end to end with the SDK client', () => {
  it('discovers, registers, is let in through the consent form, lists and calls tools, refreshes', async () => {
    const p = await personWithNotes();
    const { client, provider, redirect } = await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' });
    assert.equal(redirect?.searchParams.get('iss'), tp.url);
    assert.ok(redirect?.searchParams.get('state'));

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [`${p.addonId}__add_note`, `${p.addonId}__search_notes`]);
    const add = tools.find((t) => t.name.endsWith('__add_note'))!;
    assert.equal(add.title, 'Add a note');
    assert.match(add.description!, /Notes/);
    assert.equal(add.annotations?.destructiveHint, false);
    assert.deepEqual(add.inputSchema.required, ['text']);

    const result = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: '# Shopping\nOat milk' } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { id: 'n1', title: '# Shopping' });
    const delivered = hook.calls().at(-1)!;
    assert.equal(delivered.body.tool, 'add_note');
    assert.deepEqual(delivered.body.arguments, { text: '# Shopping\nOat milk' });
    assert.equal(delivered.body.app.name, 'Claude');
    assert.match(delivered.body.user.id, /^usr_/);
    assert.notEqual(delivered.body.user.id, p.user.id, 'the add-on sees a pseudonym');
    assert.equal(delivered.headers['webhook-id'], delivered.body.call.id);

    const search = await client.callTool({ name: `${p.addonId}__search_notes`, arguments: {} });
    assert.deepEqual(search.content, [{ type: 'text', text: '# Shopping\nOat milk' }]);

    const log = await p.client.get('/api/calls');
    assert.equal(log.status, 200);
    assert.deepEqual(log.body.items.map((i: any) => [i.tool, i.outcome, i.app]), [
      ['search_notes', 'ok', 'Claude'],
      ['add_note', 'ok', 'Claude'],
    ]);

    // Refresh: a new access token from the refresh token, and it works.
    const before = provider.saved!;
    const meta = await (await fetch(`${tp.url}/.well-known/oauth-authorization-server`)).json();
    const res = await fetch(meta.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: before.refresh_token!, client_id: (provider.client as any).client_id }),
    });
    assert.equal(res.status, 200);
    const fresh = await res.json();
    assert.notEqual(fresh.access_token, before.access_token);
    provider.saved = { ...before, ...fresh };
    assert.equal((await client.listTools()).tools.length, 2);
  });

  it('refuses bad arguments as a tool error, one sentence per problem, and never calls the add-on', async () => {
    const p = await personWithNotes();
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const before = hook.calls().length;
    const r = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'x'.repeat(5001), colour: 'red' } });
    assert.equal(r.isError, true);
    const text = (r.content as any[])[0].text as string;
    assert.match(text, /text/);
    assert.match(text, /colour/);
    assert.equal(text.split('\n').length, 2);
    const proto = await client.callTool({ name: `${p.addonId}__add_note`, arguments: JSON.parse('{"text":"a","__proto__":{"x":1}}') });
    assert.equal(proto.isError, true);
    assert.equal(hook.calls().length, before);
  });

  it('takes an inputSchema with shared definitions and optional fields, lists it written out, and enforces it', async () => {
    // The shape Pydantic v2 and zod 4 write: a model under `$defs`, used twice, annotated beside
    // `$ref`; an optional field as anyOf of a schema and null.
    const place = {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 60, description: 'City.' }, zip: { type: 'string', maxLength: 10, pattern: '^[0-9]+$', description: 'Postcode.' } },
      required: ['city'],
      additionalProperties: false,
    };
    const p = await setupPerson(tp.url, hook, { add_note: true }, 'notes', (m) => {
      const add = m.tools.find((t) => t.name === 'add_note')! as Record<string, unknown>;
      delete add.arguments;
      add.inputSchema = {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: {
          text: { type: 'string', maxLength: 5000, description: 'The note, in Markdown.' },
          from: { $ref: '#/$defs/Place', description: 'Where it was written.' },
          to: { $ref: '#/$defs/Place' },
          tag: { anyOf: [{ type: 'string', maxLength: 10 }, { type: 'null' }], default: null, description: 'A tag.' },
        },
        required: ['text', 'from'],
        additionalProperties: false,
        $defs: { Place: place },
      };
    });
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const { tools } = await client.listTools();
    const listed = tools.find((t) => t.name === `${p.addonId}__add_note`)!.inputSchema as any;
    assert.equal(JSON.stringify(listed).includes('$ref'), false);
    assert.equal(listed.$defs, undefined);
    assert.deepEqual(listed.properties.from, { ...place, description: 'Where it was written.' });
    assert.deepEqual(listed.properties.to, place);
    assert.deepEqual(listed.properties.tag, { type: ['string', 'null'], maxLength: 10, default: null, description: 'A tag.' });

    const before = hook.calls().length;
    const bad = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'a', from: { city: 'Lyon', zip: 'x1' }, to: { zip: '1' }, tag: 5 } });
    assert.equal(bad.isError, true);
    const problems = (bad.content as any[])[0].text as string;
    assert.deepEqual(problems.split('\n').slice(0, 2), ['Argument `from.zip` must match the pattern `^[0-9]+$`.', 'Missing required argument `to.city`.']);
    assert.match(problems.split('\n')[2] ?? '', /`tag`/);
    assert.equal(hook.calls().length, before, 'nothing reached the add-on');

    const ok = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'a', from: { city: 'Lyon', zip: '69001' }, tag: null } });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.deepEqual(hook.calls().at(-1)!.body.arguments, { text: 'a', from: { city: 'Lyon', zip: '69001' }, tag: null });
  });

  it('takes a draft-07 inputSchema as MCP SDK v1 servers write it, and lists it as 2020-12 that a strict client compiles', async () => {
    const { default: Ajv2020 } = await import('ajv/dist/2020.js');
    const p = await setupPerson(tp.url, hook, { add_note: true }, 'notes', (m) => {
      const add = m.tools.find((t) => t.name === 'add_note')! as Record<string, unknown>;
      delete add.arguments;
      // zod-to-json-schema's draft-07: `definitions`, a tuple as a list of `items`.
      add.inputSchema = {
        type: 'object',
        properties: {
          text: { type: 'string', maxLength: 5000 },
          at: { type: 'array', minItems: 2, maxItems: 2, items: [{ type: 'number' }, { type: 'number' }], description: 'Latitude, longitude.' },
          place: { $ref: '#/definitions/Place' },
        },
        required: ['text'],
        additionalProperties: false,
        definitions: { Place: { type: 'object', properties: { city: { type: 'string', maxLength: 60 } }, required: ['city'], additionalProperties: false } },
        $schema: 'http://json-schema.org/draft-07/schema#',
      };
    });
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const { tools } = await client.listTools();
    const listed = tools.find((t) => t.name === `${p.addonId}__add_note`)!.inputSchema as any;
    assert.equal(listed.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(listed.definitions, undefined);
    assert.deepEqual(listed.properties.at, { type: 'array', minItems: 2, maxItems: 2, prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, description: 'Latitude, longitude.' });
    // What Claude Desktop does with a tool's schema: a strict 2020-12 compile.
    assert.doesNotThrow(() => new Ajv2020({ strict: true }).compile(listed));

    const before = hook.calls().length;
    const bad = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'a', at: [1, 'x'], place: {} } });
    assert.equal(bad.isError, true);
    const problems = (bad.content as any[])[0].text as string;
    assert.deepEqual(problems.split('\n'), ['Argument `at[1]` must be a number.', 'Missing required argument `place.city`.']);
    assert.equal(hook.calls().length, before, 'nothing reached the add-on');
    const ok = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'a', at: [45.7, 4.8], place: { city: 'Lyon' } } });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.deepEqual(hook.calls().at(-1)!.body.arguments, { text: 'a', at: [45.7, 4.8], place: { city: 'Lyon' } });
  });

  it('says a switched-off tool is switched off, and a tool that does not exist that it does not', async () => {
    const p = await personWithNotes({ add_note: true });
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const off = await client.callTool({ name: `${p.addonId}__search_notes`, arguments: {} });
    const none = await client.callTool({ name: `${p.addonId}__no_such_tool`, arguments: {} });
    assert.equal(off.isError, true);
    assert.match((off.content as any[])[0].text, /^The tool ".*__search_notes" is switched off in the person's Toolport\. They can switch it on at .*\/addons/);
    assert.match((none.content as any[])[0].text, /^The tool ".*__no_such_tool" does not exist\./);
  });

  it('with AI apps off: empty tools/list, calls refused with a clear sentence', async () => {
    const p = await personWithNotes();
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    await p.client.patch('/api/settings', { aiApps: false });
    assert.deepEqual((await client.listTools()).tools, []);
    const r = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: 'x' } });
    assert.equal(r.isError, true);
    assert.match((r.content as any[])[0].text, /AI apps are turned off/);
  });

  it('stops a revoked app at once', async () => {
    const p = await personWithNotes();
    const { client } = await connectApp(p.user.mcpUrl, p.client, { name: 'Revoked App' });
    const conns = await p.client.get('/api/connections');
    const conn = conns.body.find((c: any) => (c.appName ?? c.app) === 'Revoked App');
    assert.ok(conn, JSON.stringify(conns.body));
    assert.equal((await p.client.delete(`/api/connections/${conn.id}`)).status, 204);
    await assert.rejects(client.listTools());
  });
});

describe('the MCP endpoint refuses what the specs refuse', () => {
  let p: Awaited<ReturnType<typeof personWithNotes>>;
  let token: string;
  before(async () => {
    p = await personWithNotes();
    const provider = new TestOAuthProvider('Raw');
    await connectApp(p.user.mcpUrl, p.client, { provider });
    token = provider.saved!.access_token;
  });
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

  it('401 with a resource_metadata challenge without a token', async () => {
    const res = await post(p.user.mcpUrl, list);
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate')!;
    assert.match(challenge, /^Bearer /);
    assert.ok(challenge.includes(`resource_metadata="${tp.url}/.well-known/oauth-protected-resource/u/`));
    const prm = await (await fetch(`${tp.url}/.well-known/oauth-protected-resource${new URL(p.user.mcpUrl).pathname}`)).json();
    assert.equal(prm.resource, p.user.mcpUrl);
  });

  it('refuses a forged, alg:none or wrong-audience token, and a token in the query string', async () => {
    const [h, b] = token.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${b}.`;
    for (const bad of [`${h}.${b}.AAAA`, none, 'garbage']) {
      const res = await post(p.user.mcpUrl, list, { authorization: `Bearer ${bad}` });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate')!, /invalid_token/);
    }
    const other = await newPerson(tp.url);
    await other.client.patch('/api/settings', { aiApps: true });
    const wrongAud = await post(other.user.mcpUrl, list, { authorization: `Bearer ${token}` });
    assert.equal(wrongAud.status, 401);
    const inQuery = await post(`${p.user.mcpUrl}?access_token=${token}`, list);
    assert.equal(inQuery.status, 400);
  });

  it('refuses a batch, broken JSON, a foreign Origin and GET/DELETE (stateless)', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const ok = await post(p.user.mcpUrl, list, auth);
    assert.equal(ok.status, 200);
    const batch = await post(p.user.mcpUrl, [list, { ...list, id: 2 }], auth);
    assert.equal(batch.status, 400);
    assert.equal((await batch.json()).error.code, -32600);
    const broken = await post(p.user.mcpUrl, '{"jsonrpc":', auth);
    assert.equal(broken.status, 400);
    assert.equal((await broken.json()).error.code, -32700);
    const foreign = await post(p.user.mcpUrl, list, { ...auth, origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    // A GET is 2025-11-25's change stream (mcp-list-changed.test.ts); without Accept: text/event-stream, or under 2026-07-28, there is none.
    for (const headers of [{ ...auth, accept: 'application/json' }, { ...auth, accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' }]) {
      assert.equal((await fetch(p.user.mcpUrl, { headers })).status, 405);
    }
    const huge = await post(p.user.mcpUrl, { ...list, params: { pad: 'x'.repeat(2 * 1024 * 1024) } }, auth);
    assert.equal(huge.status, 413);
  });

  it('answers ordinary tools/list and tools/call exactly as the SDK path does, through both direct writers (JSON and SSE), and leaves unusual forms to the SDK', async () => {
    const { CallToolResultSchema, ListToolsResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const auth = { authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-06-18' };
    const rpc = async (res: Response) => {
      const text = await res.text();
      // A streamed answer is one SSE message: its data line is the JSON-RPC message.
      const data = text.trimStart().startsWith('{') ? text : /^data: (.*)$/m.exec(text)![1]!;
      return JSON.parse(data);
    };
    // The ordinary form (answered directly) and the same request with a progress token (the SDK's Server).
    const fastList = await rpc(await post(p.user.mcpUrl, { ...list, id: 'list-a' }, auth));
    const sdkList = await rpc(await post(p.user.mcpUrl, { ...list, id: 'list-b', params: { _meta: { progressToken: 'p1' } } }, auth));
    assert.equal(fastList.id, 'list-a');
    assert.equal(fastList.jsonrpc, '2.0');
    ListToolsResultSchema.parse(fastList.result);
    assert.deepEqual(fastList.result, sdkList.result);

    // The reference for tools/call: the same app off Node (app.request(), no Node response to write
    // to), where every call goes through the SDK's Server and transport.
    const offNode = createApp(tp.svc);
    const sdkPost = (body: unknown) =>
      offNode.request(p.user.mcpUrl, {
        method: 'POST',
        headers: { host: new URL(p.user.mcpUrl).host, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth },
        body: JSON.stringify(body),
      });
    const call = (id: unknown, meta?: object) => ({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: `${p.addonId}__search_notes`, arguments: { query: 'x' }, ...(meta ? { _meta: meta } : {}) },
    });

    // The JSON writer.
    const [fastRes, sdkRes] = [await post(p.user.mcpUrl, call(7), auth), await sdkPost(call(7))];
    assert.equal(fastRes.status, sdkRes.status);
    assert.equal(fastRes.headers.get('content-type'), 'application/json');
    assert.equal(fastRes.headers.get('content-type'), sdkRes.headers.get('content-type'));
    const fast = await rpc(fastRes);
    assert.equal(fast.id, 7);
    CallToolResultSchema.parse(fast.result);
    assert.deepEqual(fast, await rpc(sdkRes));

    // The SSE writer: a call with a progress token is streamed, with the SDK transport's headers and
    // framing (its writeSSEEvent); the SDK client reading one is in mcp-approvals.test.ts.
    const [streamedRes, sdkStreamedRes] = [await post(p.user.mcpUrl, call(8, { progressToken: 'p2' }), auth), await sdkPost(call(8, { progressToken: 'p2' }))];
    assert.equal(streamedRes.status, sdkStreamedRes.status);
    for (const name of ['content-type', 'cache-control']) assert.equal(streamedRes.headers.get(name), sdkStreamedRes.headers.get(name), name);
    assert.equal(streamedRes.headers.get('content-type'), 'text/event-stream');
    assert.equal(streamedRes.headers.get('cache-control'), 'no-cache, no-transform');
    // Every answer carries the security headers.
    for (const res of [fastRes, streamedRes, sdkRes, await fetch(`${tp.url}/healthz`)]) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    }
    const [streamedText, sdkStreamedText] = [await streamedRes.text(), await sdkStreamedRes.text()];
    for (const text of [streamedText, sdkStreamedText]) assert.match(text, /^event: message\ndata: \{[^\n]*\}\n\n$/, 'one SSE message event');
    const streamed = await rpc(new Response(streamedText));
    assert.equal(streamed.id, 8);
    assert.deepEqual(streamed, await rpc(new Response(sdkStreamedText)));
    assert.deepEqual(fast.result, streamed.result);

    // Forms the direct answer does not take still get the SDK's own answers, and reach no add-on.
    const before = hook.calls().length;
    // A fractional id is no MCP request id: Invalid Request (mcp-revisions.test.ts has the rest).
    const fractional = await post(p.user.mcpUrl, call(1.5), auth);
    assert.equal(fractional.status, 400);
    assert.equal((await fractional.json()).error.code, -32600);
    const arrayArgs = await rpc(await post(p.user.mcpUrl, { ...call(9), params: { name: `${p.addonId}__search_notes`, arguments: ['x'] } }, auth));
    assert.equal(arrayArgs.id, 9);
    assert.ok(arrayArgs.error || arrayArgs.result?.isError, JSON.stringify(arrayArgs));
    const noAccept = await post(p.user.mcpUrl, call(10), { ...auth, accept: 'application/json' });
    assert.equal(noAccept.status, 406);
    assert.equal(hook.calls().length, before);
  });

  it('sends a large tools/list gzipped to an app that accepts it, the same answer byte for byte', async () => {
    // 48 tools (three add-ons of 16): past the size from which listings are compressed.
    const dev = await newPerson(tp.url, 'many');
    await dev.client.patch('/api/settings', { aiApps: true });
    for (const n of [1, 2, 3]) {
      const id = `many-${process.pid % 1000}-${n}`;
      const tools = Array.from({ length: 16 }, (_, i) => ({
        name: `lookup_${i}`,
        title: `Look up item ${i}`,
        summary: `Finds items of kind ${i} matching the query and returns their ids, names and a short preview.`,
        readOnly: true,
        arguments: [{ name: 'query', summary: 'Words to look for.', kind: { text: { maxLength: 200 } } }],
      }));
      assert.equal((await dev.client.post('/api/addons', { id, name: `Many ${n}`, description: 'Many tools.', webhook: hook.url, tools })).status, 201);
      assert.equal((await dev.client.post('/api/installs', { addon: id })).status, 201);
      assert.equal((await dev.client.patch(`/api/installs/${id}`, { tools: Object.fromEntries(tools.map((t) => [t.name, true])) })).status, 200);
    }
    const provider = new TestOAuthProvider('Gzip');
    const { client } = await connectApp(dev.user.mcpUrl, dev.client, { provider });
    // Raw bytes: fetch would decompress them out of sight.
    const raw = (id: unknown, encoding: string) =>
      new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const req = http.request(dev.user.mcpUrl, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${provider.saved!.access_token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'accept-encoding': encoding,
          },
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ ...list, id }));
      });
    for (const id of [1, 'list-"quoted"-\u00e9', 2 ** 40]) {
      const plain = await raw(id, 'identity');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.body.length > 16 * 1024, `${plain.body.length} bytes`);
      const zipped = await raw(id, 'gzip, deflate');
      assert.equal(zipped.headers['content-encoding'], 'gzip');
      assert.equal(zipped.headers.vary, 'accept-encoding');
      assert.ok(zipped.body.length * 5 < plain.body.length, `${zipped.body.length} gzipped of ${plain.body.length}`);
      assert.ok(gunzipSync(zipped.body).equals(plain.body), 'the same answer byte for byte');
      const answer = JSON.parse(plain.body.toString());
      assert.equal(answer.id, id);
      assert.equal(answer.result.tools.length, 48);
    }
    assert.equal((await raw(3, 'gzip;q=0, br')).headers['content-encoding'], undefined, 'refused with q=0');
    const longId = 'x'.repeat(70_000);
    const long = await raw(longId, 'gzip');
    assert.equal(long.headers['content-encoding'], undefined, 'an id too long for one stored block: sent plain');
    assert.equal(JSON.parse(long.body.toString()).id, longId);
    assert.equal((await raw(3, '*')).headers['content-encoding'], 'gzip');
    // The SDK's own client (fetch) gets and reads it.
    assert.equal((await client.listTools()).tools.length, 48);
  });

  it('refuses a bad protocol version header', async () => {
    const res = await post(p.user.mcpUrl, list, { authorization: `Bearer ${token}`, 'mcp-protocol-version': '1999-01-01' });
    assert.equal(res.status, 400);
  });
});
