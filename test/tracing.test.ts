import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { ConfigError, parseConfig, type Logger } from '@toolport/core';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, TARGET, type Toolport } from './helpers/target';

// The process's tracer provider, registered before Toolport starts: Toolport only uses the API.
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });

type Line = { level: string; msg: string } & Record<string, unknown>;
const lines: Line[] = [];
const capture: Logger = {
  info: (msg, f) => lines.push({ level: 'info', msg, ...f }),
  warn: (msg, f) => lines.push({ level: 'warn', msg, ...f }),
  error: (msg, f) => lines.push({ level: 'error', msg, ...f }),
};

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  tp = await startToolport({ log: capture });
  hook = await startAddonServer({
    add_note: (b) => ({ json: { id: 'n1', title: String(b.arguments.text).split('\n')[0] } }),
    delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }),
  });
  // A confirm answer of null would skip the approval; describe the call so the person is asked.
  hook.onConfirm((b) => ({ confirm: { message: `Delete the note ${b.arguments.id}?`, style: 'destructive' } }));
});
after(async () => {
  await hook?.close();
  await tp?.stop();
  await provider.shutdown();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The finished spans of one trace, once `names` are all there (spans end as their work settles). */
async function traceOf(traceId: string, names: string[]): Promise<ReadableSpan[]> {
  for (let i = 0; ; i++) {
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    if (names.every((n) => spans.some((s) => s.name === n)) || i > 100) return spans;
    await sleep(50);
  }
}

async function spanWith(name: string, key: string, value: string): Promise<ReadableSpan> {
  for (let i = 0; i < 100; i++) {
    const found = exporter.getFinishedSpans().find((s) => s.name === name && s.attributes[key] === value);
    if (found) return found;
    await sleep(50);
  }
  throw new Error(`no ${name} span with ${key}=${value}`);
}

async function personWithNotes(tools: Record<string, boolean>) {
  const dev = await newPerson(tp.url, 'dev');
  const id = `trace-${randomBytes(3).toString('hex')}`;
  const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
  assert.equal(created.status, 201, created.text);
  hook.setSecret(created.body.signingSecret);
  await listPublicly(tp.url, id, dev);
  const person = await newPerson(tp.url);
  assert.equal((await person.client.patch('/api/settings', { aiApps: true })).status, 200);
  assert.equal((await person.client.post('/api/installs', { addon: id })).status, 201);
  assert.equal((await person.client.patch(`/api/installs/${id}`, { tools })).status, 200);
  return { ...person, addonId: id };
}

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('traces', () => {
  it('follow a tool call from the MCP request through the queue and the worker to the webhook, without its arguments', async () => {
    const p = await personWithNotes({ add_note: true });
    const { client, provider: oauth } = await connectApp(p.user.mcpUrl, p.client, { name: 'Claude' });
    const secretText = `private-${randomBytes(8).toString('hex')}`;
    const result = await client.callTool({ name: `${p.addonId}__add_note`, arguments: { text: secretText } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const callId = hook.calls().at(-1)!.body.call.id as string;

    const call = await spanWith('mcp tools/call', 'toolport.call.id', callId);
    const traceId = call.spanContext().traceId;
    const spans = await traceOf(traceId, ['POST /u/:userKey/mcp', 'mcp tools/call', 'dispatch', 'deliver', 'webhook POST']);
    const one = (name: string) => {
      const found = spans.filter((s) => s.name === name);
      assert.equal(found.length, 1, `one ${name} span in ${spans.map((s) => s.name).join(', ')}`);
      return found[0]!;
    };
    const http = one('POST /u/:userKey/mcp');
    const dispatch = one('dispatch');
    const deliver = one('deliver');
    const webhook = one('webhook POST');

    // One trace, parent to child: request, call, dispatch, delivery attempt, the POST.
    assert.equal(parentOf(call), http.spanContext().spanId);
    assert.equal(parentOf(dispatch), call.spanContext().spanId);
    assert.equal(parentOf(deliver), dispatch.spanContext().spanId);
    assert.equal(parentOf(webhook), deliver.spanContext().spanId);
    if (TARGET === 'services') {
      // The worker's side was joined through the job's traceparent, not through this process's context.
      assert.equal(deliver.parentSpanContext?.isRemote, true, 'the deliver span continues the traceparent carried by the BullMQ job');
    }

    assert.equal(http.attributes['http.route'], '/u/:userKey/mcp');
    assert.equal(http.attributes['http.response.status_code'], 200);
    assert.equal(call.attributes['toolport.addon.id'], p.addonId);
    assert.equal(call.attributes['toolport.tool.name'], 'add_note');
    assert.equal(call.attributes['toolport.outcome'], 'ok');
    assert.equal(dispatch.attributes['toolport.dispatch.outcome'], 'result');
    assert.equal(deliver.attributes['toolport.delivery.attempt'], 1);
    assert.equal(deliver.attributes['http.status_code'], 200);
    assert.equal(webhook.attributes['http.status_code'], 200);
    assert.equal(webhook.attributes['server.address'], new URL(hook.url).host, 'the host only, no path');

    // Nothing the app sent as arguments, and no token, is on any span.
    const everything = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    assert.ok(!everything.includes(secretText), 'no span carries the arguments');
    assert.ok(!everything.includes(oauth.saved!.access_token), 'no span carries the access token');
    assert.ok(!everything.includes('/hook'), 'no span carries the webhook path');

    // The request's log line joins the trace.
    const logged = lines.find((l) => l.msg === 'request' && l.route === '/u/:userKey/mcp' && l.traceId === traceId);
    assert.ok(logged, 'the MCP request was logged with its trace id');
  });

  it('time the wait for the person on a destructive call', async () => {
    const p = await personWithNotes({ delete_note: true });
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const pending = client.callTool({ name: `${p.addonId}__delete_note`, arguments: { id: 'n7' } });
    let approval: any;
    for (let i = 0; i < 200 && !approval; i++) {
      approval = (await p.client.get('/api/approvals?status=pending')).body[0];
      if (!approval) await sleep(50);
    }
    assert.ok(approval, 'the approval appeared');
    assert.equal((await p.client.post(`/api/approvals/${approval.id}/decision`, { decision: 'allow' })).status, 200);
    const result = await pending;
    assert.equal(result.isError, undefined, JSON.stringify(result));

    const callId = hook.calls().at(-1)!.body.call.id as string;
    const call = await spanWith('mcp tools/call', 'toolport.call.id', callId);
    const traceId = call.spanContext().traceId;
    const spans = await traceOf(traceId, ['approval wait', 'webhook POST', 'POST /u/:userKey/mcp']);
    const wait = spans.find((s) => s.name === 'approval wait');
    assert.ok(wait, `an approval wait span in ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(parentOf(wait), call.spanContext().spanId);
    assert.equal(wait.attributes['toolport.approval.decision'], 'allowed');
    assert.ok(spans.some((s) => s.name === 'webhook POST'), 'the call ran after the approval, in the same trace');

    // The request's handler returned while the call waited (its answer was written later): the
    // request's span and log line still end with the answer, not when the wait began.
    const request = spans.find((s) => s.name === 'POST /u/:userKey/mcp')!;
    assert.equal(parentOf(call), request.spanContext().spanId);
    // The SDK anchors each span's start on Date.now(), in whole milliseconds, and adds a precise
    // duration: the ends of two spans compare to within 1 ms, durations exactly.
    const ms = ([s, ns]: [number, number]) => s * 1e3 + ns / 1e6;
    assert.ok(ms(request.endTime) >= ms(call.endTime) - 1, 'the request ends after the call');
    assert.ok(ms(request.duration) >= ms(wait.duration), 'the request lasts through the wait');
    assert.equal(request.attributes['http.response.status_code'], 200);
    const waitedMs = wait.duration[0] * 1e3 + wait.duration[1] / 1e6;
    const logged = lines.find((l) => l.msg === 'request' && l.traceId === traceId);
    assert.ok(logged, 'the held request was logged');
    assert.equal(logged.status, 200);
    assert.ok(Number(logged.durationMs) >= Math.floor(waitedMs), `logged ${logged.durationMs} ms for a wait of ${waitedMs} ms`);
  });
});

describe('request logs', () => {
  it('write one line per request with the route pattern, status and request id, and no secrets', async () => {
    const { client, password } = await newPerson(tp.url);
    const cookie = [...client.cookies.values()][0]!;
    assert.ok(cookie);
    const requestId = `req-${randomBytes(6).toString('hex')}`;
    const token = `tok-${randomBytes(8).toString('hex')}`;
    const me = await client.get(`/api/me?access_token=${token}`, { 'x-request-id': requestId });
    assert.equal(me.status, 200);
    for (const path of ['/healthz', '/readyz', '/metrics']) await fetch(`${tp.url}${path}`);
    await client.get(`/api/me`, { 'x-request-id': `${requestId}-after` });

    let line: Line | undefined;
    for (let i = 0; i < 100 && !line; i++) {
      line = lines.find((l) => l.msg === 'request' && l.requestId === requestId);
      if (!line) await sleep(20);
    }
    assert.ok(line, 'the request was logged');
    assert.equal(line.level, 'info');
    assert.equal(line.method, 'GET');
    assert.equal(line.route, '/api/me');
    assert.equal(line.status, 200);
    assert.equal(typeof line.durationMs, 'number');
    assert.match(String(line.traceId), /^[0-9a-f]{32}$/, 'a traced request carries its trace id');

    // Probes and scrapes are not logged; the request after them is, so none were just late.
    assert.ok(lines.some((l) => l.requestId === `${requestId}-after`));
    const routes = lines.filter((l) => l.msg === 'request').map((l) => l.route);
    for (const quiet of ['/healthz', '/readyz', '/metrics']) assert.ok(!routes.includes(quiet), `${quiet} is not logged`);

    const all = JSON.stringify(lines);
    assert.ok(!all.includes(cookie), 'no cookie value');
    assert.ok(!all.includes(token), 'no query string');
    assert.ok(!all.includes(password), 'no password');
  });
});

describe('the OTLP setting', () => {
  it('is parsed with the others: a base URL whose /v1/traces receives the spans; a bad one is reported', () => {
    assert.equal(parseConfig({}).tracing, undefined);
    const on = parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318/', OTEL_SERVICE_NAME: 'toolport-eu' });
    assert.deepEqual(on.tracing, { endpoint: 'http://otel-collector:4318', tracesUrl: 'http://otel-collector:4318/v1/traces', serviceName: 'toolport-eu' });
    assert.throws(
      () => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url', PORT: 'x' }),
      (err: unknown) => err instanceof ConfigError && err.problems.length === 2 && err.problems.some((p) => p.startsWith('OTEL_EXPORTER_OTLP_ENDPOINT')),
    );
    assert.throws(() => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }), /OTEL_EXPORTER_OTLP_ENDPOINT must be http or https/);
  });
});
