// Issue #45, "export to the operator's systems": with OTEL_EXPORTER_OTLP_ENDPOINT set, audit events
// go out as OpenTelemetry log records (OTLP/HTTP, JSON) to an OTLP receiver this test starts. The
// database is the queue: with the receiver down while calls go on, nothing is lost, one line says
// so, and once it answers again every event arrives, each chain in order.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '@toolport/core';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { captureLog } from './helpers/log';
import { connectApp } from './helpers/mcp';
import { freePort, startToolport, TARGET, UNLIMITED_CALLS, type Toolport } from './helpers/target';

interface Received {
  chain: string;
  seq: number;
  kind: string;
  hash: string;
  prev?: string;
  time: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP logs receiver: checks each body's shape as the OTLP JSON encoding has it, and keeps the records. */
class Receiver {
  readonly records: Received[] = [];
  readonly problems: string[] = [];
  readonly resources: Array<Record<string, unknown>> = [];
  private server?: http.Server;
  constructor(readonly port: number) {}

  async start() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/logs') {
          res.writeHead(404).end();
          return;
        }
        try {
          assert.match(req.headers['content-type'] ?? '', /^application\/json/);
          this.take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (err) {
          this.problems.push((err as Error).message);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  /** Down: connections refused from now on, and the open ones cut. */
  async stop() {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private take(body: any) {
    assert.ok(Array.isArray(body.resourceLogs) && body.resourceLogs.length > 0, 'resourceLogs');
    for (const rl of body.resourceLogs) {
      const resource = attrs(rl.resource.attributes);
      this.resources.push(resource);
      for (const sl of rl.scopeLogs) {
        assert.equal(sl.scope.name, 'toolport.audit');
        for (const r of sl.logRecords) {
          const a = attrs(r.attributes);
          assert.match(r.timeUnixNano, /^\d+$/, 'nanoseconds as a decimal string, as OTLP JSON writes 64-bit integers');
          assert.equal(r.severityNumber, 9);
          assert.equal(typeof r.body.stringValue, 'string');
          this.records.push({ chain: a['toolport.audit.chain'] as string, seq: Number(a['toolport.audit.seq']), kind: r.body.stringValue, hash: a['toolport.audit.hash'] as string, prev: a['toolport.audit.prev'] as string | undefined, time: r.timeUnixNano, attributes: a });
        }
      }
    }
  }
}

/** OTLP's KeyValue list as a plain object (AnyValue's one field, arrays as arrays). */
function attrs(list: Array<{ key: string; value: Record<string, any> }>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const value = (v: Record<string, any>): unknown => {
    if ('stringValue' in v) return v.stringValue;
    if ('intValue' in v) {
      assert.equal(typeof v.intValue, 'string', 'intValue is a decimal string in OTLP JSON');
      return v.intValue;
    }
    if ('boolValue' in v) return v.boolValue;
    if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(value);
    throw new Error(`unexpected AnyValue ${JSON.stringify(v)}`);
  };
  for (const { key, value: v } of list) out[key] = value(v);
  return out;
}

let receiver: Receiver;
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const captured = captureLog();

before(async () => {
  receiver = new Receiver(await freePort());
  await receiver.start();
  tp = await startToolport({ env: { ...UNLIMITED_CALLS, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}`, OTEL_SERVICE_NAME: 'toolport-audit-test' }, log: captured.log });
  hook = await startAddonServer({ add_note: () => ({ text: 'Added.' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
  await receiver?.stop();
});

/** Every event of the deployment as stored, in (chain, seq) order. */
async function stored() {
  await tp.svc.audit.flushed();
  const rows = await tp.svc.database.all<{ event: string }>('select event from audit_events order by chain, seq', []);
  return rows.map((r) => JSON.parse(r.event));
}

/** Waits until the receiver holds every stored event. */
async function allReceived(timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const want = await stored();
    const got = new Set(receiver.records.map((r) => `${r.chain}#${r.seq}`));
    const missing = want.filter((e) => !got.has(`${e.chain}#${e.seq}`));
    if (!missing.length) return want;
    if (Date.now() > until) assert.fail(`${missing.length} of ${want.length} events never arrived, e.g. ${missing[0].chain}#${missing[0].seq}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each chain arrived exactly once and in order: 1, 2, 3… per chain, no repeat. */
function inChainOrder() {
  const last = new Map<string, number>();
  for (const r of receiver.records) {
    const before = last.get(r.chain) ?? 0;
    assert.equal(r.seq, before + 1, `${r.chain}: seq ${r.seq} arrived after seq ${before}`);
    last.set(r.chain, r.seq);
  }
}

const outageLines = () => captured.logged.filter((l) => JSON.parse(l).m.startsWith('cannot send the audit events to the OTLP endpoint'));
const backLines = () => captured.logged.filter((l) => JSON.parse(l).m.startsWith('the OTLP endpoint takes the audit events again'));

async function calls(person: Awaited<ReturnType<typeof personWithNotes>>, n: number, label: string) {
  const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  for (let i = 0; i < n; i++) {
    const r = (await client.callTool({ name: `${person.addonId}__add_note`, arguments: { text: `${label}${i}` } })) as { isError?: boolean };
    assert.ok(!r.isError, 'the call is answered whatever the OTLP endpoint does');
  }
  await client.close();
}

describe('audit events as OpenTelemetry logs', () => {
  it('reads the endpoint as the OpenTelemetry SDKs do', () => {
    assert.equal(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).auditLogs?.url, 'http://collector:4318/v1/logs');
    const own = parseConfig({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'https://logs.example.com/otlp/in', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%20d,team=ops' });
    assert.equal(own.auditLogs?.url, 'https://logs.example.com/otlp/in', 'the signal-specific endpoint is used as it is');
    assert.deepEqual(own.auditLogs?.headers, { 'x-api-key': 'abc d', team: 'ops' });
    assert.equal(own.tracing, undefined, 'a logs endpoint alone turns no tracing on');
    assert.equal(parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_LOGS_EXPORTER: 'none' }).auditLogs, undefined);
    assert.equal(parseConfig({}).auditLogs, undefined);
    assert.throws(() => parseConfig({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'collector 4318' }), /OTEL_EXPORTER_OTLP_LOGS_ENDPOINT must be an absolute http\(s\) URL/);
    assert.throws(() => parseConfig({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'grpc://collector:4317' }), /OTEL_EXPORTER_OTLP_LOGS_ENDPOINT must be http or https, not "grpc:"/);
    assert.throws(() => parseConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'just-a-key' }), /OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs/);
  });

  it('sends every event as a log record: the kind as its body, chain, seq, hash, prev and the data as attributes, at its time', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'otlp');
    await calls(person, 5, 'a');
    const want = await allReceived();
    assert.deepEqual(receiver.problems, []);
    inChainOrder();
    assert.deepEqual(receiver.resources[0], { 'service.name': 'toolport-audit-test', 'toolport.role': 'all' }, 'the resource the traces have');
    const call = want.find((e) => e.chain === person.user.id && e.kind === 'call')!;
    const got = receiver.records.find((r) => r.chain === call.chain && r.seq === call.seq)!;
    assert.equal(got.kind, 'call');
    assert.equal(got.time, `${BigInt(Date.parse(call.at)) * 1_000_000n}`);
    assert.deepEqual(got.attributes, {
      'toolport.audit.chain': call.chain,
      'toolport.audit.seq': String(call.seq),
      'toolport.audit.hash': call.hash,
      'toolport.audit.prev': call.prev,
      ...Object.fromEntries(Object.entries(call.data).map(([k, v]) => [`toolport.audit.${k}`, v])),
    });
    const letIn = receiver.records.find((r) => r.chain === person.user.id && r.kind === 'app.let_in')!;
    assert.ok(Array.isArray(letIn.attributes['toolport.audit.tools']), 'a list stays a list');
    assert.equal(typeof letIn.attributes['toolport.audit.askEveryTool'], 'boolean');
  });

  it('with the receiver down while calls go on, keeps every event, says so once, and sends them all once it answers again', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'otlp-down');
    await allReceived();
    assert.equal(outageLines().length, 0);
    await receiver.stop();
    await calls(person, 20, 'down');
    // Several attempts fail meanwhile (1 s, 2 s, 4 s apart): one line for the whole outage.
    for (let i = 0; i < 100 && !outageLines().length; i++) await new Promise((r) => setTimeout(r, 100));
    await calls(person, 10, 'still-down');
    await new Promise((r) => setTimeout(r, 3_500));
    assert.equal(outageLines().length, 1, captured.logged.filter((l) => l.includes('OTLP')).join('\n'));
    const line = JSON.parse(outageLines()[0]!);
    assert.equal(line.m, 'cannot send the audit events to the OTLP endpoint; they are kept in the database and will be sent when it answers');
    assert.equal(line.f.endpoint, `http://127.0.0.1:${receiver.port}/v1/logs`);
    const sentBefore = receiver.records.length;

    await receiver.start();
    const want = await allReceived();
    assert.ok(receiver.records.length > sentBefore);
    assert.equal(receiver.records.length, want.length, 'each event once');
    inChainOrder();
    assert.deepEqual(receiver.problems, []);
    // The line follows the 2xx (and the cursors' move), a moment after the receiver has the events.
    for (let i = 0; i < 50 && !backLines().length; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(outageLines().length, 1);
    assert.equal(backLines().length, 1);
    assert.equal(JSON.parse(backLines()[0]!).f.endpoint, `http://127.0.0.1:${receiver.port}/v1/logs`);
    assert.equal(want.filter((e) => e.chain === person.user.id && e.kind === 'call').length, 30);
  });

  it('with two processes on one database, one sends at a time: each event still arrives once', { skip: TARGET !== 'services' ? 'two processes share one database on Postgres only' : false }, async () => {
    const second = await startToolport({ backing: tp.backing, keepBacking: true, env: { ...UNLIMITED_CALLS, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}` } });
    try {
      const person = await personWithNotes(second.url, hook, { add_note: true }, 'otlp-two');
      await calls(person, 10, 'two');
      await second.svc.audit.flushed();
      const want = await allReceived();
      assert.equal(receiver.records.length, want.length, 'each event once');
      inChainOrder();
    } finally {
      await second.stop();
    }
  });
});
