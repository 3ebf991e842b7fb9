#!/usr/bin/env node
// Runs the whole suite twice: on the embedded default (PGlite, in-process queue) and on
// Postgres + Redis. Without those services the second pass is skipped, unless
// REQUIRE_SERVICES=1 (CI), where their absence fails the run.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

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

let files = findTests(path.join(root, 'test'));
if (only.length) files = files.filter((f) => only.some((o) => f.includes(o)));
let failed = false;

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
      console.log(`# skipping the Postgres + Redis pass: ${missing} is not reachable`);
      continue;
    }
  }
  console.log(`\n# ===== target: ${target} (${files.length} files) =====`);
  const res = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...files],
    // The workspace's own packages (the add-on kit) are used from their TypeScript source, in the
    // tests and in every process they start, not from a build that may be stale.
    { stdio: 'inherit', cwd: root, env: { ...process.env, TEST_TARGET: target, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=@toolport/source`.trim() } },
  );
  if (res.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
