import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { parseConfig, createLogger, type Config, type Logger } from '@toolport/core';
import { startServer, type RunningServer } from '../../apps/api/src/server';
import { copyPgliteTemplate, createDatabaseFromTemplate, OPERATOR_ID, TEST_PASSWORD_COST } from './db-template';
import { mailDirs } from './mail-files';

export { OPERATOR_ID, TEST_PASSWORD_COST };

/** Which deployment the suite runs against: `embedded` (PGlite, in-process) or `services` (Postgres + Redis). */
export const TARGET = (process.env.TEST_TARGET ?? 'embedded') as 'embedded' | 'services';
export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_TEST_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a server could listen on `port` now (on every address, as Toolport does). */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port to start a server on, chosen below the kernel's ephemeral range (32768 and up on Linux):
 * a port from listen(0) could be taken by any outgoing connection (Postgres, Redis, a webhook) or
 * any other listen(0) before the server binds it, and was, in the bench.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port between 20000 and 32000');
}

/** A fresh tenant space for one test file: its own database (or PGlite), its own Redis prefix. */
export interface Backing {
  env: Record<string, string>;
  drop(): Promise<void>;
}

export interface BackingOptions {
  target?: typeof TARGET;
  /** Prefix of the database and Redis prefix names. */
  label?: string;
  pgAdminUrl?: string;
  redisUrl?: string;
}

/** A fresh access-token signing key as TOOLPORT_SIGNING_KEYS takes it (what `npm run keygen` prints). */
export function newSigningKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
}

/** A deployment on Postgres + Redis as production sets one up: its own master and signing keys, the test operator, webhooks on 127.0.0.1. */
export function servicesEnv(databaseUrl: string, redisUrl: string, redisPrefix: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: redisPrefix,
    TOOLPORT_SECRET_KEY: randomBytes(32).toString('base64'),
    TOOLPORT_SIGNING_KEYS: newSigningKey(),
    WEBHOOK_ALLOW_PRIVATE: 'true',
    TOOLPORT_OPERATORS: OPERATOR_ID,
  };
}

/** For files whose one person makes thousands of calls: the per-person and per-app call rates out of the way. */
export const UNLIMITED_CALLS = { LIMIT_CALLS_PER_PERSON: '100000', LIMIT_CALLS_PER_APP: '100000' };

export async function createBacking(opts: BackingOptions = {}): Promise<Backing> {
  const { target = TARGET, label = 'tp_test', pgAdminUrl = PG_ADMIN_URL, redisUrl = REDIS_TEST_URL } = opts;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'toolport-test-'));
  mailDirs.add(path.join(dataDir, 'mail'));
  if (target === 'embedded') {
    // A copy of a migrated data directory: PGlite's initdb alone took seconds per file.
    await copyPgliteTemplate(path.join(dataDir, 'pgdata'));
    return {
      env: { DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', TOOLPORT_OPERATORS: OPERATOR_ID },
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `${label}_${randomBytes(6).toString('hex')}`;
  await createDatabaseFromTemplate(pgAdminUrl, name);
  const url = new URL(pgAdminUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, ...servicesEnv(url.toString(), redisUrl, name) },
    async drop() {
      const a = postgres(pgAdminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
      await a.end();
      const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${name}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length) await redis.del(...keys);
        } while (cursor !== '0');
      } catch {
        /* nothing to clean */
      } finally {
        redis.disconnect();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Toolport extends RunningServer {
  config: Config;
  backing: Backing;
  /** Stops the server and drops its database. */
  stop(): Promise<void>;
}

/** Starts Toolport in this process on a free port, on the suite's target. */
export async function startToolport(
  opts: {
    env?: Record<string, string>;
    backing?: Backing;
    keepBacking?: boolean;
    log?: Logger;
    /** PUBLIC_URL's host: `localhost` where the browser needs a domain (WebAuthn refuses an IP address). */
    publicHost?: string;
  } = {},
): Promise<Toolport> {
  const backing = opts.backing ?? (await createBacking());
  const log = opts.log ?? createLogger({}, !process.env.TEST_LOGS);
  // Another test process may bind the port between freePort's probe and our listen; a failed
  // listen closes what startServer opened, so trying another port is safe.
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const config = parseConfig({
      PORT: String(port),
      PUBLIC_URL: `http://${opts.publicHost ?? '127.0.0.1'}:${port}`,
      ...backing.env,
      ...opts.env,
    });
    config.passwordCost ??= TEST_PASSWORD_COST;
    const server = await startServer(config, { log }).catch((err: Error) => {
      if (tries < 5 && /already in use/.test(err.message)) return null;
      throw err;
    });
    if (server) return toolport(server, config, backing, opts.keepBacking);
  }
}

function toolport(server: RunningServer, config: Config, backing: Backing, keepBacking?: boolean): Toolport {
  return {
    ...server,
    config,
    backing,
    async stop() {
      await server.close();
      if (!keepBacking) await backing.drop();
    },
  };
}

/** Stops the API process and starts another on the same address and database: what a deploy does (started with `keepBacking`). */
export async function restartToolport(tp: Toolport): Promise<Toolport> {
  const port = String(tp.config.port);
  await tp.stop();
  return startToolport({ backing: tp.backing, keepBacking: true, env: { PORT: port, PUBLIC_URL: tp.config.publicUrl } });
}
