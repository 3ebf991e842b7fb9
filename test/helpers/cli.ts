import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newPerson } from './http';

const root = path.resolve(import.meta.dirname, '../..');
let bundled: Promise<string> | undefined;

/**
 * The CLI bundled once per test file into one plain JS file: the same sources, but each run skips
 * tsx's startup, which dominates on a busy machine. `viaTsx` runs the real entry instead.
 */
function bundle(): Promise<string> {
  bundled ??= (async () => {
    const { build } = await import('esbuild');
    const outfile = path.join(mkdtempSync(path.join(os.tmpdir(), 'toolport-cli-bin-')), 'toolport.mjs');
    await build({
      entryPoints: [path.join(root, 'packages/cli/src/main.ts')],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'error',
      // Bundled CommonJS dependencies (ajv) call require(); give them one.
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
    return outfile;
  })();
  return bundled;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON. */
  json: any;
}

/**
 * Runs the toolport CLI as a child process with its own config file. Asynchronous on purpose: the
 * Toolport it talks to usually runs in the test's own process.
 */
export async function runToolportCli(
  args: string[],
  opts: { config: string; env?: Record<string, string | undefined>; stdin?: string; viaTsx?: boolean; cwd?: string; entry?: string },
): Promise<CliRun> {
  const entry = opts.entry ? [opts.entry] : opts.viaTsx ? ['--import', 'tsx', 'packages/cli/src/main.ts'] : [await bundle()];
  const env: Record<string, string> = {};
  const merged = { ...process.env, TOOLPORT_URL: undefined, TOOLPORT_API_KEY: undefined, TOOLPORT_CONFIG: opts.config, ...opts.env };
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) env[k] = v;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...entry, ...args], { cwd: opts.cwd ?? root, env, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      let json: any;
      try { json = JSON.parse(stdout); } catch { json = undefined; }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin!.end(opts.stdin ?? '');
  });
}

/** A new person with a developer API key. */
export async function developerKey(baseUrl: string, label: string): Promise<string> {
  const { client } = await newPerson(baseUrl, label);
  const res = await client.post('/api/keys', { name: 'cli' });
  assert.equal(res.status, 201, res.text);
  return res.body.key as string;
}

/**
 * The same CLI in this process through `runCli` (its entry minus argv/stdin plumbing): for the
 * many variants of a command whose child-process run is already covered.
 */
export async function runToolportCliHere(
  args: string[],
  opts: { config: string; env?: Record<string, string | undefined>; stdin?: string },
): Promise<CliRun> {
  const { runCli } = await import('../../packages/cli/src/cli');
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    env: { TOOLPORT_CONFIG: opts.config, HOME: process.env.HOME, ...opts.env },
    stdout: (t) => { stdout += t; },
    stderr: (t) => { stderr += t; },
    readStdin: async () => opts.stdin ?? '',
  });
  let json: any;
  try { json = JSON.parse(stdout); } catch { json = undefined; }
  return { code, stdout, stderr, json };
}

/** A long-running CLI command (`toolport dev`) as a child process, read line by line. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /**
   * The next stdout line (after the one the previous wait returned) matching `pattern`. Rejects
   * with everything printed so far when none comes within `timeoutMs` or the process ends first.
   */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** The exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * Starts the toolport CLI and leaves it running; the caller ends it (`child.kill('SIGINT')`).
 * `entry`: another build of it to run, such as the packed one a folder installed (`installPacked`).
 */
export async function startToolportCli(
  args: string[],
  opts: { config: string; env?: Record<string, string | undefined>; cwd?: string; entry?: string },
): Promise<CliProcess> {
  const env: Record<string, string> = {};
  const merged = { ...process.env, TOOLPORT_URL: undefined, TOOLPORT_API_KEY: undefined, TOOLPORT_CONFIG: opts.config, ...opts.env };
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) env[k] = v;
  const child = spawn(process.execPath, [opts.entry ?? (await bundle()), ...args], { cwd: opts.cwd ?? root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let cursor = 0;
  const changed = new Set<() => void>();
  const notify = () => {
    for (const f of [...changed]) f();
  };
  child.stdout!.setEncoding('utf8').on('data', (t: string) => {
    out += t;
    notify();
  });
  child.stderr!.setEncoding('utf8').on('data', (t: string) => {
    err += t;
  });
  let ended = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      ended = true;
      notify();
      resolve(code);
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const lines = out.split('\n');
          // The last piece may be a line still being written.
          for (let i = cursor; i < lines.length - 1; i++) {
            if (pattern.test(lines[i]!)) {
              cursor = i + 1;
              done();
              return resolve(lines[i]!);
            }
          }
          if (ended) fail(`the CLI exited before printing ${pattern}`);
        };
        const fail = (why: string) => {
          done();
          reject(new Error(`${why}\n--- stdout ---\n${out}\n--- stderr ---\n${err}`));
        };
        const timer = setTimeout(() => fail(`no line matching ${pattern} within ${timeoutMs} ms`), timeoutMs);
        const done = () => {
          clearTimeout(timer);
          changed.delete(look);
        };
        changed.add(look);
        look();
      });
    },
  };
}

/** No workspace resolution, tsx or stored login: what a developer's machine has. */
export function outsideTheRepository(env: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const merged = { ...process.env, NODE_OPTIONS: undefined, INIT_CWD: undefined, npm_lifecycle_event: undefined, TOOLPORT_URL: undefined, TOOLPORT_API_KEY: undefined, ...env };
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) out[k] = v;
  return out;
}

function sh(cmd: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env: outsideTheRepository(), timeout: 300_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/**
 * The kit and the CLI packed (`npm pack` runs each prepack: a build of today's sources) and
 * installed into `dir` as a developer installs them, dev dependencies left out. Resolves to the
 * installed CLI's entry (what `npx toolport` runs).
 */
export async function installPacked(dir: string): Promise<string> {
  const into = path.join(dir, '.tarballs');
  mkdirSync(into);
  const res = await sh('npm', ['pack', '-w', '@toolport/addon-kit', '-w', '@toolport/cli', '--pack-destination', into, '--json'], root);
  assert.equal(res.code, 0, res.stderr);
  const tarballs = (JSON.parse(res.stdout) as Array<{ filename: string }>).map((p) => path.join(into, p.filename));
  assert.equal((await sh('npm', ['init', '-y'], dir)).code, 0);
  const installed = await sh('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], dir);
  assert.equal(installed.code, 0, installed.stderr);
  return path.join(dir, 'node_modules/@toolport/cli/dist/toolport.js');
}
