import { mkdirSync } from 'node:fs';
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
/** Both drivers share drizzle's Postgres dialect: one query API, one set of migrations. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export interface Database {
  db: Db;
  kind: 'postgres' | 'pglite';
  migrate(): Promise<void>;
  ping(): Promise<void>;
  /** One parameterised statement straight to the driver: for the few hot writes drizzle's builder slows. */
  run(text: string, params: unknown[]): Promise<void>;
  close(): Promise<void>;
}

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../drizzle');
/** Any fixed number: serialises migrations when several processes start at once. */
const MIGRATION_LOCK = 7_486_131;

export async function createDatabase(config: DatabaseConfig): Promise<Database> {
  if (config.url) {
    const client = postgres(config.url, {
      max: 16,
      onnotice: () => {},
      connection: { application_name: 'toolport' },
    });
    const db = drizzlePostgres(client, { schema }) as unknown as Db;
    return {
      db,
      kind: 'postgres',
      async migrate() {
        // One connection holds a session lock so concurrent starts migrate one after another.
        const single = postgres(config.url!, { max: 1, onnotice: () => {} });
        try {
          await single`select pg_advisory_lock(${MIGRATION_LOCK})`;
          await migratePostgres(drizzlePostgres(single), { migrationsFolder });
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
      async close() {
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
      await migratePglite(drizzlePglite(client), { migrationsFolder });
    },
    async ping() {
      await db.execute(sql`select 1`);
    },
    async run(text, params) {
      await client.query(text, params);
    },
    async close() {
      await client.close();
    },
  };
}
