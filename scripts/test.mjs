#!/usr/bin/env node
// Runs the suite in two passes: on the embedded default (PGlite, in-process queue), then on
// Postgres + Redis. Each test file runs in the passes its tier (TIERS below) says. Without those
// services the second pass is skipped, unless REQUIRE_SERVICES=1 (CI), where their absence fails
// the run. `npm test -- oauth` runs the files whose name contains `oauth`, each in its passes;
// TEST_TARGETS=services runs one pass.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statfsSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { bundleTests } from './bundle-tests.mjs';

/**
 * Every test file's tier, by name. A file missing here, or listed but gone, stops the run: a new
 * file is classified when it is added, not left to run wherever.
 *   unit              touches no database, queue or server: once, in the first pass
 *   both              a Toolport (or a port) on the pass's own backing: in both passes. The ports
 *                     (database, queue, bus, limiter, lease, dispatch) are here, so each backing
 *                     meets their contract; when in doubt a file is `both`
 *   surface           a Toolport, but what it checks is the public surface (protocol shapes, input
 *                     checks, sign-in, OAuth, tenancy, add-on and account records, the packages,
 *                     the kits, the CLI): the same code and SQL on either backing, whose ports the
 *                     `both` files hold to their contract. Once, in the last pass (Postgres + Redis
 *                     when they answer), which has the idle time while the passes run together
 *   browser-embedded  drives Chromium along a person's path, which is what `npm start` runs: once,
 *                     in the embedded pass
 *   browser-services  drives Chromium and is about the hosted deployment (several processes,
 *                     Redis, Web Push, operators): once, in the services pass
 *   hosted            what only a hosted deployment has (BullMQ, Redis going away, several
 *                     processes, thousands of people's approvals and streams at once): once, in
 *                     the services pass; on the embedded default it has nothing to run
 */
const TIERS = {
  'account-recovery': 'browser-embedded', // mail through a real SMTP server
  'account-tokens': 'both', // a browser step, but renewals shared by two servers on services
  accounts: 'surface',
  'addon-accounts': 'surface',
  'addon-kit-accounts': 'browser-embedded', // the kits against a real OAuth provider; no Toolport at all
  'addon-kit-python': 'surface',
  'addon-kit': 'unit',
  'addon-settings': 'both', // a browser step, but also what the BullMQ job carries
  addons: 'surface',
  'app-tool-choices': 'browser-embedded',
  'approval-rules': 'both', // one browser step among rules enforced on the call path
  'approvals-confirm': 'both',
  'approvals-in-app': 'browser-services', // also decides across API processes
  'approvals-in-app-modern': 'browser-embedded',
  'call-page': 'browser-embedded',
  'call-session': 'both',
  'tool-lists': 'both', // stored lists shared by every process on services
  'artifacts': 'both', // on services the worker keeps the files before the outcome crosses Redis
  'exclusive-tools': 'both', // the line is on Redis on services, in memory on the embedded default
  'approvals-live': 'both',
  approvals: 'both',
  arguments: 'unit',
  'audit-chain': 'unit',
  'audit-export': 'browser-embedded', // audit: the same chain and CLI on both backings
  audit: 'both', // the writer's one statement on each database, and two processes on one chain on services
  'audit-otlp': 'both', // the exporter's cursors and lease on each database; two processes on services
  'audit-retention': 'both', // removal and its checkpoint while calls go on, on each database
  'bus-reconnect': 'hosted',
  bus: 'both',
  caches: 'unit',
  'call-budget': 'both',
  'call-cancel': 'unit',
  'call-log': 'both',
  retention: 'both', // one browser step; removal while calls go on is each backing's
  'change-registry': 'both',
  'check-script': 'surface',
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
  'dashboard-axe-desktop': 'browser-embedded',
  'dashboard-axe-phone': 'browser-embedded',
  'dashboard-catalog': 'browser-embedded',
  'dashboard-errors': 'browser-embedded',
  'dashboard-keyboard': 'browser-embedded',
  'dashboard-layout': 'browser-embedded',
  'dashboard-names': 'browser-embedded',
  'dashboard-phone': 'browser-embedded',
  'dashboard-signup-consent': 'browser-embedded',
  'dashboard-unicode': 'unit',
  dashboard: 'browser-embedded',
  discovery: 'surface', // server cards and registry entries: what clients and registries read before connecting
  'dispatch-bullmq': 'hosted',
  dispatch: 'both',
  errors: 'surface',
  'example-notes': 'unit',
  'faults-lease': 'hosted',
  faults: 'hosted',
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
  mcp: 'surface',
  metrics: 'surface',
  'multi-process': 'hosted',
  'oauth-cimd': 'surface',
  'oauth-refresh-race': 'surface', // OAuth's refresh rule; real concurrency only on Postgres
  'oauth-tokens': 'both',
  oauth: 'surface',
  operators: 'browser-services', // operators review the listings of a hosted deployment
  outbound: 'unit',
  packages: 'surface',
  passkeys: 'browser-embedded',
  'password-cost': 'surface',
  'pathological-patterns': 'surface',
  patterns: 'unit',
  'python-sdk': 'surface', // the real `mcp` package from the package index, in a virtualenv
  'push-dismiss': 'browser-services', // Web Push through the real service worker
  push: 'surface',
  'real-clients': 'browser-embedded',
  releases: 'both', // a browser step, but releases and apps on two servers on services
  'schema-words': 'unit',
  'security-arguments': 'surface',
  'security-auth': 'surface',
  'security-mcp': 'surface',
  'security-oauth': 'surface',
  'security-tenancy': 'surface',
  'signin-limits': 'surface', // the limiter's contract is limits' (both); this is sign-in's use of it, and its two-process case
  signing: 'unit',
  ssrf: 'surface',
  startup: 'both',
  'stream-revocation': 'both',
  tasks: 'both', // tasks outlive an API process: on services, a restart with Redis and BullMQ
  'tasks-activity': 'browser-embedded',
  'tasks-approval': 'browser-embedded',
  'tool-why': 'surface',
  'tool-surface': 'surface', // one browser step among checks of what apps are sent
  'tools-cache': 'both',
  tracing: 'both',
  'trusted-proxies': 'surface',
};

