import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { hashPassword } from '../../packages/core/src/crypto';
import { createDatabase, type Database } from '../../packages/core/src/db/client';
import { users } from '../../packages/core/src/db/schema/index';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD } from './http';

/**
 * Migrated templates for the suite's databases: each test file's database is a copy of one that
 * Toolport's own `migrate()` built once, instead of a fresh `initdb` (PGlite) or database
 * (Postgres) migrated per file. A template is named by a hash of the migrations, so a new
 * migration makes a new one and a stale one is never used. Each also holds the suite's operator.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MIGRATIONS = path.join(root, 'packages/core/drizzle');

/** A short hash of what the migrator reads (the SQL files and the journal), and of `extra`. */
function migrationsHash(extra = ''): string {
  const h = createHash('sha256').update(extra);
  for (const name of readdirSync(MIGRATIONS).filter((n) => n.endsWith('.sql')).sort()) h.update(name).update(readFileSync(path.join(MIGRATIONS, name)));
  h.update(readFileSync(path.join(MIGRATIONS, 'meta/_journal.json')));
  return h.digest('hex').slice(0, 12);
}

/**
 * The scrypt cost of the passwords the suite's in-process servers hash (1 MiB, not 32): a test file
 * signs up dozens of people. test/password-cost.test.ts checks that production keeps its own.
 */
export const TEST_PASSWORD_COST = { N: 2 ** 10, r: 8, p: 1 };

/**
 * The account every test deployment names in TOOLPORT_OPERATORS (target.ts): operators are named
 * by account id, so the account must exist, with this id, before the server starts.
 */
export const OPERATOR_ID = 'usr_testoperator';

/** What the templates hold besides the migrations, in their names: bump v1 when seedOperator changes. */
const SEED = `operator v1 ${OPERATOR_ID} ${OPERATOR_EMAIL} ${OPERATOR_PASSWORD} ${JSON.stringify(TEST_PASSWORD_COST)}`;

/** Inserts the operator's account as sign-up would have made it, with a fixed id. */
async function seedOperator(database: Database) {
  const passwordHash = await hashPassword(OPERATOR_PASSWORD, TEST_PASSWORD_COST);
  await database.db.insert(users).values({ id: OPERATOR_ID, email: OPERATOR_EMAIL, passwordHash, userKey: randomBytes(18).toString('base64url') });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pgCode = (err: unknown) => (err as { code?: string }).code;

const pgTemplates = new Map<string, Promise<string>>();

/**
 * The migrated template database on this Postgres, made once for every test process of every run:
 * under an advisory lock, built under a temporary name and renamed when complete, so a process that
 * died half-way leaves nothing another would clone. It refuses connections, so that no session
 * (autovacuum included) blocks `CREATE DATABASE … TEMPLATE`.
 */
function postgresTemplate(adminUrl: string): Promise<string> {
  let made = pgTemplates.get(adminUrl);
  if (!made) {
    made = makePostgresTemplate(adminUrl);
    made.catch(() => pgTemplates.delete(adminUrl));
    pgTemplates.set(adminUrl, made);
  }
  return made;
}

async function makePostgresTemplate(adminUrl: string): Promise<string> {
  const hash = migrationsHash(SEED);
  const name = `tp_tpl_${hash}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // One connection (max: 1), so the session lock and every statement below share it.
    await admin`select pg_advisory_lock(${parseInt(hash.slice(0, 8), 16)})`;
    const [found] = await admin`select 1 from pg_database where datname = ${name}`;
    if (found) return name;
    const building = `${name}_${randomBytes(4).toString('hex')}`;
    await admin.unsafe(`create database ${building}`);
    try {
      const url = new URL(adminUrl);
      url.pathname = `/${building}`;
      const database = await createDatabase({ url: url.toString() });
      try {
        await database.migrate();
        await seedOperator(database);
      } finally {
        await database.close();
      }
      await withRetry(() => admin.unsafe(`alter database ${building} rename to ${name}`));
      await admin.unsafe(`alter database ${name} with is_template true allow_connections false`);
    } catch (err) {
      await admin.unsafe(`drop database if exists ${building} with (force)`).catch(() => {});
      throw err;
    }
    return name;
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** Postgres refuses to copy or rename a database while a session (one just closed) is still on it: 55006. */
async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (pgCode(err) !== '55006' || attempt >= 50) throw err;
      await sleep(100);
    }
  }
}

/** A new database `name`, a copy of the migrated template. */
export async function createDatabaseFromTemplate(adminUrl: string, name: string): Promise<void> {
  const template = await postgresTemplate(adminUrl);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await withRetry(() => admin.unsafe(`create database ${name} template ${template}`));
  } finally {
    await admin.end({ timeout: 5 });
  }
}

let pgliteTemplate: Promise<string> | undefined;

/**
 * A migrated PGlite data directory, made once per machine for these migrations and this PGlite
 * (its version is in the name). Processes that start together may each build one; the first
 * rename into place wins and the others are removed, so a half-built directory is never copied.
 */
function pgliteTemplateDir(): Promise<string> {
  pgliteTemplate ??= (async () => {
    const pglite = JSON.parse(readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version as string;
    const dir = path.join(os.tmpdir(), `toolport-pglite-template-${migrationsHash(pglite + SEED)}`);
    if (existsSync(dir)) return dir;
    const building = mkdtempSync(`${dir}.building-`);
    try {
      const database = await createDatabase({ dataDir: building });
      try {
        await database.migrate();
        await seedOperator(database);
      } finally {
        await database.close();
      }
      renameSync(building, dir);
    } catch (err) {
      rmSync(building, { recursive: true, force: true });
      // Another process renamed its own into place first.
      if (!existsSync(dir)) throw err;
    }
    return dir;
  })();
  pgliteTemplate.catch(() => (pgliteTemplate = undefined));
  return pgliteTemplate;
}

/** Puts a copy of the migrated PGlite data directory at `pgdata` (where Toolport looks under DATA_DIR). */
export async function copyPgliteTemplate(pgdata: string): Promise<void> {
  cpSync(await pgliteTemplateDir(), pgdata, { recursive: true });
}
