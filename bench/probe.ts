// In-process probe of the call path: Toolport, a real add-on and the client in one process, so one
// CPU profile and one set of counters cover a call end to end. Not a benchmark (the client shares
// the CPU): it says where a call's time goes. Usage:
//   node --import tsx bench/probe.ts                      # embedded (in-memory PGlite), c=1
//   N=3000 C=16 node --import tsx bench/probe.ts          # 3,000 calls, 16 at a time
//   TEST_TARGET=services node --import tsx bench/probe.ts # Postgres + Redis/BullMQ (Redis commands per call too)
//   PROBE_FILE=1 ...      file-backed PGlite, as `npm start` runs it
//   PROBE_SPANS=1 ...     p50 of each OpenTelemetry span (request, mcp tools/call, dispatch, deliver, webhook POST)
//   PROBE_PROF=out.cpuprofile ...  a CPU profile of the tools/call phase only (read it with bench/profile-top.ts)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { PGlite } from '@electric-sql/pglite';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Redis } from 'ioredis';
import { createLogger, parseConfig } from '@toolport/core';
import { startServer } from '../apps/api/src/server';
import { startAddonServer, personWithNotes } from '../test/helpers/addon-server';
import { freePort, REDIS_TEST_URL, startToolport } from '../test/helpers/target';
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

const limits = { LIMIT_CALLS_PER_PERSON: '100000', LIMIT_CALLS_PER_APP: '100000' };
let tp: { config: { publicUrl: string }; stop(): Promise<void> };
if (process.env.PROBE_FILE === '1') {
  const port = await freePort();
  const config = parseConfig({ PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: mkdtempSync(path.join(tmpdir(), 'toolport-probe-')), ...limits });
  const server = await startServer(config, { log: createLogger({}, true) });
  tp = { config, stop: () => server.close() };
} else tp = await startToolport({ env: limits, log: createLogger({}, true) });

const hook = await startAddonServer({ search_notes: () => ({ content: [{ type: 'text', text: 'none' }] }) });
const base = tp.config.publicUrl;
const person = await personWithNotes(base, hook, { search_notes: true });
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

await run('GET /healthz', async () => void (await request('GET', `${base}/healthz`)));
await run('tools/list', rpc('tools/list', {}));

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
await run('tools/call', rpc('tools/call', { name: `${person.addonId}__search_notes`, arguments: { query: 'x' } }));
if (process.env.PROBE_PROF) writeFileSync(process.env.PROBE_PROF, JSON.stringify((await session.post('Profiler.stop')).profile));

for (const [key, s] of statements) if (s.n >= N / 20) console.log(`  PGlite ${(s.n / N).toFixed(2)} per call, ${(s.ms / N).toFixed(2)} ms per call: ${key}`);
if (redis) {
  const after = await commandCounts();
  // Every Redis command, including those run inside scripts (the server's own count, shared with other clients).
  for (const [cmd, n] of Object.entries(after)) if (n - (before[cmd] ?? 0) >= N / 10) console.log(`  Redis ${cmd}: ${((n - (before[cmd] ?? 0)) / N).toFixed(2)} per call`);
  redis.disconnect();
}
const bySpan = new Map<string, number[]>();
for (const s of spans.getFinishedSpans()) bySpan.set(s.name, [...(bySpan.get(s.name) ?? []), s.duration[0] * 1e3 + s.duration[1] / 1e6]);
for (const [name, d] of bySpan) console.log(`  span ${name}: p50 ${p(d.sort((a, b) => a - b), 0.5)} ms (${d.length})`);

await hook.close();
await tp.stop();
process.exit(0);