/**
 * The files that take longest (summed test time, .test-times/), started first in their pass so that
 * a pass does not end waiting on one long file that started last.
 */
const LONG = [
  'load-smoke', 'packages', 'dashboard-axe-desktop', 'dashboard-axe-phone',
  'faults', 'approval-rules', 'account-recovery', 'account-tokens', 'key-rotation', 'oauth-refresh-race', 'connected-accounts',
  'dashboard-layout', 'dashboard-keyboard', 'mcp-list-changed', 'approvals-in-app', 'conformance', 'dispatch-bullmq',
  'multi-process', 'call-budget', 'faults-lease', 'graceful-stop',
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
/**
 * Files at once in each pass, for a 2-core machine (CI's). The embedded pass keeps both cores busy
 * (3% idle at two: a third file only slows each); the services pass waits on processes and real
 * services (24% idle at two), and a third file took it from 601 s to 511 s. TEST_CONCURRENCY sets
 * one number for every pass, to measure another.
 */
const CONCURRENCY = { embedded: 2, services: 3 };
/** Both passes at once (the default): two files each. */
const CONCURRENCY_TOGETHER = { embedded: 2, services: 2 };

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

/** Where a pass's per-file times go (scripts/file-times.mjs), and its failures (scripts/failures.mjs). */
const timesFile = (target) => path.join(root, '.test-times', `${target}.txt`);
const failuresFile = (target) => path.join(root, '.test-times', `${target}.failures.txt`);
mkdirSync(path.join(root, '.test-times'), { recursive: true });

/**
 * Scratch files in memory where the machine has room: each file copies a 40 MB PGlite template and
 * Chromium writes a profile, and on this machine's disk the copy alone was half an embedded start.
 * TMPDIR set by the caller wins.
 */
function scratchDir() {
  if (process.env.TMPDIR) return process.env.TMPDIR;
  try {
    // Tests run programs they write to TMPDIR (the CLI, the kits), so a noexec mount will not do.
    const shm = readFileSync('/proc/mounts', 'utf8').split('\n').find((l) => l.split(' ')[1] === '/dev/shm');
    if (!shm || /\bnoexec\b/.test(shm)) return undefined;
    const fs = statfsSync('/dev/shm');
    if (fs.bavail * fs.bsize < 4 * 2 ** 30) return undefined;
    const dir = '/dev/shm/toolport-tests';
    mkdirSync(dir, { recursive: true });
    return dir;
  } catch {
    return undefined;
  }
}
const TMPDIR = scratchDir();

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
/** The passes this run makes, in order: a target and its files, the longest first. */
const passes = [];
reached.forEach((target, i) => {
  const pass = files.filter((f) => PASSES[TIERS[nameOf(f)]](target, i === 0, i === reached.length - 1)).sort((a, b) => longFirst(a) - longFirst(b));
  if (!pass.length) summary.push(`# pass ${target}: 0 files`);
  else passes.push({ target, files: pass });
});

/**
 * The test files run as bundles of the same sources (scripts/bundle-tests.mjs), and the Toolports
 * they start from a bundle of its entry point (TOOLPORT_TEST_MAIN); TEST_BUNDLE=0 runs both
 * through tsx instead.
 */
const bundleDir = path.join(root, '.test-bundle');
const bundled = process.env.TEST_BUNDLE === '0' ? undefined : await bundleTests(root, [...new Set(passes.flatMap((p) => p.files))], bundleDir);
const bundleOf = (file) => (bundled ? path.join(bundleDir, path.relative(path.join(root, 'test'), file).replace(/\.ts$/, '.mjs')) : file);
/** A report's bundle paths as the test files they came from. */
const sourcePaths = (text) => text.replaceAll(`${bundleDir}/`, `${path.join(root, 'test')}/`).replace(/\.test\.mjs\b/g, '.test.ts');

/**
 * V8 flags for every test process. --liftoff-only: PGlite's WebAssembly runs on V8's baseline
 * compiler without tiering up; a test file's process lives seconds, so optimising the 9 MB module
 * in the background cost more CPU than it ever won back (a third of an embedded file's CPU).
 */
const NODE_FLAGS = ['--liftoff-only'];

/**
 * Runs one pass as its own `node --test`. `out` null: its TAP goes straight to stdout; else to that
 * file, printed whole once the pass ends (passes that run together do not interleave their output).
 */
function runPass({ target, files: pass }, concurrency, out) {
  const count = (tier) => pass.filter((f) => TIERS[nameOf(f)] === tier).length;
  const tiers = Object.keys(PASSES).map((t) => count(t) && `${count(t)} ${t}`).filter(Boolean).join(', ');
  const header = `\n# ===== target: ${target} (${pass.length} files: ${tiers}; ${concurrency} at once) =====`;
  if (!out) console.log(header);
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      ...(bundled ? ['--enable-source-maps'] : ['--import', 'tsx']), ...NODE_FLAGS, '--test', `--test-concurrency=${concurrency}`, '--test-timeout=300000',
      '--test-reporter=tap', `--test-reporter-destination=${out ?? 'stdout'}`,
      `--test-reporter=${path.join(root, 'scripts/file-times.mjs')}`, `--test-reporter-destination=${timesFile(target)}`,
      `--test-reporter=${path.join(root, 'scripts/failures.mjs')}`, `--test-reporter-destination=${failuresFile(target)}`,
      ...pass.map(bundleOf),
    ],
    // The workspace's own packages (the add-on kit) are used from their TypeScript source, in the
    // tests and in every process they start, not from a build that may be stale.
    { stdio: ['ignore', out ? 'ignore' : 'inherit', 'inherit'], cwd: root, env: { ...process.env, ...(TMPDIR ? { TMPDIR } : {}), ...(bundled ? { TOOLPORT_TEST_MAIN: bundled.main } : {}), TEST_TARGET: target, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=@toolport/source`.trim() } },
  );
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      if (out) {
        console.log(header);
        if (existsSync(out)) process.stdout.write(sourcePaths(readFileSync(out, 'utf8')));
      }
      if (existsSync(timesFile(target))) {
        const slowest = sourcePaths(readFileSync(timesFile(target), 'utf8')).split('\n').filter(Boolean).slice(0, 8);
        console.log(`\n# the slowest files of this pass (their tests' summed time; all in ${path.relative(root, timesFile(target))}):\n${slowest.map((l) => `#   ${l.replace(root + '/', '')}`).join('\n')}`);
      }
      const ok = code === 0 && !signal;
      const line = `# pass ${target}: ${pass.length} files (${tiers}), ${Math.round((Date.now() - started) / 1000)} s${ok ? '' : ', FAILED'}`;
      console.log(line);
      const failed = existsSync(failuresFile(target)) ? sourcePaths(readFileSync(failuresFile(target), 'utf8')).trim() : '';
      resolve({ line, ok, failed: failed && `# failed in the ${target} pass:\n${failed}` });
    });
  });
}

// Both passes at once by default: the services pass waits on processes and services, the embedded
// one keeps the cores busy, and at once they fill each other's idle time (930 s against 1,468 s one
// after the other on 2 cores). TEST_PASSES=apart runs them one after the other.
const together = process.env.TEST_PASSES !== 'apart' && passes.length > 1;
let results;
if (together) {
  // Each pass on its own: the services pass waits on processes and services, the embedded one
  // keeps the cores busy; at once they fill each other's idle time.
  results = await Promise.all(passes.map((p, i) => runPass(p, process.env.TEST_CONCURRENCY ?? CONCURRENCY_TOGETHER[p.target] ?? 2, i === 0 ? null : path.join(root, '.test-times', `${p.target}.tap`))));
} else {
  results = [];
  for (const p of passes) results.push(await runPass(p, process.env.TEST_CONCURRENCY ?? CONCURRENCY[p.target] ?? 2, null));
}
summary.push(...results.map((r) => r.line));
const failed = results.some((r) => !r.ok);
// Last, so that a log read from its tail names what failed in any pass.
for (const r of results) if (r.failed) console.log(`\n${r.failed}`);
console.log(`\n${summary.join('\n')}`);
process.exit(failed ? 1 : 0);
