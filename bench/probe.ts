// In-process probe of the call path: Toolport, a real add-on and the client in one process, so one
// CPU profile and one set of counters cover a call end to end. Not a benchmark (the client shares
// the CPU): it says where a call's time goes. Usage:
//   node --import tsx bench/probe.ts                      # embedded (in-memory PGlite), c=1
//   N=3000 C=16 node --import tsx bench/probe.ts          # 3,000 calls, 16 at a time
//   TEST_TARGET=services node --import tsx bench/probe.ts # Postgres + Redis/BullMQ (Redis commands per call too)
//   PROBE_FILE=1 ...      file-backed PGlite, as `npm start` runs it
//   PROBE_SPANS=1 ...     p50 of each OpenTelemetry span (request, mcp tools/call, dispatch, deliver, webhook POST)
//   PROBE_PROF=out.cpuprofile ...  a CPU profile of the tools/call phase only (read it with bench/profile-top.ts)
//   PROBE_HELD=2000 ...   instead: that many destructive calls held for approval (C at a time not yet
//                         held): how fast they are held, CPU and statements per held call
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { PGlite } from '@electric-sql/pglite';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Redis } from 'ioredis';
import { createLogger, parseConfig } from '@toolport/core';
import { startServer } from '../apps/api/src/server';
import { startAddonServer, personWithNotes } from '../test/helpers/addon-server';
import { copyPgliteTemplate } from '../test/helpers/db-template';
import { mailDirs } from '../test/helpers/mail-files';
import { freePort, OPERATOR_ID, REDIS_TEST_URL, startToolport } from '../test/helpers/target';
import { request } from './lib/http';
import { connect } from './lib/setup';

const N = Number(process.env.N ?? 300);
const C = Number(process.env.C ?? 1);
const services = process.env.TEST_TARGET === 'services';

// PGlite statements per call and their wall time (embedded only).
const statements = new Map<string, { n: number; ms: number }>();
for (const method of ['query', 'exec'] as const) {
  const original = PGlite.prototype[method] as (...args: unknown[]) => Promise<unknown>;
  (PGlite.prototype as unknown as Record<string, unknown>)[method] = async function (this: PGlite, text: string, ...rest: unknown[]) {
    const key = `${method} ${String(text).slice(0, 80)}`;
    const started = performance.now();
    try {
      return await original.call(this, text, ...rest);
    } finally {
      const s = statements.get(key) ?? { n: 0, ms: 0 };
      statements.set(key, { n: s.n + 1, ms: s.ms + performance.now() - started });
    }
  };
}
const spans = new InMemorySpanExporter();
if (process.env.PROBE_SPANS === '1') new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).register();

const limits = { LIMIT_CALLS_PER_PERSON: '100000', LIMIT_CALLS_PER_APP: '100000', LIMIT_PENDING_APPROVALS: '10000' };
let tp: { config: { publicUrl: string }; svc: { approvals?: unknown }; stop(): Promise<void> };
if (process.env.PROBE_FILE === '1') {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'toolport-probe-'));
  // The migrated template holds the operator that approves the add-on's listing.
  await copyPgliteTemplate(path.join(dataDir, 'pgdata'));
  // The publisher confirms their email from the mail written here (no SMTP_URL).
  mailDirs.add(path.join(dataDir, 'mail'));
  const config = parseConfig({ PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir, TOOLPORT_OPERATORS: OPERATOR_ID, ...limits });
  const server = await startServer(config, { log: createLogger({}, true) });
  tp = { config, svc: server.svc, stop: () => server.close() };
} else tp = await startToolport({ env: limits, log: createLogger({}, true) });

