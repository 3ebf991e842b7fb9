#!/usr/bin/env node
// Runs the suite in two passes: on the embedded default (PGlite, in-process queue) and on
// Postgres + Redis, their files from one queue at once. Each test file runs in the passes its tier
// (TIERS below) says. Without those services the second pass is skipped, unless REQUIRE_SERVICES=1
// (CI), where their absence fails the run. `npm test -- oauth` runs the files whose name contains `oauth`, each in its passes;
// TEST_TARGETS=services runs one pass.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * Every test file's tier, by name. A file missing here, or listed but gone, stops the run: a new
 * file is classified when it is added, not left to run wherever.
 *   unit              touches no database, queue or server: once, in the first pass
 *   both              a Toolport (or a port) on the pass's own backing: in both passes. The ports
 *                     (database, queue, bus, limiter, lease, dispatch) are here, so each backing
 *                     meets their contract; when in doubt a file is `both`
 *   surface           a Toolport, but what it checks is the public surface (protocol shapes, input
 *                     checks, the packages, the kits, the CLI), the same code on either backing:
 *                     once, in the last pass (Postgres + Redis when they answer), which has the
 *                     idle time while the passes run together
 *   browser-embedded  drives Chromium along a person's path, which is what `npm start` runs: once,
 *                     in the embedded pass
 *   browser-services  drives Chromium and is about the hosted deployment (several processes,
 *                     Redis, Web Push, operators): once, in the services pass
 *   hosted            the load only a hosted deployment meets (thousands of people's approvals
 *                     and streams at once): once, in the services pass
 */
const TIERS = {
  'account-recovery': 'browser-embedded', // mail through a real SMTP server
  'account-tokens': 'both', // a browser step, but renewals shared by two servers on services
  accounts: 'both',
  'addon-accounts': 'both',
  'addon-kit-accounts': 'browser-embedded', // the kits against a real OAuth provider; no Toolport at all
  'addon-kit-python': 'surface',
  'addon-kit': 'unit',
  'addon-settings': 'both', // a browser step, but also what the BullMQ job carries
  addons: 'both',
  'app-tool-choices': 'browser-embedded',
  'approval-rules': 'both', // one browser step among rules enforced on the call path
  'approvals-confirm': 'both',
  'approvals-in-app': 'browser-services', // also decides across API processes
  'approvals-in-app-modern': 'browser-embedded',
  'call-page': 'browser-embedded',
  'approvals-live': 'both',
  approvals: 'both',
  arguments: 'unit',
  'bus-reconnect': 'both',
  bus: 'both',
  caches: 'unit',
  'call-budget': 'both',
  'call-cancel': 'unit',
  'call-log': 'both',
  'change-registry': 'both',
  'check-script': 'both',
  'cli-addons': 'surface',
  'cli-dev': 'both',
  'cli-local': 'unit',
  cli: 'surface',
  conformance: 'surface',
  'connected-accounts': 'browser-embedded', // the person's side; account-tokens has the call path on both
  'core-cycles': 'unit',
  'dashboard-accounts': 'browser-embedded',
  'dashboard-activity': 'browser-embedded',
  'dashboard-approval-card': 'browser-embedded',
  'dashboard-approvals-trust': 'browser-embedded',
  'dashboard-axe-dark-desktop': 'browser-embedded',
  'dashboard-axe-dark-phone': 'browser-embedded',
  'dashboard-axe-light-desktop': 'browser-embedded',
  'dashboard-axe-light-phone': 'browser-embedded',
  'dashboard-catalog': 'browser-embedded',
  'dashboard-errors': 'browser-embedded',
  'dashboard-keyboard': 'browser-embedded',
  'dashboard-layout': 'browser-embedded',
  'dashboard-names': 'browser-embedded',
  'dashboard-phone': 'browser-embedded',
  'dashboard-signup-consent': 'browser-embedded',
  'dashboard-unicode': 'unit',
  dashboard: 'browser-embedded',
  'dispatch-bullmq': 'both',
  dispatch: 'both',
  errors: 'surface',
  'example-notes': 'unit',
  'faults-lease': 'both',
  faults: 'both',
  'graceful-stop': 'both',
  'held-calls': 'both',
  infra: 'unit',
  journeys: 'browser-embedded',
  'key-rotation': 'both',
  limits: 'both',
  listings: 'browser-services', // the public catalog; a delisting reaches every app through the bus
  'load-smoke': 'hosted',
  'manifest-text': 'unit',
  'manifest-tool-accounts': 'unit',
  manifest: 'unit',
  'mcp-approvals': 'both',
  'mcp-list-changed': 'both',
  'mcp-revisions': 'surface',
  mcp: 'both',
  metrics: 'both',
  'multi-process': 'both',
  'oauth-cimd': 'surface',
  'oauth-refresh-race': 'both',
  'oauth-tokens': 'both',
  oauth: 'both',
  operators: 'browser-services', // operators review the listings of a hosted deployment
  outbound: 'unit',
  packages: 'surface',
  passkeys: 'browser-embedded',
  'password-cost': 'surface',
  'pathological-patterns': 'surface',
  patterns: 'unit',
  'push-dismiss': 'browser-services', // Web Push through the real service worker
  push: 'both',
  'real-clients': 'browser-embedded',
  releases: 'both', // a browser step, but releases and apps on two servers on services
  'security-arguments': 'surface',
  'security-auth': 'both',
  'security-mcp': 'both',
  'security-oauth': 'both',
  'security-tenancy': 'both',
  'signin-limits': 'both',
  signing: 'unit',
  ssrf: 'both',
  startup: 'both',
  'stream-revocation': 'both',
  tasks: 'both', // tasks outlive an API process: on services, a restart with Redis and BullMQ
  'tasks-activity': 'browser-embedded',
  'tool-surface': 'both', // one browser step among checks of what apps are sent
  'tools-cache': 'both',
  tracing: 'both',
  'trusted-proxies': 'both',
};

