// `npm run bench` (full: 5 s per point, median of 3) or `npm run bench -- --quick` (1.5 s, 1 run).
// Options: --only=a,b (scenario names or groups: load, roundtrip, scale, patterns), --no-scale.
// `--only=patterns` measures the argument patterns alone, in this process, without any server;
// `--only=expiry` the approval expiry alone, on servers of its own.
// See bench/README.md. Servers under test run in child processes; this process is the load generator.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { BENCH_DIR, startChild, type Child } from './lib/children';
import { request, rpcResult, openSse, type SseEvent } from './lib/http';
import { cpuSampler, type CpuUse } from './lib/cpu';
import { percentile, runPoint, type Point, type Target } from './lib/load';
import { runPointHttp, type HttpPoint } from './lib/load-http';
import { connect, cookieOf, fresh, generatedManifest, installAddon, person, type AppToken, type Person } from './lib/setup';
import { drawChart } from './lib/chart';
import { createBacking, freePort } from '../test/helpers/target';
import { measurePatterns, patternsMarkdown } from './patterns';

const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const SECONDS = QUICK ? 1.5 : 5;
const RUNS = QUICK ? 1 : 3;
const WARMUP_S = QUICK ? 0.5 : 1;
const CONCURRENCY = [1, 16, 32, 64];
const ROUND_TRIPS = QUICK ? 40 : 200;
const PENDING = Number(process.env.BENCH_PENDING ?? 10_000);
const PENDING_WINDOW = 256;
const STREAMS = Number(process.env.BENCH_STREAMS ?? 2_000);
const LOG_ROWS = Number(process.env.BENCH_LOG_ROWS ?? 1_000_000);
const EXPIRY = Number(process.env.BENCH_EXPIRY ?? 2_000);
const TASKS = Number(process.env.BENCH_TASKS ?? 10_000);
/** Pieces that start what they need themselves: `--only` naming just these starts nothing else. */
const STANDALONE = ['patterns', 'expiry'];
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const want = (name: string, group: string) => !only || only.includes(name) || only.includes(group);
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const log = (...a: unknown[]) => console.log(`[${new Date().toISOString().slice(11, 23)}]`, ...a);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r2 = (x: number) => Math.round(x * 100) / 100;

// ---------------------------------------------------------------------------------------------
// Servers under test
// ---------------------------------------------------------------------------------------------
const children: Child[] = [];
const cleanups: Array<() => Promise<void>> = [];
async function child(...args: Parameters<typeof startChild>) {
  const c = await startChild(...args);
  children.push(c);
  return c;
}

async function servicesBacking() {
  const backing = await createBacking({ target: 'services', label: 'tp_bench', pgAdminUrl: PG_ADMIN, redisUrl: REDIS_URL });
  cleanups.push(() => backing.drop());
  return backing.env as Record<string, string> & { DATABASE_URL: string };
}