const hook = await startAddonServer({ search_notes: () => ({ content: [{ type: 'text', text: 'none' }] }) });
hook.onConfirm((body: { arguments: { id: string } }) => ({ confirm: { message: `Delete the note ${body.arguments.id}?`, style: 'destructive' } }));
const base = tp.config.publicUrl;
const HELD = Number(process.env.PROBE_HELD ?? 0);
const person = await personWithNotes(base, hook, { search_notes: true, delete_note: HELD > 0 });
const app = await connect(base, person as never);
const headers = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${app.accessToken}`,
  'mcp-protocol-version': '2025-06-18',
};

const p = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!.toFixed(2);

async function run(label: string, send: () => Promise<void>) {
  const times: number[] = [];
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next++ < N) {
        const started = performance.now();
        await send();
        times.push(performance.now() - started);
      }
    }),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  console.log(`${label} c=${C}: p50 ${p(times, 0.5)} ms, p90 ${p(times, 0.9)} ms, ${Math.round((N / wall) * 1000)}/s, ${Math.round((cpu.user + cpu.system) / N)} µs CPU per request (all of this process)`);
}

let id = 0;
const rpc = (method: string, params: unknown) => async () => {
  const r = await request('POST', app.mcpUrl, headers, JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }));
  if (r.status !== 200 || r.text.includes('"isError":true')) throw new Error(r.text);
};

if (!HELD) {
  await run('GET /healthz', async () => void (await request('GET', `${base}/healthz`)));
  await run('tools/list', rpc('tools/list', {}));
}

spans.reset();
statements.clear();
const redis = services ? new Redis(REDIS_TEST_URL) : undefined;
const commandCounts = async () =>
  Object.fromEntries(
    ((await redis?.info('commandstats')) ?? '')
      .split('\n')
      .filter((l) => l.startsWith('cmdstat_'))
      .map((l) => [l.split(':')[0]!.slice(8), Number(/calls=(\d+)/.exec(l)![1])]),
  ) as Record<string, number>;
const before = await commandCounts();
const session = new Session();
if (process.env.PROBE_PROF) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
const release = HELD ? await holdCalls() : await run('tools/call', rpc('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'x' } }));
if (process.env.PROBE_PROF) writeFileSync(process.env.PROBE_PROF, JSON.stringify((await session.post('Profiler.stop')).profile));
await release?.();

const per = HELD || N;
for (const [key, s] of [...statements].sort((x, y) => y[1].ms - x[1].ms).slice(0, 8)) console.log(`  PGlite ${(s.n / per).toFixed(2)} per call, ${(s.ms / per).toFixed(2)} ms per call: ${key}`);
if (redis) {
  const after = await commandCounts();
  // Every Redis command, including those run inside scripts (the server's own count, shared with other clients).
  for (const [cmd, n] of Object.entries(after)) if (n - (before[cmd] ?? 0) >= per / 10) console.log(`  Redis ${cmd}: ${((n - (before[cmd] ?? 0)) / per).toFixed(2)} per call`);
  redis.disconnect();
}
const bySpan = new Map<string, number[]>();
for (const s of spans.getFinishedSpans()) bySpan.set(s.name, [...(bySpan.get(s.name) ?? []), s.duration[0] * 1e3 + s.duration[1] / 1e6]);
for (const [name, d] of bySpan) console.log(`  span ${name}: p50 ${p(d.sort((a, b) => a - b), 0.5)} ms (${d.length})`);

/** HELD destructive calls, at most C sent and not yet held; the server's own count says held. */
async function holdCalls() {
  const approvals = tp.svc.approvals as { waiting: number } | undefined;
  const waiting = () => approvals?.waiting ?? 0;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const u = new URL(app.mcpUrl);
  const reqs: http.ClientRequest[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < HELD; i++) {
    while (i - waiting() >= C) await new Promise((r) => setTimeout(r, 2));
    const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: `${person.addonId}__delete_note`, arguments: { id: `n${i}` } } });
    const req = http.request({ method: 'POST', hostname: u.hostname, port: u.port, path: u.pathname, agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => {});
    req.on('response', (res) => {
      throw new Error(`a held call was answered: ${res.statusCode}`);
    });
    req.end(body);
    reqs.push(req);
  }
  while (waiting() < HELD) await new Promise((r) => setTimeout(r, 2));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  console.log(`held ${HELD} calls (C=${C} not yet held at a time): ${Math.round((HELD / wall) * 1000)}/s, ${Math.round((cpu.user + cpu.system) / HELD)} µs CPU per held call (all of this process)`);
  return async () => {
    for (const r of reqs) r.destroy();
    while (waiting() > 0) await new Promise((r) => setTimeout(r, 20));
  };
}

await hook.close();
await tp.stop();
process.exit(0);