/**
 * The files that take longest in either pass (.test-times/), started first so that the run does not
 * end waiting on one long file that started last.
 */
const LONG = [
  'load-smoke', 'dashboard-axe-dark-desktop', 'dashboard-axe-dark-phone', 'dashboard-axe-light-desktop', 'dashboard-axe-light-phone',
  'packages', 'multi-process', 'faults', 'account-recovery', 'account-tokens', 'signin-limits', 'connected-accounts',
  'approvals-in-app', 'conformance', 'dashboard-keyboard', 'call-budget', 'approval-rules', 'dashboard-layout', 'mcp-list-changed',
  'addon-kit-python', 'faults-lease', 'dispatch-bullmq', 'graceful-stop', 'key-rotation', 'addon-settings', 'cli-dev',
];
const longFirst = (file) => {
  const i = LONG.indexOf(nameOf(file));
  return i < 0 ? LONG.length : i;
};

/** Whether a file of `tier` runs in the pass on `target`, the first or the last pass of this run or not. */
const PASSES = {
  unit: (target, first) => first,
  both: () => true,
  surface: (target, first, last) => last,
  'browser-embedded': (target) => target === 'embedded',
  'browser-services': (target) => target === 'services',
  hosted: (target) => target === 'services',
};

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const args = process.argv.slice(2);
const only = args.filter((a) => !a.startsWith('--'));
const targets = (process.env.TEST_TARGETS ?? 'embedded,services').split(',');
function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) { if (name !== 'helpers' && name !== 'fixtures') out.push(...findTests(p)); }
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

function reachable(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 1500 }, () => { s.destroy(); resolve(true); });
    s.on('error', () => resolve(false));
    s.on('timeout', () => { s.destroy(); resolve(false); });
  });
}

/** Where a pass's per-file wall times go, slowest first. */
const timesFile = (target) => path.join(root, '.test-times', `${target}.txt`);
mkdirSync(path.join(root, '.test-times'), { recursive: true });

const nameOf = (file) => path.relative(path.join(root, 'test'), file).replace(/\.test\.ts$/, '');
let files = findTests(path.join(root, 'test'));
const unlisted = files.map(nameOf).filter((n) => !(n in TIERS));
const gone = Object.keys(TIERS).filter((n) => !files.some((f) => nameOf(f) === n));
const unknown = Object.entries(TIERS).filter(([, t]) => !(t in PASSES)).map(([n, t]) => `${n}: ${t}`);
if (unlisted.length || gone.length || unknown.length) {
  if (unlisted.length) console.error(`scripts/test.mjs: give each test file a tier in TIERS: ${unlisted.join(', ')}`);
  if (gone.length) console.error(`scripts/test.mjs: TIERS lists files that do not exist: ${gone.join(', ')}`);
  if (unknown.length) console.error(`scripts/test.mjs: unknown tiers (${Object.keys(PASSES).join(', ')}): ${unknown.join(', ')}`);
  process.exit(1);
}
if (only.length) {
  files = files.filter((f) => only.some((o) => f.includes(o)));
  if (!files.length) {
    console.error(`No test file's name contains ${only.join(' or ')}.`);
    process.exit(1);
  }
}

const summary = [];
/** The targets this run can reach, in order. */
const reached = [];
for (const target of targets) {
  if (target === 'services') {
    const pg = await reachable('127.0.0.1', 5432);
    const redis = await reachable('127.0.0.1', 6379);
    if (!pg || !redis) {
      const missing = [!pg && 'Postgres on 127.0.0.1:5432', !redis && 'Redis on 127.0.0.1:6379'].filter(Boolean).join(' and ');
      if (process.env.REQUIRE_SERVICES === '1') {
        console.error(`REQUIRE_SERVICES=1 but ${missing} is not reachable.`);
        process.exit(1);
      }
      const left = files.filter((f) => TIERS[nameOf(f)] === 'browser-services').length;
      console.log(`# skipping the Postgres + Redis pass: ${missing} is not reachable${left ? ` (${left} browser files run only there)` : ''}`);
      summary.push(`# pass services: skipped`);
      continue;
    }
  }
  reached.push(target);
}
/**
 * One queue for every pass: each file of each pass is a job, the longest first (LONG), and up to
 * `slots` run at once whichever pass they belong to, so neither pass waits idle while the other
 * still has files (on 2 cores, two passes of two files each ended up to 110 s apart).
 */
