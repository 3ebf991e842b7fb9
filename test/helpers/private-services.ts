// Private Postgres and Redis instances for fault tests: their own ports and data directories, so a
// test may kill and restart them without touching the shared services other tests (and other
// engineers) use. Toolport processes are spawned from the real entry point against them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { createDatabaseFromTemplate } from './db-template';
import { freePort, servicesEnv } from './target';
import { mailDirs, spareMailDir } from './mail-files';
import { toolportEntry } from './process';

const PG_DIRS = ['/usr/local/bin', ...listPgBinDirs(), '/usr/bin'];
const REDIS_DIRS = ['/usr/bin', '/usr/local/bin'];

function listPgBinDirs(): string[] {
  try {
    const root = '/usr/lib/postgresql';
    return spawnSync('ls', [root], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean)
      .sort((a, b) => Number(b) - Number(a))
      .map((v) => path.join(root, v, 'bin'));
  } catch {
    return [];
  }
}

function findBinary(name: string, dirs: string[]): string | undefined {
  for (const d of dirs) if (existsSync(path.join(d, name))) return path.join(d, name);
  return undefined;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
/** Postgres refuses to run as root: as root, it runs as the `postgres` system user through runuser. */
const PG_USER = 'postgres';

/**
 * Why private services cannot run here, or undefined when they can. Callers skip with this
 * reason, except under REQUIRE_SERVICES=1 where a missing binary is a failure, not a skip.
 */
function privateServicesMissing(): string | undefined {
  const missing = [
    !findBinary('redis-server', REDIS_DIRS) && 'redis-server',
    !findBinary('initdb', PG_DIRS) && 'initdb',
    !findBinary('postgres', PG_DIRS) && 'postgres',
    isRoot && !findBinary('runuser', ['/usr/sbin', '/sbin', '/usr/bin']) && 'runuser (to run Postgres as a non-root user)',
  ].filter(Boolean);
  if (isRoot && spawnSync('id', ['-u', PG_USER]).status !== 0) missing.push(`a "${PG_USER}" system user (Postgres will not run as root)`);
  return missing.length ? `private services need ${missing.join(', ')}` : undefined;
}

/** The skip option for a fault suite: a reason, false to run, or a thrown error under REQUIRE_SERVICES=1. */
export function privateServicesSkip(target: string): string | false {
  if (target !== 'services') return 'fault cases run their own Postgres and Redis once, in the services pass';
  const missing = privateServicesMissing();
  if (missing && process.env.REQUIRE_SERVICES === '1') throw new Error(`REQUIRE_SERVICES=1 but ${missing}.`);
  return missing ?? false;
}

function asPgUser(cmd: string, args: string[]): [string, string[]] {
  return isRoot ? [findBinary('runuser', ['/usr/sbin', '/sbin', '/usr/bin'])!, ['-u', PG_USER, '--', cmd, ...args]] : [cmd, args];
}

async function waitForPort(port: number, timeoutMs: number, what: string) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`${what} did not listen on ${port} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Kills the whole process group we started (runuser and the server, or the server alone). */
async function killGroup(child: ChildProcess | undefined, signal: NodeJS.Signals) {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
  await Promise.race([exited, sleep(15_000)]);
}

export interface PrivateRedis {
  port: number;
  url: string;
  /** Whether it writes (and, at start, reads) an append-only file, so queued jobs survive a restart. */
  appendonly: boolean;
  start(): Promise<void>;
  /** SIGKILL: no shutdown, no final save. */
  kill(): Promise<void>;
  restart(opts?: { downMs?: number }): Promise<void>;
  /** Starts it again if a failed case left it down. */
  ensureUp(): Promise<void>;
  stop(): Promise<void>;
}

const running = (child: ChildProcess | undefined) => !!child && child.exitCode === null && child.signalCode === null;

/** restart, ensureUp and stop: the same for every private service, from its own start and kill. */
function lifecycle(self: () => { start(): Promise<void>; kill(): Promise<void> }, child: () => ChildProcess | undefined, dir: string) {
  return {
    async restart({ downMs = 0 } = {}) {
      await self().kill();
      if (downMs) await sleep(downMs);
      await self().start();
    },
    async ensureUp() {
      if (!running(child())) await self().start();
    },
    async stop() {
      await killGroup(child(), 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A private `redis-server` on a free port with its data in a temp dir. */
async function startPrivateRedis(opts: { appendonly?: boolean } = {}): Promise<PrivateRedis> {
  const bin = findBinary('redis-server', REDIS_DIRS);
  if (!bin) throw new Error('redis-server is not installed');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-redis-'));
  const port = await freePort();
  const appendonly = opts.appendonly ?? true;
  let child: ChildProcess | undefined;
  const self: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    appendonly,
    async start() {
      child = spawn(
        bin,
        [
          '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
          '--appendonly', self.appendonly ? 'yes' : 'no', '--appendfsync', 'everysec',
          '--maxmemory-policy', 'noeviction', '--protected-mode', 'no',
        ],
        { detached: true, stdio: 'ignore' },
      );
      await waitForPort(port, 10_000, 'redis-server');
    },
    async kill() {
      await killGroup(child, 'SIGKILL');
    },
    ...lifecycle(() => self, () => child, dir),
  };
  await self.start();
  return self;
}

export interface PrivatePostgres {
  port: number;
  /** Connection string of the `postgres` maintenance database. */
  adminUrl: string;
  /** A fresh database on this server: a copy of the migrated template, with the suite's operator (db-template.ts). */
  createDatabase(name?: string): Promise<string>;
  start(): Promise<void>;
  /** SIGKILL to the postmaster and every backend at once: a crash, recovered from the WAL at start. */
  kill(): Promise<void>;
  restart(opts?: { downMs?: number }): Promise<void>;
  /** Starts it again if a failed case left it down. */
  ensureUp(): Promise<void>;
  stop(): Promise<void>;
}

/** A private Postgres cluster (initdb in a temp dir) on a free port, trust auth, as a non-root user. */
async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const initdb = findBinary('initdb', PG_DIRS);
  const server = findBinary('postgres', PG_DIRS);
  if (!initdb || !server) throw new Error('Postgres binaries are not installed');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-pg-'));
  if (isRoot) {
    const uid = Number(spawnSync('id', ['-u', PG_USER], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', PG_USER], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const data = path.join(dir, 'data');
  const [cmd, args] = asPgUser(initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const init = spawnSync(cmd, args, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;

  const self: PrivatePostgres = {
    port,
    adminUrl,
    async createDatabase(name = `tp_fault_${randomBytes(4).toString('hex')}`) {
      await createDatabaseFromTemplate(adminUrl, name);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async start() {
      const [c, a] = asPgUser(server, [
        '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
        // The OS never crashes in these tests, only the server: durability to the page cache is enough.
        '-c', 'fsync=off', '-c', 'max_connections=200', '-c', 'shared_buffers=32MB',
      ]);
      child = spawn(c, a, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d) => {
        if (stderr.length < 20_000) stderr += d;
      });
      const until = Date.now() + 30_000;
      // Listening is not ready: after a crash the server refuses connections until recovery ends.
      for (;;) {
        if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
        const probe = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 });
        const ok = await probe`select 1`.then(() => true, () => false);
        await probe.end({ timeout: 1 }).catch(() => {});
        if (ok) return;
        if (Date.now() > until) throw new Error(`postgres did not accept connections within 30 s: ${stderr}`);
        await sleep(100);
      }
    },
    async kill() {
      // The postmaster's pid, as a fallback if it is not in our process group.
      const pidFile = path.join(data, 'postmaster.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
      await killGroup(child, 'SIGKILL');
      for (let i = 0; pid && alive(pid) && i < 100; i++) await sleep(50);
    },
    ...lifecycle(() => self, () => child, dir),
  };
  await self.start();
  return self;
}

/**
 * A private Postgres and Redis (append-only, so queued jobs survive a kill) for a file that kills
 * them, and the settings of one deployment on them (its database `toolport`, Redis prefix `prefix`).
 */
export async function startPrivateDeployment(prefix: string) {
  const [pg, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis({ appendonly: true })]);
  return { pg, redis, env: servicesEnv(await pg.createDatabase('toolport'), redis.url, prefix) };
}

export interface ToolportProcess {
  role: 'all' | 'api' | 'worker';
  port: number;
  url: string;
  child: ChildProcess;
  /** What the process wrote to stderr and stdout (its JSON log lines), for assertions and failures. */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns `apps/api/src/main.ts` with ROLE and env; resolves once /readyz answers 200. */
export async function spawnToolport(
  role: 'all' | 'api' | 'worker',
  env: Record<string, string>,
  opts: { port?: number; publicUrl?: string; readyTimeoutMs?: number; tries?: number } = {},
): Promise<ToolportProcess> {
  const port = opts.port ?? (await freePort());
  // Mail goes where confirmEmail looks (mail-files.ts).
  const mail = env.SMTP_URL ? {} : env.MAIL_DIR ? { MAIL_DIR: env.MAIL_DIR } : env.DATA_DIR ? { MAIL_DIR: path.join(env.DATA_DIR, 'mail') } : { MAIL_DIR: spareMailDir() };
  if (mail.MAIL_DIR) mailDirs.add(mail.MAIL_DIR);
  const child = spawn(process.execPath, toolportEntry(), {
    env: { ...process.env, ...env, ...mail, ROLE: role, PORT: String(port), PUBLIC_URL: opts.publicUrl ?? `http://127.0.0.1:${port}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const proc: ToolportProcess = {
    role,
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    output: () => out,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill(signal);
      return exited;
    },
  };
  const until = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) {
      // Another test process bound the chosen port first: choose again.
      if (!opts.port && /already in use/.test(out) && (opts.tries ?? 1) < 5) return spawnToolport(role, env, { ...opts, tries: (opts.tries ?? 1) + 1 });
      throw new Error(`${role} exited with ${child.exitCode}:\n${out.slice(-3000)}`);
    }
    const ok = await fetch(`${proc.url}/readyz`).then((r) => r.ok, () => false);
    if (ok) return proc;
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`${role} on ${port} did not become ready:\n${out.slice(-3000)}`);
    }
    await sleep(100);
  }
}

/** Polls `url`'s /readyz until it answers 200; returns how long that took. */
export async function waitReady(url: string, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
    if (ok) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${url} was not ready again within ${timeoutMs} ms`);
    await sleep(100);
  }
}
