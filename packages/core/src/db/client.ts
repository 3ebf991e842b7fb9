import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import type { DatabaseConfig } from '../config';
import * as schema from './schema/index';

export type Schema = typeof schema;

/** The rows of `db.execute`: postgres.js answers them as an array, PGlite as `{ rows }`. */
export function executedRows<T>(result: unknown): T[] {
  const rows = (result as { rows?: unknown[] }).rows ?? (result as unknown[]);
  return Array.isArray(rows) ? (rows as T[]) : [];
}
/** Both drivers share drizzle's Postgres dialect: one query API, one set of migrations. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

/** A connection of its own, outside the shared pool: opened on first use, and again after `reset()`. */
export interface OwnConnection {
  /** Its query API, opening the connection if none is open. */
  db(): Db;
  /** Ends the connection now, a statement stuck on it included; the next `db()` opens a fresh one. */
  reset(): void;
}

export interface Database {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** Applies the pending migrations; answers their names (`0008_listings`), in order, none when none were pending. */
  migrate(): Promise<string[]>;
  ping(): Promise<void>;
  /** One parameterised statement straight to the driver: for the few hot writes drizzle's builder slows. */
  run(text: string, params: unknown[]): Promise<void>;
  /** As `run`, answering the rows the statement returns. */
  all<T>(text: string, params: unknown[]): Promise<T[]>;
  /** For the approvals' holder lease (approvals/request.ts says why not the pool). On PGlite it is `db`. */
  leaseConnection(opts: { connectTimeoutS: number; reconnectS: number }): OwnConnection;
  close(): Promise<void>;
}

/** Connects once and asks `select 1`, before the services start (startup.ts explains a failure). */
export async function probePostgres(url: string, connectTimeoutS: number): Promise<void> {
  const sql = postgres(url, { max: 1, connect_timeout: connectTimeoutS, onnotice: () => {}, connection: { application_name: 'toolport' } });
  try {
    await sql`select 1`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../drizzle');
/** Any fixed number: serialises migrations when several processes start at once. */
const MIGRATION_LOCK = 7_486_131;

/**
 * The migrations drizzle's migrator applies after the newest one the database records (`created_at`
 * of `drizzle.__drizzle_migrations` is the journal's `when` of each applied one): their names, in order.
 */
function pendingAfter(newest: number | null): string[] {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as { entries: Array<{ tag: string; when: number }> };
  return journal.entries.filter((e) => newest === null || e.when > newest).map((e) => e.tag);
}

/** The newest migration the database records; null on a database never migrated. */
const NEWEST_MIGRATION = `select max(created_at) as newest from drizzle.__drizzle_migrations`;
const newestOf = (rows: Array<{ newest: unknown }>) => (rows[0]?.newest == null ? null : Number(rows[0].newest));
const MISSING_TABLE = '42P01';
const MISSING_SCHEMA = '3F000';
const neverMigrated = (err: unknown) => [MISSING_TABLE, MISSING_SCHEMA].includes((err as { code?: string }).code ?? '');

export async function createDatabase(config: DatabaseConfig): Promise<Database> {
  if (config.url) {
    const client = postgres(config.url, {
      max: 16,
      onnotice: () => {},
      connection: { application_name: 'toolport' },
    });
    const db = drizzlePostgres(client, { schema }) as unknown as Db;
    /** Ends each connection of its own (leaseConnection) that is open. */
    const owned = new Set<() => Promise<void> | undefined>();
    return {
      db,
      kind: 'postgres',
      async migrate() {
        // One connection holds a session lock so concurrent starts migrate one after another.
        const single = postgres(config.url!, { max: 1, onnotice: () => {} });
        try {
          await single`select pg_advisory_lock(${MIGRATION_LOCK})`;
          // Under the lock: what another process applied meanwhile is not named again here.
          const newest = await single.unsafe<Array<{ newest: unknown }>>(NEWEST_MIGRATION).then(
            (rows) => newestOf(rows),
            (err: unknown) => {
              if (neverMigrated(err)) return null;
              throw err;
            },
          );
          await migratePostgres(drizzlePostgres(single), { migrationsFolder });
          return pendingAfter(newest);
        } finally {
          await single.end({ timeout: 5 });
        }
      },
      async ping() {
        await client`select 1`;
      },
      async run(text, params) {
        await client.unsafe(text, params as never[]);
      },
      async all<T>(text: string, params: unknown[]) {
        return (await client.unsafe(text, params as never[])) as unknown as T[];
      },
      leaseConnection({ connectTimeoutS, reconnectS }) {
        let own: postgres.Sql | undefined;
        let ownDb: Db | undefined;
        const end = () => {
          const ending = own?.end({ timeout: 0 }).catch(() => {});
          own = undefined;
          ownDb = undefined;
          return ending;
        };
        owned.add(end);
        return {
          db() {
            own ??= postgres(config.url!, {
              max: 1,
              backoff: () => reconnectS,
              connect_timeout: connectTimeoutS,
              idle_timeout: 60,
              onnotice: () => {},
              connection: { application_name: 'toolport-lease' },
            });
            return (ownDb ??= drizzlePostgres(own) as unknown as Db);
          },
          reset() {
            void end();
          },
        };
      },
      async close() {
        await Promise.all([...owned].map((end) => end()));
        await client.end({ timeout: 5 });
      },
    };
  }

  if (config.dataDir) mkdirSync(config.dataDir, { recursive: true });
  const client = await PGlite.create(config.dataDir ?? 'memory://');
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    async migrate() {
      const newest = await client.query<{ newest: unknown }>(NEWEST_MIGRATION).then(
        (r) => newestOf(r.rows),
        (err: unknown) => {
          if (neverMigrated(err)) return null;
          throw err;
        },
      );
      await migratePglite(drizzlePglite(client), { migrationsFolder });
      return pendingAfter(newest);
    },
    async ping() {
      await db.execute(sql`select 1`);
    },
    async run(text, params) {
      await client.query(text, params);
    },
    async all<T>(text: string, params: unknown[]) {
      return (await client.query<T>(text, params)).rows;
    },
    leaseConnection: () => ({ db: () => db, reset() {} }),
    async close() {
      await client.close();
    },
  };
}