const jobs = [];
reached.forEach((target, i) => {
  const mine = files.filter((file) => PASSES[TIERS[nameOf(file)]](target, i === 0, i === reached.length - 1));
  // After the long ones, each pass's files spread evenly over the queue: the embedded files keep the
  // cores busy and the services files wait on processes, so a mix of both fills the machine best.
  mine.forEach((file, k) => jobs.push({ target, file, order: [longFirst(file), k / mine.length] }));
});
jobs.sort((a, b) => a.order[0] - b.order[0] || a.order[1] - b.order[1]);
/**
 * Files at once, for a 2-core machine (CI's): two per pass. The embedded files keep the cores busy,
 * the services files wait on processes and real services; together they fill each other's idle time.
 */
const slots = Number(process.env.TEST_CONCURRENCY ?? 2 * Math.max(1, reached.length));
/** A file still running after this is stopped and fails (node --test's per-file timeout, as before). */
const FILE_TIMEOUT_MS = 300_000;

const passOf = new Map(reached.map((target) => [target, { target, files: 0, done: 0, started: 0, ended: 0, failed: [], times: [], counts: {} }]));
for (const j of jobs) passOf.get(j.target).files++;

/** Runs one file in its own process, as `node --test` would, its output kept and printed whole at its end. */
function runJob({ target, file }) {
  const pass = passOf.get(target);
  pass.started ||= Date.now();
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', '--test-reporter=tap', '--test-reporter-destination=stdout', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: root,
    // The workspace's own packages (the add-on kit) are used from their TypeScript source, in the
    // tests and in every process they start, not from a build that may be stale.
    env: { ...process.env, TEST_TARGET: target, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=@toolport/source`.trim() },
  });
  const out = [];
  child.stdout.on('data', (d) => out.push(d));
  child.stderr.on('data', (d) => out.push(d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, FILE_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const seconds = (Date.now() - started) / 1000;
      const text = Buffer.concat(out).toString('utf8');
      const ok = code === 0 && !signal;
      const name = path.relative(root, file);
      console.log(`\n# ===== ${target}: ${name} (${seconds.toFixed(1)} s${ok ? '' : ', FAILED'}) =====`);
      process.stdout.write(text);
      if (timedOut) console.log(`not ok - ${name} was stopped after ${FILE_TIMEOUT_MS / 1000} s`);
      for (const [, key, n] of text.matchAll(/^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) pass.counts[key] = (pass.counts[key] ?? 0) + Number(n);
      pass.times.push([seconds, name]);
      if (!ok) pass.failed.push(name);
      pass.done++;
      pass.ended = Date.now();
      resolve();
    });
  });
}

let next = 0;
await Promise.all(
  Array.from({ length: Math.min(slots, jobs.length) }, async () => {
    while (next < jobs.length) await runJob(jobs[next++]);
  }),
);

for (const pass of passOf.values()) {
  if (!pass.files) {
    summary.push(`# pass ${pass.target}: 0 files`);
    continue;
  }
  const count = (tier) => jobs.filter((j) => j.target === pass.target && TIERS[nameOf(j.file)] === tier).length;
  const tiers = Object.keys(PASSES).map((t) => count(t) && `${count(t)} ${t}`).filter(Boolean).join(', ');
  const rows = pass.times.sort((a, b) => b[0] - a[0]).map(([sec, name]) => `${sec.toFixed(1).padStart(7)} s  ${name}`);
  writeFileSync(timesFile(pass.target), rows.join('\n') + '\n');
  const c = pass.counts;
  console.log(`\n# ${pass.target}: ${c.tests ?? 0} tests, ${c.pass ?? 0} passed, ${c.fail ?? 0} failed, ${c.cancelled ?? 0} cancelled, ${c.skipped ?? 0} skipped`);
  console.log(`# the slowest files of this pass (wall time each; all in ${path.relative(root, timesFile(pass.target))}):\n${rows.slice(0, 8).map((l) => `#   ${l}`).join('\n')}`);
  if (pass.failed.length) console.log(`# failed on ${pass.target}: ${pass.failed.join(', ')}`);
  summary.push(`# pass ${pass.target}: ${pass.files} files (${tiers}), ${Math.round((pass.ended - pass.started) / 1000)} s${pass.failed.length ? ', FAILED' : ''}`);
}
const failed = [...passOf.values()].some((p) => p.failed.length);
console.log(`\n${summary.join('\n')}`);
process.exit(failed ? 1 : 0);