async function toolport(name: string, env: Record<string, string>, publicPort?: number) {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `tp-bench-${name}-`));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  return child(name, 'servers/toolport.ts', {
    env: { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${publicPort ?? port}`, ...BENCH_LIMITS, ...env, DATA_DIR: dataDir },
  }).then((c) => ({ child: c, url: `http://127.0.0.1:${port}`, publicUrl: c.ready.url as string }));
}

/**
 * One person and one app drive all the load, so the per-person and per-app rate limits (600 and 300
 * calls a minute by default), the 20 waiting approvals per person and the 64 calls in flight per
 * add-on (exactly the bench's top concurrency, which a warm-up's stragglers pushed over) are raised:
 * the bench measures the path's capacity, not the limiter's refusals. The limiter still runs.
 */
const BENCH_LIMITS = { LIMIT_CALLS_PER_PERSON: '1000000', LIMIT_CALLS_PER_APP: '1000000', LIMIT_PENDING_APPROVALS: '10000', LIMIT_ADDON_CONCURRENCY: '1000', LIMIT_OPEN_TASKS: '20000' };

type Deployment = {
  name: 'embedded' | 'bullmq' | 'bullmq-split';
  url: string;
  child: Child;
  env: Record<string, string>;
  caller: Person;
  token: AppToken;
  lister4?: AppToken;
  lister800?: AppToken;
};

/** How the tables name a deployment. */
const DEPLOYMENT_LABEL: Record<Deployment['name'], string> = {
  embedded: 'embedded',
  bullmq: 'bullmq',
  'bullmq-split': 'bullmq, API + worker processes',
};

// ---------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------
const mcpHeaders = (token?: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});
const rpc = (n: number, method: string, params: unknown) => `{"jsonrpc":"2.0","id":${n},"method":"${method}","params":${JSON.stringify(params)}}`;
const isResult = (body: string) => body.includes('"result"') && !body.includes('"isError":true');

function webhookTarget(url: string, secret: string): Target {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const subject = 'usr_benchpseudonym';
  return {
    url,
    headers: { 'content-type': 'application/json' },
    body: (n) => {
      const id = `call_bench${n}_${process.pid}`;
      return `{"type":"tool.call","addon":"notes","tool":"search_notes","arguments":{"query":"milk"},"call":{"id":"${id}","deadline":"${new Date(Date.now() + 30_000).toISOString()}","attempt":1},"user":{"id":"${subject}"},"app":{"name":"Bench","clientId":"cli_bench"}}`;
    },
    perRequestHeaders: (n, body) => {
      const id = `call_bench${n}_${process.pid}`;
      const ts = Math.floor(Date.now() / 1000);
      const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
      return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` };
    },
    check: (b) => b.includes('"total"'),
  };
}

/** `count` initialized sessions, `parallel` opened at a time (a supergateway session starts a process). */
async function sdkSessions(url: string, count: number, parallel = 1): Promise<string[]> {
  const ids: string[] = [];
  const open = async () => {
    const init = await request('POST', url, mcpHeaders(), rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } }));
    const sid = init.headers['mcp-session-id'] as string;
    if (!sid) throw new Error(`no session: ${init.status} ${init.text}`);
    await request('POST', url, { ...mcpHeaders(), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
    ids.push(sid);
  };
  for (let i = 0; i < count; i += parallel) await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, open));
  return ids;
}

function sdkTarget(url: string, sessions?: string[]): Target {
  let next = 0;
  return {
    url,
    headers: { ...mcpHeaders(), 'mcp-protocol-version': '2025-06-18' },
    body: (n) => rpc(n, 'tools/call', { name: 'echo', arguments: { text: 'milk' } }),
    // One session per connection, as one app holds one session.
    perRequestHeaders: sessions ? (_n, _b, ctx) => ({ 'mcp-session-id': (ctx.sid ??= sessions[next++ % sessions.length]) }) : undefined,
    check: (b) => isResult(b) && b.includes('"text":"milk"'),
  };
}

/**
 * A peer gateway's tools/call of search_notes, the same call Toolport gets, with a session per
 * connection when the peer keeps sessions. The answer is the webhook's, whose JSON carries `total`.
 */
function peerTarget(url: string, sessions?: string[]): Target {
  let next = 0;
  return {
    url,
    headers: { ...mcpHeaders(), 'mcp-protocol-version': '2025-06-18' },
    body: (n) => rpc(n, 'tools/call', { name: 'search_notes', arguments: { query: 'milk' } }),
    perRequestHeaders: sessions ? (_n, _b, ctx) => ({ 'mcp-session-id': (ctx.sid ??= sessions[next++ % sessions.length]) }) : undefined,
    check: (b) => isResult(b) && b.includes('total'),
  };
}

// `streamed`: with a progress token, as many apps send one; the answer is then an SSE stream.
const toolportCall = (t: AppToken, streamed = false): Target => ({
  url: t.mcpUrl,
  headers: mcpHeaders(t.accessToken),
  body: (n) => rpc(n, 'tools/call', { name: 'notes__search_notes', arguments: { query: 'milk' }, ...(streamed ? { _meta: { progressToken: n } } : {}) }),
  check: (b) => isResult(b) && b.includes('total') && (!streamed || b.startsWith('event: message\ndata: ')),
});
// Accept-Encoding as Node's fetch (the SDK's client) sends it: a large listing comes gzipped. The
// preflight decompresses and checks the whole answer; under load a gzipped answer is checked by its
// readable part, the final stored block with the request's id.
const toolportList = (t: AppToken, expectLast: string): Target => ({
  url: t.mcpUrl,
  headers: { ...mcpHeaders(t.accessToken), 'accept-encoding': 'gzip, deflate' },
  body: (n) => rpc(n, 'tools/list', {}),
  check: (b, h) => (h['content-encoding'] === 'gzip' ? b.includes('"jsonrpc":"2.0","id":') : b.includes(expectLast)),
});

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------
interface Scenario {
  name: string;
  group: 'call' | 'list';
  label: string;
  target: () => Promise<Target>;
  runs: Record<number, Measured[]>;
  /** The second load generator's points at the top concurrency (node:http), for the scenarios it re-measures. */
  httpRuns?: HttpMeasured[];
}
/** A load point and where its CPU went. */
type Measured = Point & { cpu?: CpuUse };
type HttpMeasured = HttpPoint & { cpu?: CpuUse };
const scenarios: Scenario[] = [];

function summarise(runs: Measured[]) {
  const byRps = [...runs].sort((a, b) => a.rps - b.rps);
  const mid = byRps[Math.floor((byRps.length - 1) / 2)]!;
  return {
    rps: Math.round(median(runs.map((r) => r.rps))),
    p50: r2(median(runs.map((r) => r.p50)) * 1000) / 1000,
    p90: median(runs.map((r) => r.p90)),
    p99: median(runs.map((r) => r.p99)),
    errors: runs.reduce((a, r) => a + r.errors + r.non2xx + r.wrong, 0),
    requests: runs.reduce((a, r) => a + r.requests, 0),
    percentiles: mid.percentiles,
    cpu: mid.cpu,
    runs: runs.map((r) => ({ rps: Math.round(r.rps), p50: r.p50, p99: r.p99, errors: r.errors, non2xx: r.non2xx, wrong: r.wrong })),
  };
}

function summariseHttp(runs: HttpMeasured[]) {
  const byRps = [...runs].sort((a, b) => a.rps - b.rps);
  return {
    // What the generator itself cost per call, beside autocannon's: on 2 cores it is taken from the server.
    loadGeneratorUs: byRps[Math.floor((byRps.length - 1) / 2)]!.cpu?.perCallUs['load generator'],
    rps: Math.round(median(runs.map((r) => r.rps))),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    requests: runs.reduce((a, r) => a + r.requests, 0),
    runs: runs.map((r) => ({ rps: Math.round(r.rps), p50: r.p50, p99: r.p99, errors: r.errors })),
  };
}

/** Toolport embedded over the SDK and over each peer at the top concurrency, as each load generator measured it. */
function secondGenerator(r: any) {
  const top = String(Math.max(...CONCURRENCY));
  const tp = r.load['toolport-embedded'];
  const rows: Array<{ c: number; ratio: string; autocannon: number; http: number }> = [];
  for (const other of ['sdk-stateless', ...PEERS.map((p) => p.name)]) {
    const o = r.load[other];
    if (!tp?.secondGenerator || !o?.secondGenerator) continue;
    rows.push({ c: Number(top), ratio: `toolport-embedded / ${other}`, autocannon: r2(tp.points[top].rps / o.points[top].rps), http: r2(tp.secondGenerator.rps / o.secondGenerator.rps) });
  }
  return rows;
}

/**
 * The bare SDK servers run on their own pins (bench/baseline: the SDK and zod as a developer installs
 * them today), never through the product's lock: installed on first use, or when a pin changed.
 */
function installBaselines() {
  const dir = path.join(BENCH_DIR, 'baseline');
  const pins = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
  const installed = (name: string) => {
    const file = path.join(dir, 'node_modules', name, 'package.json');
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined;
  };
  if (Object.entries(pins).every(([name, version]) => installed(name) === version)) return;
  log('installing the baselines\' own pins (bench/baseline)...');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: 'inherit' });
}

/**
 * The fastmcp peer's Python venv (bench/baseline/.venv) from its pinned requirements.txt, on first use
 * or when the pins changed: the venv keeps a copy of the requirements it was built from.
 */
function installPythonPeer() {
  const dir = path.join(BENCH_DIR, 'baseline');
  const venv = path.join(dir, '.venv');
  const pins = readFileSync(path.join(dir, 'requirements.txt'), 'utf8');
  const built = path.join(venv, 'bench-requirements.txt');
  if (existsSync(built) && readFileSync(built, 'utf8') === pins) return;
  log('installing the fastmcp peer\'s pins (bench/baseline/.venv)...');
  rmSync(venv, { recursive: true, force: true });
  execFileSync(process.env.BENCH_PYTHON ?? 'python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  // An index that does not answer is given up at once (pip otherwise retries it five times a
  // package: 9.5 minutes where only a local index is reachable), not waited for.
  execFileSync(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--retries', '0', '--timeout', '5', '-r', path.join(dir, 'requirements.txt')], { stdio: 'inherit' });
  writeFileSync(built, pins);
}

/**
 * Peer gateways (issue #48), each in front of a tool that calls the same Notes webhook for the same
 * call (bench/baseline/peer.ts starts them; bench/README.md says what each does and does not do).
 */
const PEERS = [
  { name: 'peer-supergateway', kind: 'supergateway', short: 'supergateway', label: 'supergateway (stateful) → stdio server → webhook', sessions: true },
  { name: 'peer-mcp-proxy', kind: 'mcp-proxy', short: 'mcp-proxy', label: 'mcp-proxy (stateless) → stdio server → webhook', sessions: false },
  { name: 'peer-fastmcp', kind: 'fastmcp', short: 'FastMCP', label: 'FastMCP, Python (stateless, JSON) → webhook', sessions: false },
] as const;
/** What the second load generator (node:http) re-measures at the top concurrency: Toolport, the SDK, the peers. */
const SECOND_GENERATOR = new Set<string>(['sdk-stateless', 'toolport-embedded', ...PEERS.map((p) => p.name)]);

/** The versions the peers ran on, for the results: from what is installed, not what is asked for. */
function peerVersions() {
  const dir = path.join(BENCH_DIR, 'baseline');
  const npmVersion = (name: string) => {
    const file = path.join(dir, 'node_modules', name, 'package.json');
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined;
  };
  const fastmcp = /^fastmcp-slim(?:\[[^\]]*\])?==(\S+)$/m.exec(readFileSync(path.join(dir, 'requirements.txt'), 'utf8'))?.[1];
  return { supergateway: npmVersion('supergateway'), 'mcp-proxy': npmVersion('mcp-proxy'), 'fastmcp-slim': fastmcp, 'stdio server SDK': npmVersion('@modelcontextprotocol/sdk') };
}

async function main() {
  const started = new Date();
  log(`bench ${QUICK ? 'quick' : 'full'}: ${SECONDS} s per point, ${RUNS} run(s), concurrency ${CONCURRENCY.join('/')}`);
  const results: any = {
    mode: QUICK ? 'quick' : 'full',
    startedAt: started.toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    secondsPerPoint: SECONDS,
    runs: RUNS,
    load: {},
    roundTrips: {},
    scale: {},
  };

  // ---- argument patterns: in this process, before any server starts, so nothing else runs -----
  if (want('patterns', 'patterns')) {
    results.patterns = measurePatterns(QUICK);
    const p = results.patterns;
    log(`patterns: worst allowed pattern at ${p.characters} characters p50 ${p.worst.p50} ms (${p.worst.ratioP50}× trivial), a call at its budget p99 ${p.fullCall.p99} ms; ${p.seconds} s`);
  }
  if (only?.every((o) => STANDALONE.includes(o))) {
    if (want('expiry', 'scale')) await expiryBoth(results, await child('notes', 'servers/notes.ts'));
    results.mode = only.join('+');
    results.goals = goals(results).filter((g) => g.met !== null);
    results.finishedAt = new Date().toISOString();
    return writeResults(results);
  }

  // ---- servers --------------------------------------------------------------------------------
  installBaselines();
  const svcEnv = await servicesBacking();
  // The deployment as shipped (docker-compose.yml, DESIGN "Running it"): API and worker in separate
  // processes, on their own database and Redis prefix so that no other process takes their jobs.
  const splitEnv = want('toolport-bullmq-split', 'load') ? await servicesBacking() : undefined;
  const [notes, sdkStateless, sdkSession, embedded, bull, split] = await Promise.all([
    child('notes', 'servers/notes.ts'),
    child('sdk-stateless', 'baseline/sdk.ts', { args: ['stateless'] }),
    child('sdk-sessions', 'baseline/sdk.ts', { args: ['sessions'] }),
    toolport('toolport-embedded', {}),
    toolport('toolport-bullmq', { ...svcEnv, ROLE: 'all' }),
    splitEnv && toolport('toolport-bullmq-split', { ...splitEnv, ROLE: 'api' }),
    splitEnv && toolport('toolport-bullmq-split-worker', { ...splitEnv, ROLE: 'worker' }),
  ]);
  const webhookUrl = notes.ready.url as string;
  // BullMQ between a POST and the webhook, one job per call, nothing else (servers/bullmq-relay.ts).
  const relay = await child('bullmq-relay', 'servers/bullmq-relay.ts', { env: { RELAY_TO: webhookUrl, REDIS_URL, RELAY_PREFIX: `bench-relay-${process.pid}` } });
  // A second API process on the same Postgres + Redis, same public URL (as behind a load balancer).
  const bullB = await toolport('toolport-bullmq-b', { ...svcEnv, ROLE: 'api' }, Number(new URL(bull.publicUrl).port));
  log('servers up:', children.map((c) => c.name).join(', '));

  const deployments: Deployment[] = [];
  const secrets: string[] = [];
  for (const [name, d, env] of [
    ['embedded', embedded, {}],
    ['bullmq', bull, svcEnv],
    ...(split && splitEnv ? ([['bullmq-split', split, splitEnv]] as const) : []),
  ] as const) {
    const caller = await person(d.url, `bench-${name}`);
    const secret = await installAddon(caller, notes.ready.manifest);
    await notes.request({ type: 'secret', secret }, 'secret-ok');
    secrets.push(secret);
    // The hour-long tool that never answers: open tasks (scale), served by the same add-on process.
    await notes.request({ type: 'secret', secret: await installAddon(caller, notes.ready.reportsManifest) }, 'secret-ok');
    const token = await connect(d.url, caller);
    if (name === 'bullmq-split') {
      // Measured for tools/call only: tools/list never reaches the worker.
      deployments.push({ name, url: d.url, child: d.child, env, caller, token });
      continue;
    }
    const p4 = await person(d.url, `bench-list4-${name}`);
    await installAddon(p4, generatedManifest(`list4-${name}`, webhookUrl, 4));
    const lister4 = await connect(d.url, p4);
    const p800 = await person(d.url, `bench-list800-${name}`);
    for (let i = 0; i < 50; i++) await installAddon(p800, generatedManifest(`list800-${name}-${String(i).padStart(2, '0')}`, webhookUrl, 16));
    const lister800 = await connect(d.url, p800);
    deployments.push({ name, url: d.url, child: d.child, env: env as Record<string, string>, caller, token, lister4, lister800 });
  }
  log('people, add-ons and OAuth tokens ready');

  // ---- load points ----------------------------------------------------------------------------
  // The floor signs with a secret the add-on really holds, so it does the same verification work.
  const notesSecret = secrets[0]!;
  scenarios.push(
    { name: 'webhook', group: 'call', label: 'webhook direct (floor)', target: async () => webhookTarget(webhookUrl, notesSecret), runs: {} },
    { name: 'sdk-stateless', group: 'call', label: 'bare SDK, stateless', target: async () => sdkTarget(sdkStateless.ready.url), runs: {} },
    { name: 'sdk-sessions', group: 'call', label: 'bare SDK, sessions', target: async () => sdkTarget(sdkSession.ready.url, await sdkSessions(sdkSession.ready.url, 64)), runs: {} },
    { name: 'bullmq-relay', group: 'call', label: 'BullMQ relay, one job per call (no MCP, no checks)', target: async () => webhookTarget(relay.ready.url, notesSecret), runs: {} },
  );
  // The peers start only now: their tool signs with the secret the `webhook` scenario uses.
  const wantedPeers = PEERS.filter((p) => want(p.name, 'load'));
  if (wantedPeers.length) results.peers = { versions: peerVersions(), skipped: {} };
  // A peer that cannot run here is left out, with why, and the rest is measured.
  const leaveOut = (name: string, err: unknown) => {
    log(`${name} not measured: ${(err as Error).message}`);
    results.peers.skipped[name] = (err as Error).message;
  };
  let python = true;
  if (wantedPeers.some((p) => p.kind === 'fastmcp')) {
    try {
      installPythonPeer();
    } catch (err) {
      python = false;
      leaveOut('peer-fastmcp', err);
    }
  }
  const peerChildren = await Promise.all(
    wantedPeers.map((p) =>
      p.kind === 'fastmcp' && !python
        ? undefined
        : child(p.name, 'baseline/peer.ts', { args: [p.kind], env: { NOTES_WEBHOOK: webhookUrl, NOTES_SECRET: notesSecret } }).catch((err) => void leaveOut(p.name, err)),
    ),
  );
  wantedPeers.forEach((p, i) => {
    const c = peerChildren[i];
    if (!c) return;
    const url = c.ready.url as string;
    // Sessions are opened once (a supergateway session owns a stdio server process), not per run.
    let sessions: Promise<string[]> | undefined;
    scenarios.push({ name: p.name, group: 'call', label: p.label, target: async () => peerTarget(url, p.sessions ? await (sessions ??= sdkSessions(url, Math.max(...CONCURRENCY), 8)) : undefined), runs: {} });
  });
  for (const d of deployments) {
    scenarios.push({ name: `toolport-${d.name}`, group: 'call', label: `Toolport tools/call, ${DEPLOYMENT_LABEL[d.name]}`, target: async () => toolportCall(await fresh(d.token)), runs: {} });
  }
  const streamedOn = deployments.find((d) => d.name === 'embedded');
  if (streamedOn) {
    scenarios.push({
      name: 'toolport-embedded-progress',
      group: 'call',
      label: 'Toolport tools/call with a progress token (streamed), embedded',
      target: async () => toolportCall(await fresh(streamedOn.token), true),
      runs: {},
    });
  }
  for (const d of deployments) {
    if (!d.lister4 || !d.lister800) continue;
    const [lister4, lister800] = [d.lister4, d.lister800];
    scenarios.push(
      { name: `list4-${d.name}`, group: 'list', label: `tools/list 4 tools, ${d.name}`, target: async () => toolportList(await fresh(lister4), `list4-${d.name}__lookup_03`), runs: {} },
      { name: `list800-${d.name}`, group: 'list', label: `tools/list 800 tools, ${d.name}`, target: async () => toolportList(await fresh(lister800), `list800-${d.name}-49__lookup_15`), runs: {} },
    );
  }
  const active = scenarios.filter((s) => want(s.name, 'load'));
  // Preflight: every target answers correctly once before it is loaded.
  for (const s of active) {
    const t = await s.target();
    const body = t.body?.(1, {}) ?? '';
    const headers = { ...t.headers, ...(t.perRequestHeaders?.(1, body, {}) ?? {}) };
    const res = await request('POST', t.url, headers, body);
    if (res.status !== 200 || (t.check && !t.check(res.text, {}))) throw new Error(`${s.name} preflight: ${res.status} ${res.text.slice(0, 300)}`);
  }
  const cpu = cpuSampler(() => children.map((c) => ({ name: c.name, pid: c.proc.pid })));
  // Runs are interleaved (run 1 of everything, then run 2...) so drift on a shared machine hits all alike.
  for (let run = 1; run <= RUNS; run++) {
    for (const s of active) {
      const target = await s.target();
      await runPoint(target, 16, WARMUP_S);
      for (const c of CONCURRENCY) {
        const before = cpu.take();
        const p: Measured = await runPoint(target, c, SECONDS);
        p.cpu = cpu.between(before, cpu.take(), p.requests);
        (s.runs[c] ??= []).push(p);
        log(`run ${run}/${RUNS} ${s.name.padEnd(18)} c=${String(c).padEnd(2)} ${String(Math.round(p.rps)).padStart(6)}/s p50 ${p.p50.toFixed(3)} ms p99 ${p.p99.toFixed(3)} ms${p.errors + p.non2xx + p.wrong ? ` ERRORS ${p.errors}/${p.non2xx}/${p.wrong}` : ''}`);
      }
      // The second load generator, right after autocannon's top point of the same scenario, so that
      // both see the same machine: the ratios of the two should agree within noise.
      if (SECOND_GENERATOR.has(s.name)) {
        const top = Math.max(...CONCURRENCY);
        const before = cpu.take();
        const h: HttpMeasured = await runPointHttp(target, top, SECONDS);
        h.cpu = cpu.between(before, cpu.take(), h.requests);
        (s.httpRuns ??= []).push(h);
        log(`run ${run}/${RUNS} ${s.name.padEnd(18)} c=${top} ${String(Math.round(h.rps)).padStart(6)}/s p50 ${h.p50.toFixed(3)} ms p99 ${h.p99.toFixed(3)} ms (node:http)${h.errors ? ` ERRORS ${h.errors}` : ''}`);
      }
    }
  }
  for (const s of active) {
    results.load[s.name] = { label: s.label, group: s.group, points: Object.fromEntries(Object.entries(s.runs).map(([c, runs]) => [c, summarise(runs)])) };
    if (s.httpRuns) results.load[s.name].secondGenerator = summariseHttp(s.httpRuns);
  }
  results.secondGenerator = secondGenerator(results);
  for (const x of results.secondGenerator) log(`second load generator, c=${x.c}: ${x.ratio} ${x.http} (autocannon ${x.autocannon})`);

  // ---- approval round trips -------------------------------------------------------------------
  const byName = Object.fromEntries(deployments.map((d) => [d.name, d]));
  if (want('approval-one-embedded', 'roundtrip')) results.roundTrips['approval-one-embedded'] = await approvalRoundTrips('one process (embedded)', byName.embedded!, byName.embedded!.url);
  if (want('approval-one-bullmq', 'roundtrip')) results.roundTrips['approval-one-bullmq'] = await approvalRoundTrips('one process (Postgres + Redis)', byName.bullmq!, byName.bullmq!.url);
  if (want('approval-two-bullmq', 'roundtrip')) results.roundTrips['approval-two-bullmq'] = await approvalRoundTrips('across two processes (held by A, decided on B)', byName.bullmq!, bullB.url);

  // ---- scale ------------------------------------------------------------------------------------
  if (!argv.includes('--no-scale')) {
    if (want('pending', 'scale')) results.scale.pending = await pendingApprovals(byName.embedded!, notes);
    if (want('pending', 'scale')) results.scale.pendingBullmq = await pendingApprovals(byName.bullmq!, notes);
    if (want('streams', 'scale')) results.scale.streams = await eventStreams(byName.embedded!);
    if (want('tasks', 'scale')) results.scale.tasks = await openTasks(byName.embedded!);
    if (want('tasks', 'scale')) results.scale.tasksBullmq = await openTasks(byName.bullmq!);
    if (want('calllog', 'scale')) results.scale.callLog = await callLog(byName.bullmq!, svcEnv.DATABASE_URL);
    if (want('expiry', 'scale')) await expiryBoth(results, notes);
  }

  results.goals = goals(results);
  results.finishedAt = new Date().toISOString();
  writeResults(results);
}

// ---------------------------------------------------------------------------------------------
// Approval round trip: decision POST → MCP result
// ---------------------------------------------------------------------------------------------
async function approvalRoundTrips(label: string, d: Deployment, decideUrl: string) {
  const t = await fresh(d.token);
  const cookie = cookieOf(d.caller.client);
  const waiting = new Map<string, (id: string) => void>();
  const sse = await openSse(`${d.url}/api/events`, { cookie }, (e: SseEvent) => {
    if (e.event === 'approval') waiting.get(e.data?.arguments?.id)?.(e.data.id);
  });
  const times: number[] = [];
  const decisionPost: number[] = [];
  let n = 0;
  try {
    for (let i = 0; i < ROUND_TRIPS + 5; i++) {
      const added = await request('POST', t.mcpUrl, mcpHeaders(t.accessToken), rpc(++n, 'tools/call', { name: 'notes__add_note', arguments: { text: `# Bench ${i}\nround trip` } }));
      const noteId = rpcResult(added.text).result?.structuredContent?.id;
      if (!noteId) throw new Error(`add_note failed: ${added.text.slice(0, 300)}`);
      const approvalId = new Promise<string>((resolve) => waiting.set(noteId, resolve));
      const held = request('POST', t.mcpUrl, mcpHeaders(t.accessToken), rpc(++n, 'tools/call', { name: 'notes__delete_note', arguments: { id: noteId } }));
      const id = await Promise.race([approvalId, sleep(10_000).then(() => '')]);
      waiting.delete(noteId);
      if (!id) throw new Error(`no approval event for ${noteId}`);
      const t0 = performance.now();
      const decided = request('POST', `${decideUrl}/api/approvals/${id}/decision`, { cookie, 'content-type': 'application/json' }, '{"decision":"allow"}').then((r) => {
        decisionPost.push(performance.now() - t0);
        return r;
      });
      const result = await held;
      const t1 = performance.now();
      const d1 = await decided;
      if (d1.status !== 200) throw new Error(`decision: ${d1.status} ${d1.text}`);
      const text = rpcResult(result.text).result?.content?.[0]?.text ?? '';
      if (!/Deleted the note/.test(text)) throw new Error(`delete_note after allow: ${result.text.slice(0, 300)}`);
      if (i >= 5) times.push(t1 - t0); // the first few warm up
    }
  } finally {
    sse.close();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const out = {
    label,
    samples: times.length,
    p50: r2(percentile(sorted, 50)),
    p90: r2(percentile(sorted, 90)),
    p99: r2(percentile(sorted, 99)),
    decisionPostP50: r2(median(decisionPost)),
    distribution: Object.fromEntries([1, 5, 10, 25, 50, 75, 90, 95, 99].map((p) => [String(p), r2(percentile(sorted, p))])),
  };
  log(`approval round trip ${label}: p50 ${out.p50} ms p99 ${out.p99} ms (${out.samples} samples)`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scale: memory per waiting approval, per event stream; call log at 1 M rows
// ---------------------------------------------------------------------------------------------
type Memory = { usage: NodeJS.MemoryUsage; spaces: Record<string, { size: number; used: number }>; waiting: number };
const memory = async (c: Child) => await c.request<Memory>({ type: 'memory' }, 'memory', 60_000);
const MB = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;

/** BENCH_HEAP_SNAPSHOT=1: the server's heap before and while it holds the calls (bench/heap-top.ts). */
async function heapSnapshot(d: Deployment, label: string) {
  const file = path.join(BENCH_DIR, 'results', 'profiles', `${label}-${d.name}.heapsnapshot`);
  mkdirSync(path.dirname(file), { recursive: true });
  log(`heap snapshot: ${(await d.child.request<{ file: string }>({ type: 'heap-snapshot', file }, 'heap-snapshot', 300_000)).file}`);
}

/** `count` notes of the person who just added one: each held call deletes its own (the same call twice is one call). */
const seedNotes = (notes: Child, count: number) => notes.request<{ ids: string[] }>({ type: 'seed', count }, 'seed-ok').then((r) => r.ids);

async function pendingApprovals(d: Deployment, notes: Child) {
  const t = await fresh(d.token);
  const added = await request('POST', t.mcpUrl, mcpHeaders(t.accessToken), rpc(1, 'tools/call', { name: 'notes__add_note', arguments: { text: '# Keep me\npending benchmark' } }));
  if (!rpcResult(added.text).result.structuredContent.id) throw new Error(`add_note failed: ${added.text.slice(0, 300)}`);
  const noteIds = await seedNotes(notes, PENDING + 20);
  // Warm the path once (one call allowed through the real flow is already done by the round trips).
  const before = await memory(d.child);
  if (process.env.BENCH_HEAP_SNAPSHOT) await heapSnapshot(d, 'before');
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const reqs: http.ClientRequest[] = [];
  const started = performance.now();
  // BENCH_PENDING_PROGRESS=1: every call carries a progress token, as many apps send, and is streamed.
  const progress = process.env.BENCH_PENDING_PROGRESS === '1';
  const body = (n: number) =>
    rpc(n, 'tools/call', { name: 'notes__delete_note', arguments: { id: noteIds[n % noteIds.length]! }, ...(progress ? { _meta: { progressToken: n } } : {}) });
  const waiting = async () => (await d.child.request<{ waiting: number }>({ type: 'waiting' }, 'waiting')).waiting;
  let failed = 0;
  let firstError = '';
  let ending = false;
  // A held call gets no answer until it is decided: any answer before the end is a refusal.
  const answered = new Map<number, number>();
  let firstAnswer = '';
  const u = new URL(t.mcpUrl);
  // Paced: at most PENDING_WINDOW calls sent and not yet held, so the server's accept queue never
  // overflows (a dropped SYN is retried only after 1, 3, 7 s...) and every call is held well inside
  // its 30 s; the held count is the server's own.
  let held = 0;
  let early = 0;
  let sent = 0;
  for (; sent < PENDING && performance.now() - started < 25_000; sent++) {
    while (sent - held - early - failed >= PENDING_WINDOW && performance.now() - started < 25_000) {
      await sleep(5);
      held = await waiting();
    }
    const b = body(sent + 10);
    const req = http.request({ method: 'POST', hostname: u.hostname, port: u.port, path: u.pathname, agent, headers: { ...mcpHeaders(t.accessToken), 'content-length': Buffer.byteLength(b) } });
    req.on('error', (err) => {
      if (ending) return; // we hung up ourselves
      failed++;
      firstError ||= String(err);
    });
    req.on('response', (res) => {
      if (ending) return;
      // A streamed call's headers come at once; it is held like any other (its approval is counted).
      if (progress && res.headers['content-type'] === 'text/event-stream') return void res.resume();
      early++;
      answered.set(res.statusCode ?? 0, (answered.get(res.statusCode ?? 0) ?? 0) + 1);
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => (firstAnswer ||= Buffer.concat(chunks).toString('utf8').slice(0, 300)));
    });
    req.end(b);
    reqs.push(req);
    if (sent % 1000 === 999) log(`pending (${d.name}): ${sent + 1} sent, ${held} held, ${early} answered, ${failed} failed`);
  }
  let peak = 0;
  let at: Memory | undefined;
  for (;;) {
    held = await waiting();
    if (held >= sent - early - failed || performance.now() - started > 25_000) {
      at = await memory(d.child);
      peak = Math.max(peak, at.waiting);
      if (process.env.BENCH_HEAP_SNAPSHOT) await heapSnapshot(d, 'held');
      break;
    }
    await sleep(50);
  }
  const heldAfterMs = Math.round(performance.now() - started);
  const earlyAnswers = Object.fromEntries(answered);
  ending = true;
  for (const r of reqs) r.destroy();
  agent.destroy();
  // The server records each abandoned call as cancelled; wait until none is held.
  const until = Date.now() + 60_000;
  while ((await memory(d.child)).waiting > 0 && Date.now() < until) await sleep(500);
  const rss = at.usage.rss - before.usage.rss;
  const heap = at.usage.heapUsed - before.usage.heapUsed;
  const out = {
    deployment: d.name,
    held: at.waiting,
    peak,
    sent,
    earlyAnswers,
    firstAnswer,
    failedRequests: failed,
    firstError,
    secondsToHold: heldAfterMs / 1000,
    rssBeforeMB: MB(before.usage.rss),
    rssAfterMB: MB(at.usage.rss),
    rssDeltaMB: MB(rss),
    heapDeltaMB: MB(heap),
    heapTotalDeltaMB: MB(at.usage.heapTotal - before.usage.heapTotal),
    spacesDeltaMB: Object.fromEntries(Object.entries(at.spaces).map(([k, s]) => [k, { size: MB(s.size - (before.spaces[k]?.size ?? 0)), used: MB(s.used - (before.spaces[k]?.used ?? 0)) }])),
    externalDeltaMB: MB(at.usage.external - before.usage.external),
    perApprovalKB: Math.round((rss / Math.max(1, at.waiting) / 1024) * 10) / 10,
    heapPerApprovalKB: Math.round((heap / Math.max(1, at.waiting) / 1024) * 10) / 10,
    rssFor10kMB: MB((rss / Math.max(1, at.waiting)) * 10_000),
  };
  log(`pending approvals (${d.name}): ${out.held} held, RSS +${out.rssDeltaMB} MB, heap +${out.heapDeltaMB} MB (${out.perApprovalKB} KB each)`);
  return out;
}

/**
 * TASKS calls of an hour-long tool on 2026-07-28 with the tasks extension, none ever answered: each
 * is an open task, held in the database, not in the API process, which this measures.
 */
async function openTasks(d: Deployment) {
  const t = await fresh(d.token);
  const headers = { ...mcpHeaders(t.accessToken), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'reports__build_report' };
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
  const before = await memory(d.child);
  const started = performance.now();
  let sent = 0;
  let created = 0;
  let other = 0;
  let firstOther = '';
  const createMs: number[] = [];
  const sender = async () => {
    for (let n = sent++; n < TASKS; n = sent++) {
      const at = performance.now();
      const res = await request('POST', t.mcpUrl, headers, rpc(n, 'tools/call', { name: 'reports__build_report', arguments: { topic: `topic ${n}` }, _meta: meta }));
      if (res.text.includes('"resultType":"task"')) {
        created++;
        createMs.push(performance.now() - at);
      } else {
        other++;
        firstOther ||= res.text.slice(0, 300);
      }
      if (n % 2000 === 1999) log(`tasks (${d.name}): ${n + 1} sent, ${created} open`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  const seconds = r2((performance.now() - started) / 1000);
  // Let the deliveries (each accepted with 202) finish before measuring what stays.
  await sleep(2000);
  const at = await memory(d.child);
  const rss = at.usage.rss - before.usage.rss;
  const heap = at.usage.heapUsed - before.usage.heapUsed;
  const out = {
    deployment: d.name,
    tasks: created,
    refused: other,
    firstRefusal: firstOther,
    secondsToCreate: seconds,
    createP50Ms: r2(median(createMs)),
    rssDeltaMB: MB(rss),
    heapDeltaMB: MB(heap),
    rssFor10kMB: MB((rss / Math.max(1, created)) * 10_000),
  };
  log(`open tasks (${d.name}): ${created} open (${other} refused) in ${seconds} s, RSS +${out.rssDeltaMB} MB, heap +${out.heapDeltaMB} MB`);
  return out;
}

async function eventStreams(d: Deployment) {
  const people: Person[] = [];
  const perPerson = 10; // MAX_STREAMS_PER_PERSON
  const needed = Math.ceil(STREAMS / perPerson);
  for (let i = 0; i < needed; i += 8) {
    const batch = await Promise.all(Array.from({ length: Math.min(8, needed - i) }, (_, k) => person(d.url, `bench-sse-${i + k}`)));
    people.push(...batch);
  }
  const before = await memory(d.child);
  const open: Array<{ close(): void }> = [];
  for (let i = 0; i < STREAMS; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, STREAMS - i) }, (_, k) => openSse(`${d.url}/api/events`, { cookie: cookieOf(people[Math.floor((i + k) / perPerson)]!.client) }, () => {})),
    );
    open.push(...batch);
  }
  const after = await memory(d.child);
  for (const s of open) s.close();
  // What the closed streams leave behind, against what they took while open (same process, same run).
  await sleep(1000);
  const closed = await memory(d.child);
  const rss = after.usage.rss - before.usage.rss;
  const heap = after.usage.heapUsed - before.usage.heapUsed;
  const heapKept = closed.usage.heapUsed - before.usage.heapUsed;
  const out = {
    streams: open.length,
    rssDeltaMB: MB(rss),
    heapDeltaMB: MB(heap),
    perStreamKB: Math.round((rss / open.length / 1024) * 10) / 10,
    heapPerStreamKB: Math.round((heap / open.length / 1024) * 10) / 10,
    rssFor2000MB: MB((rss / open.length) * 2000),
    rssAfterCloseDeltaMB: MB(closed.usage.rss - before.usage.rss),
    heapAfterCloseDeltaMB: MB(heapKept),
    heapKeptRatio: heap > 0 ? r2(heapKept / heap) : NaN,
  };
  log(`event streams: ${out.streams} open, RSS +${out.rssDeltaMB} MB, heap +${out.heapDeltaMB} MB; after closing them heap +${out.heapAfterCloseDeltaMB} MB (${out.heapKeptRatio}× of what they took)`);
  return out;
}

async function callLog(d: Deployment, databaseUrl: string) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const userId = d.caller.user.id;
  const t0 = performance.now();
  await sql.unsafe(
    `insert into calls (id, user_id, app_name, addon_id, tool_name, args_digest, outcome, latency_ms, created_at)
     select 'call_bench' || lpad(g::text, 8, '0'), $1, 'Bench App', 'notes', 'search_notes', 'digest', 'ok', 3,
            date_trunc('milliseconds', now()) - (g * interval '7 milliseconds')
     from generate_series(1, ${LOG_ROWS}) g`,
    [userId],
  );
  await sql.unsafe('analyze calls');
  const insertS = (performance.now() - t0) / 1000;
  const [deep] = await sql.unsafe(
    `select id, created_at from calls where user_id = $1 order by created_at desc, id desc offset ${Math.floor(LOG_ROWS * 0.9)} limit 1`,
    [userId],
  );
  await sql.end();
  const cursor = Buffer.from(JSON.stringify([new Date(deep!.created_at).toISOString(), deep!.id])).toString('base64url');
  const cookie = cookieOf(d.caller.client);
  // Let the bulk insert's aftermath (autovacuum, checkpoint) settle, then alternate the two pages
  // so that whatever else the machine does hits both alike.
  await sleep(3000);
  const first: number[] = [];
  const deepTimes: number[] = [];
  for (let i = 0; i < 45; i++) {
    for (const [q, xs] of [['', first], [`?cursor=${cursor}`, deepTimes]] as const) {
      const s = performance.now();
      const res = await request('GET', `${d.url}/api/calls${q}`, { cookie });
      if (res.status !== 200 || JSON.parse(res.text).items.length !== 50) throw new Error(`call log ${q}: ${res.status} ${res.text.slice(0, 200)}`);
      if (i >= 5) xs.push(performance.now() - s);
    }
  }
  const stats = (xs: number[]) => {
    const s = xs.sort((a, b) => a - b);
    return { p50: r2(percentile(s, 50)), p90: r2(percentile(s, 90)), max: r2(s[s.length - 1]!) };
  };
  const out = { rows: LOG_ROWS, insertSeconds: r2(insertS), firstPage: stats(first), deepPage: stats(deepTimes), deepOffset: Math.floor(LOG_ROWS * 0.9) };
  log(`call log at ${LOG_ROWS} rows: first page p50 ${out.firstPage.p50} ms, deep page p50 ${out.deepPage.p50} ms`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Approval expiry: thousands of calls held at once, each answered when its approval expires
// ---------------------------------------------------------------------------------------------
const EXPIRY_TIMEOUT_S = 20;
/** Calls sent and not yet held at once: the client keeps pace with the server, as a population of apps would. */
const EXPIRY_SETTING_UP = 64;
/** The baseline: calls sent 1.5 s apart, so that each expires with nothing else expiring. */
const EXPIRY_ALONE = 5;

async function expiryBoth(results: any, notes: Child) {
  results.scale.expiry = await approvalExpiry(notes, 'embedded');
  results.scale.expiryBullmq = await approvalExpiry(notes, 'bullmq');
}

type Held = { asked?: number; answered: number; expired: boolean; text: string };

/** One held destructive call with a progress token: the first progress leaves once its approval is recorded. */
function heldCall(t: AppToken, n: number, noteId: string, onAsked: () => void): Promise<Held> {
  const body = rpc(n, 'tools/call', { name: 'notes__delete_note', arguments: { id: noteId }, _meta: { progressToken: `p${n}` } });
  const u = new URL(t.mcpUrl);
  return new Promise((resolve, reject) => {
    let asked: number | undefined;
    let text = '';
    // A connection of its own: a pooled socket the busy server closes as idle would reset this POST.
    const req = http.request(
      { method: 'POST', hostname: u.hostname, port: u.port, path: u.pathname, agent: false, signal: AbortSignal.timeout(120_000), headers: { ...mcpHeaders(t.accessToken), 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (asked === undefined && text.includes('notifications/progress')) {
            asked = performance.now();
            onAsked();
          }
        });
        res.on('end', () => {
          const final = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).find((m) => m.id === n);
          const said = String(final?.result?.content?.[0]?.text ?? text.slice(0, 300));
          resolve({ asked, answered: performance.now(), expired: final?.result?.isError === true && said.includes(`within ${EXPIRY_TIMEOUT_S} seconds`), text: said });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const lateness = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: r2(percentile(s, 50)), p99: r2(percentile(s, 99)), max: r2(s[s.length - 1] ?? NaN) };
};

/**
 * On a fresh server with a 20 s approval timeout: five calls that each expire alone, then EXPIRY
 * calls held at once. How late each was answered after its expiry (from its first progress
 * message, as the app sees it) and recorded expired (the database's own expires_at and decided_at).
 */
async function approvalExpiry(notes: Child, deployment: 'embedded' | 'bullmq') {
  const env = deployment === 'bullmq' ? { ...(await servicesBacking()), ROLE: 'all' } : {};
  const d = await toolport(`toolport-expiry-${deployment}`, { ...env, APPROVAL_TIMEOUT_SECONDS: String(EXPIRY_TIMEOUT_S) });
  try {
    const caller = await person(d.url, `bench-expiry-${deployment}`);
    const secret = await installAddon(caller, notes.ready.manifest);
    await notes.request({ type: 'secret', secret }, 'secret-ok');
    const t = await connect(d.url, caller);
    const added = await request('POST', t.mcpUrl, mcpHeaders(t.accessToken), rpc(1, 'tools/call', { name: 'notes__add_note', arguments: { text: '# Keep me\nexpiry benchmark' } }));
    if (!rpcResult(added.text).result.structuredContent.id) throw new Error(`add_note failed: ${added.text.slice(0, 300)}`);
    const noteIds = await seedNotes(notes, EXPIRY + 200);
    const noteId = (n: number) => noteIds[n % noteIds.length]!;
    const late = (h: Held) => h.answered - h.asked! - EXPIRY_TIMEOUT_S * 1000;

    const alone = await Promise.all(Array.from({ length: EXPIRY_ALONE }, async (_, i) => {
      await sleep(i * 1500);
      return heldCall(t, 10 + i, noteId(10 + i), () => {});
    }));
    let free = EXPIRY_SETTING_UP;
    const freed: Array<() => void> = [];
    let peak = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        peak = Math.max(peak, (await d.child.request<{ waiting: number }>({ type: 'waiting' }, 'waiting')).waiting);
        await sleep(500);
      }
    })();
    const started = performance.now();
    let sentAll = 0;
    const atOnce = await Promise.all(Array.from({ length: EXPIRY }, async (_, i) => {
      while (free === 0) await new Promise<void>((r) => freed.push(r));
      free--;
      let held = true;
      const release = () => {
        if (held) { free++; freed.shift()?.(); }
        held = false;
      };
      if (i === EXPIRY - 1) sentAll = performance.now() - started;
      try {
        return await heldCall(t, 100 + i, noteId(100 + i), release);
      } finally {
        release();
      }
    }));
    watching = false;
    await watcher;
    const recorded = (await d.child.request<{ late: number[] }>({ type: 'expired' }, 'expired', 60_000)).late;
    const wrong = [...alone, ...atOnce].filter((h) => !h.expired || h.asked === undefined);
    const atOnceLate = atOnce.filter((h) => h.asked).map(late);
    const answeredAlone = lateness(alone.filter((h) => h.asked).map(late));
    const answeredAtOnce = lateness(atOnceLate);
    const out = {
      deployment: DEPLOYMENT_LABEL[deployment],
      calls: EXPIRY,
      timeoutSeconds: EXPIRY_TIMEOUT_S,
      peakHeld: peak,
      secondsToSend: r2(sentAll / 1000),
      wrong: wrong.length,
      firstWrong: wrong[0]?.text ?? '',
      recordedExpired: recorded.length,
      alone: { answered: answeredAlone, recorded: lateness(recorded.slice(0, EXPIRY_ALONE)) },
      atOnce: { answered: answeredAtOnce, recorded: lateness(recorded.slice(EXPIRY_ALONE)), earliestMs: r2(Math.min(...atOnceLate)) },
      addedMaxMs: r2(answeredAtOnce.max - answeredAlone.p50),
    };
    log(`approval expiry (${deployment}): ${EXPIRY} calls, ${peak} held at the peak, ${wrong.length} not expired; answered late p99 ${out.atOnce.answered.p99} ms, max ${out.atOnce.answered.max} ms (alone p50 ${out.alone.answered.p50} ms), recorded late p99 ${out.atOnce.recorded.p99} ms`);
    return out;
  } finally {
    await d.child.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Goals, tables, chart
// ---------------------------------------------------------------------------------------------
function goals(r: any) {
  const L = r.load;
  const g: Array<{ goal: string; value: string; target: string; met: boolean | null }> = [];
  const add = (goal: string, value: number | undefined, target: number, cmp: '<=' | '>=', unit = '') => {
    const ok = value === undefined || Number.isNaN(value) ? null : cmp === '<=' ? value <= target : value >= target;
    g.push({ goal, value: value === undefined || Number.isNaN(value) ? 'not measured' : `${r2(value)}${unit}`, target: `${cmp} ${target}${unit}`, met: ok });
  };
  // BullMQ twice: in one process (ROLE=all), and as deployed, API and worker apart.
  const calls = [['embedded', 2], ['bullmq', 3], ['bullmq-split', 3]] as const;
  const rps = (name: string, c: number): number | undefined => L[name]?.points?.[c]?.rps;
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? a / b : undefined);
  // Issue #48: embedded at twice the like-for-like stateless SDK and at least the SDK with sessions.
  for (const c of [32, 64]) {
    add(`throughput c=${c}, embedded / bare stateless SDK`, ratio(rps('toolport-embedded', c), rps('sdk-stateless', c)), 2, '>=', '×');
    add(`throughput c=${c}, embedded / bare SDK with sessions`, ratio(rps('toolport-embedded', c), rps('sdk-sessions', c)), 1, '>=', '×');
  }
  for (const [d] of calls.slice(1)) {
    add(`throughput c=64, ${DEPLOYMENT_LABEL[d]} / bare stateless SDK`, ratio(rps(`toolport-${d}`, 64), rps('sdk-stateless', 64)), 1, '>=', '×');
  }
  add(`throughput c=64, ${DEPLOYMENT_LABEL['bullmq-split']} / BullMQ relay`, ratio(rps('toolport-bullmq-split', 64), rps('bullmq-relay', 64)), 1, '>=', '×');
  add('throughput c=64, calls with a progress token (streamed) / plain calls, embedded', ratio(rps('toolport-embedded-progress', 64), rps('toolport-embedded', 64)), 0.9, '>=', '×');
  // Server CPU per call at c=64, every process of the deployment (bench/lib/cpu.ts, 10 ms ticks).
  for (const [d, limit] of [['embedded', 300], ['bullmq-split', 400]] as const) {
    add(`server CPU per call at c=64, ${DEPLOYMENT_LABEL[d]}`, serverCpuUs(r, `toolport-${d}`), limit, '<=', ' µs');
  }
  // Toolport ahead of every peer at c=64 while doing more per call (bench/README.md: what each peer
  // does and does not do that Toolport does).
  for (const p of PEERS) {
    const tp = L['toolport-embedded']?.points;
    const peer = L[p.name]?.points;
    add(`throughput c=64, embedded / peer ${p.short} (Toolport doing more per call)`, tp && peer ? tp[64].rps / peer[64].rps : undefined, 1, '>=', '×');
  }
  const hook = L.webhook?.points?.[1];
  for (const [d, limit] of calls) {
    const tp = L[`toolport-${d}`]?.points?.[1];
    add(`added p50 at c=1 over the direct webhook, ${DEPLOYMENT_LABEL[d]}`, tp && hook ? tp.p50 - hook.p50 : undefined, limit, '<=', ' ms');
    add(`added p99 at c=1 over the direct webhook, ${DEPLOYMENT_LABEL[d]}`, tp && hook ? tp.p99 - hook.p99 : undefined, 10, '<=', ' ms');
  }
  for (const d of ['embedded', 'bullmq']) {
    const a = L[`list4-${d}`]?.points?.[1];
    const b = L[`list800-${d}`]?.points?.[1];
    add(`tools/list p50 c=1, 800 tools / 4 tools, ${d}`, a && b ? b.p50 / a.p50 : undefined, 3, '<=', '×');
  }
  add('approval round trip p50, one process (embedded)', r.roundTrips['approval-one-embedded']?.p50, 10, '<=', ' ms');
  add('approval round trip p50, across two processes', r.roundTrips['approval-two-bullmq']?.p50, 20, '<=', ' ms');
  add('RSS for 10,000 pending approvals, embedded (per held call × 10,000)', r.scale.pending?.rssFor10kMB, 200, '<=', ' MB');
  add('RSS for 10,000 pending approvals, Postgres + Redis (per held call × 10,000)', r.scale.pendingBullmq?.rssFor10kMB, 200, '<=', ' MB');
  add('RSS for 2,000 event streams', r.scale.streams?.rssFor2000MB, 100, '<=', ' MB');
  add('RSS for 10,000 open tasks, embedded', r.scale.tasks?.rssFor10kMB, 50, '<=', ' MB');
  add('RSS for 10,000 open tasks, Postgres + Redis', r.scale.tasksBullmq?.rssFor10kMB, 50, '<=', ' MB');
  add('heap kept after closing the event streams / heap they took while open', r.scale.streams?.heapKeptRatio, 0.25, '<=', '×');
  // Approvals held at once all end on time: test/load-smoke.test.ts's bound on the latest, moved here.
  for (const [x, where] of [[r.scale.expiry, 'embedded'], [r.scale.expiryBullmq, 'Postgres + Redis']] as const) {
    add(`approval expiry, ${EXPIRY.toLocaleString('en')} held: the latest answer after its expiry, added over one expiring alone, ${where}`, x?.addedMaxMs, 5000, '<=', ' ms');
  }
  // A pattern cannot freeze a process (issue #23): the worst a manifest may declare, at the longest input.
  add('pattern check p50 at 4,096 characters, worst allowed pattern / trivial pattern', r.patterns?.worst.ratioP50, 1000, '<=', '×');
  add('one call at its pattern budget, worst allowed pattern, p99', r.patterns?.fullCall.p99, 250, '<=', ' ms');
  return g;
}

/** µs of CPU per call of the processes serving `scenario` at the top concurrency. */
function serverCpuUs(r: any, scenario: string): number | undefined {
  const use = r.load[scenario]?.points?.[String(Math.max(...CONCURRENCY))]?.cpu?.perCallUs as Record<string, number> | undefined;
  return use ? servedBy(scenario).reduce((sum, g) => sum + (use[g] ?? 0), 0) : undefined;
}

/** The children that serve a scenario (the rest of its CPU is the add-on's, Redis's, Postgres's...). */
function servedBy(scenario: string): string[] {
  if (scenario === 'webhook') return ['notes'];
  if (scenario.startsWith('sdk-')) return [scenario];
  if (scenario === 'toolport-bullmq-split') return ['toolport-bullmq-split', 'toolport-bullmq-split-worker'];
  if (scenario === 'toolport-embedded-progress') return ['toolport-embedded'];
  const list = /^list\d+-(.+)$/.exec(scenario);
  return [list ? `toolport-${list[1]}` : scenario];
}

/** At the top concurrency, where each call's CPU went, across every process on the machine. */
function cpuTable(r: any, lines: string[]) {
  const top = String(Math.max(...CONCURRENCY));
  const rows = Object.entries<any>(r.load).filter(([, s]) => s.points[top]?.cpu);
  if (!rows.length) return;
  lines.push(
    '',
    `## Where the CPU went at c=${top} (µs of CPU per call, every process on the machine)`,
    '',
    'Read from /proc around each point (10 ms ticks). "server" is the process(es) under test; "load generator" is the bench process (autocannon); "machine busy" is all cores, from /proc/stat. On this 2-core machine a closed-loop point keeps the machine busy, so calls/s follows the total.',
    '',
    '| scenario | calls/s | machine busy | server | add-on | Redis | Postgres | load generator | other | total |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const [name, s] of rows) {
    const p = s.points[top];
    const use: Record<string, number> = { ...p.cpu.perCallUs };
    const take = (groups: string[]) => groups.reduce((sum, g) => { const v = use[g] ?? 0; delete use[g]; return sum + v; }, 0);
    const server = take(servedBy(name));
    const addon = take(['notes']);
    const [redis, pg, gen] = [take(['redis']), take(['postgres']), take(['load generator'])];
    const other = take(Object.keys(use));
    const total = server + addon + redis + pg + gen + other;
    const cell = (v: number) => (v ? String(v) : '');
    lines.push(`| ${s.label} | ${p.rps} | ${Math.round(p.cpu.machineBusy * 100)} % | ${server} | ${cell(addon)} | ${cell(redis)} | ${cell(pg)} | ${gen} | ${cell(other)} | ${total} |`);
  }
}

/**
 * Context for the BullMQ goals, not a goal: the same run's BullMQ relay (a POST added as a job of
 * its own, a worker sending it to the webhook, nothing else) is what the queue hop costs when
 * every call is a job; Toolport shares a job between the calls that arrive together.
 */
function bullmqCost(r: any, lines: string[]) {
  const relay = r.load['bullmq-relay']?.points;
  if (!relay) return;
  const rows: string[] = [];
  const ratio = (a: any, b: any) => (a && b ? `${(a.rps / b.rps).toFixed(2)}×` : 'not measured');
  rows.push(`| BullMQ relay / bare stateless SDK | ${ratio(relay[64], r.load['sdk-stateless']?.points?.[64])} |`);
  rows.push(`| BullMQ relay / direct webhook | ${ratio(relay[64], r.load.webhook?.points?.[64])} |`);
  for (const d of ['bullmq', 'bullmq-split'] as const) rows.push(`| Toolport, ${DEPLOYMENT_LABEL[d]} / BullMQ relay | ${ratio(r.load[`toolport-${d}`]?.points?.[64], relay[64])} |`);
  rows.push(`| Toolport, embedded / bare stateless SDK (for comparison) | ${ratio(r.load['toolport-embedded']?.points?.[64], r.load['sdk-stateless']?.points?.[64])} |`);
  lines.push('', '## BullMQ\'s own cost (context for the BullMQ goals, throughput at c=64)', '', '| ratio | c=64 |', '| --- | --- |', ...rows);
}

/** The second load generator's points beside autocannon's, and the ratios each gives. */
function secondGeneratorTable(r: any, lines: string[]) {
  const top = String(Math.max(...CONCURRENCY));
  const rows = Object.values<any>(r.load).filter((s) => s.secondGenerator && s.points[top]);
  if (!rows.length) return;
  lines.push(
    '',
    `## Second load generator (node:http keep-alive closed loop, c=${top})`,
    '',
    `Measured right after autocannon's c=${top} point of the same scenario: ${top} loops on one keep-alive agent of ${top} sockets, each sending its next request once the last answer is read whole. The ratios of the two generators should agree within noise.`,
    '',
    '| scenario | autocannon calls/s | node:http calls/s | node:http p50 ms | node:http p99 ms | node:http errors | generator µs/call, autocannon / node:http |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const s of rows) {
    const g = s.secondGenerator;
    lines.push(`| ${s.label} | ${s.points[top].rps} | ${g.rps} | ${g.p50.toFixed(3)} | ${g.p99.toFixed(3)} | ${g.errors} | ${s.points[top].cpu?.perCallUs['load generator'] ?? ''} / ${g.loadGeneratorUs ?? ''} |`);
  }
  if (r.secondGenerator?.length) {
    lines.push('', '| ratio | autocannon | node:http |', '| --- | --- | --- |');
    for (const x of r.secondGenerator) lines.push(`| ${x.ratio} | ${x.autocannon.toFixed(2)}× | ${x.http.toFixed(2)}× |`);
  }
}

function markdown(r: any): string {
  const lines: string[] = [];
  lines.push(`# Benchmark results (${r.mode})`, '');
  lines.push(`${r.startedAt} · ${r.machine.cpus} × ${r.machine.cpu} · Node ${r.machine.node} · load average at start ${r.machine.loadavg.map((x: number) => x.toFixed(2)).join(' ')}`);
  if (Object.keys(r.load).length) lines.push(`${r.secondsPerPoint} s per point, ${r.runs === 1 ? '1 run' : `median of ${r.runs} runs`}; closed-loop load (autocannon) from the bench process, every server in its own child process.`);
  lines.push('');
  lines.push('## Goals', '', '| goal | measured | target | |', '| --- | --- | --- | --- |');
  for (const g of r.goals) lines.push(`| ${g.goal} | ${g.value} | ${g.target} | ${g.met === null ? 'not measured' : g.met ? 'met' : '**missed**'} |`);
  if (Object.keys(r.load).length) lines.push('', '## Load points', '', '| scenario | c | calls/s | × stateless SDK | p50 ms | p90 ms | p99 ms | errors |', '| --- | --- | --- | --- | --- | --- | --- | --- |');
  const sdk = r.load['sdk-stateless']?.points;
  for (const [, s] of Object.entries<any>(r.load)) {
    for (const c of Object.keys(s.points)) {
      const p = s.points[c];
      const ratio = sdk?.[c] ? (p.rps / sdk[c].rps).toFixed(2) : '';
      lines.push(`| ${s.label} | ${c} | ${p.rps} | ${ratio} | ${p.p50.toFixed(3)} | ${p.p90.toFixed(3)} | ${p.p99.toFixed(3)} | ${p.errors} |`);
    }
  }
  if (r.peers) {
    const v = r.peers.versions;
    lines.push('', `Peers: supergateway ${v.supergateway}, mcp-proxy ${v['mcp-proxy']}, fastmcp-slim ${v['fastmcp-slim']}; the gateways' stdio server on SDK ${v['stdio server SDK']} (bench/README.md, "Peers").`);
    for (const [name, why] of Object.entries<string>(r.peers.skipped)) lines.push(`- ${name} not measured: ${why}`);
  }
  cpuTable(r, lines);
  bullmqCost(r, lines);
  secondGeneratorTable(r, lines);
  const hook = r.load.webhook?.points?.[1];
  if (hook) {
    lines.push('', '## Added latency at c=1 over the direct webhook call', '', '| scenario | p50 ms | added p50 | p99 ms | added p99 |', '| --- | --- | --- | --- | --- |');
    for (const [, s] of Object.entries<any>(r.load)) {
      const p = s.points[1];
      if (!p || s.group !== 'call') continue;
      lines.push(`| ${s.label} | ${p.p50.toFixed(3)} | ${(p.p50 - hook.p50).toFixed(3)} | ${p.p99.toFixed(3)} | ${(p.p99 - hook.p99).toFixed(3)} |`);
    }
  }
  if (Object.keys(r.roundTrips).length) {
    lines.push('', '## Approval round trip (decision POST → MCP result, includes the webhook call it allows)', '', '| where | samples | p50 ms | p90 ms | p99 ms | decision POST p50 ms |', '| --- | --- | --- | --- | --- | --- |');
    for (const x of Object.values<any>(r.roundTrips)) lines.push(`| ${x.label} | ${x.samples} | ${x.p50} | ${x.p90} | ${x.p99} | ${x.decisionPostP50} |`);
  }
  const s = r.scale;
  if (s.pending || s.streams || s.callLog || s.tasks) lines.push('', '## Scale', '');
  for (const x of [s.pending, s.pendingBullmq].filter(Boolean)) {
    lines.push(`- Pending approvals (${x.deployment}, one API process, ${PENDING.toLocaleString('en')} destructive calls sent): ${x.held.toLocaleString('en')} held at once after ${x.secondsToHold} s; RSS ${x.rssBeforeMB} → ${x.rssAfterMB} MB (+${x.rssDeltaMB} MB, ${x.perApprovalKB} KB each, ${x.rssFor10kMB} MB per 10,000), heap +${x.heapDeltaMB} MB (${x.heapPerApprovalKB} KB each).`);
  }
  for (const x of [s.tasks, s.tasksBullmq].filter(Boolean)) {
    lines.push(`- Open tasks (${x.deployment}, one API process): ${x.tasks.toLocaleString('en')} calls of an hour-long tool made tasks in ${x.secondsToCreate} s (p50 ${x.createP50Ms} ms each, ${x.refused} refused); with all of them open, RSS +${x.rssDeltaMB} MB and heap +${x.heapDeltaMB} MB (${x.rssFor10kMB} MB per 10,000): a task is a row, not memory.`);
  }
  if (s.streams) lines.push(`- Event streams (embedded): ${s.streams.streams} open; RSS +${s.streams.rssDeltaMB} MB (${s.streams.perStreamKB} KB each), heap +${s.streams.heapDeltaMB} MB; after closing every one, RSS +${s.streams.rssAfterCloseDeltaMB} MB and heap +${s.streams.heapAfterCloseDeltaMB} MB over the baseline (${s.streams.heapKeptRatio}× of the heap they took).`);
  for (const x of [s.expiry, s.expiryBullmq].filter(Boolean)) {
    const ms = (l: any) => `p50 ${l.p50} / p99 ${l.p99} / max ${l.max} ms`;
    lines.push(`- Approval expiry (${x.deployment}, ${x.timeoutSeconds} s timeout): ${x.calls.toLocaleString('en')} destructive calls, ${x.peakHeld.toLocaleString('en')} held at once at the peak, all sent in ${x.secondsToSend} s; ${x.wrong} answered other than expired. Answered after its expiry: alone ${ms(x.alone.answered)}, with the others ${ms(x.atOnce.answered)} (earliest ${x.atOnce.earliestMs} ms); recorded after its expiry: alone ${ms(x.alone.recorded)}, with the others ${ms(x.atOnce.recorded)}.`);
  }
  if (s.callLog) lines.push(`- Call log (Postgres) at ${s.callLog.rows.toLocaleString('en')} rows of one person (inserted in ${s.callLog.insertSeconds} s): \`GET /api/calls\` first page p50 ${s.callLog.firstPage.p50} ms (p90 ${s.callLog.firstPage.p90}); a cursor page ${s.callLog.deepOffset.toLocaleString('en')} rows deep p50 ${s.callLog.deepPage.p50} ms (p90 ${s.callLog.deepPage.p90}).`);
  if (r.patterns) lines.push(...patternsMarkdown(r.patterns));
  if (Object.keys(r.load).length) lines.push('', '![latency distributions](' + `${r.file}.png)`, '');
  return lines.join('\n');
}

function writeResults(r: any) {
  const dir = path.join(BENCH_DIR, 'results');
  mkdirSync(dir, { recursive: true });
  const file = `${r.mode}-${r.startedAt.slice(0, 19).replace(/[:T]/g, '-')}`;
  r.file = file;
  writeFileSync(path.join(dir, `${file}.json`), `${JSON.stringify(r, null, 2)}\n`);
  const md = markdown(r);
  writeFileSync(path.join(dir, `${file}.md`), md);
  try {
    if (Object.keys(r.load).length) writeFileSync(path.join(dir, `${file}.png`), drawChart(r));
  } catch (err) {
    console.error('chart failed:', err);
  }
  console.log(`\n${md}`);
  console.log('\nGoals:');
  for (const g of r.goals) console.log(`  ${g.met === null ? 'n/a   ' : g.met ? 'met   ' : 'MISSED'}  ${g.goal}: ${g.value} (${g.target})`);
  console.log(`\nSaved bench/results/${file}.{json,md${Object.keys(r.load).length ? ',png' : ''}}`);
}

async function shutdown() {
  for (const c of children.reverse()) await c.stop().catch(() => {});
  for (const f of cleanups.reverse()) await f().catch(() => {});
}

main()
  .then(shutdown)
  .catch(async (err) => {
    console.error(err);
    await shutdown();
    process.exit(1);
  });
