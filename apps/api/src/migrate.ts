import { checkDependencies, ConfigError, createDatabase, parseConfig } from '@toolport/core';
import { runEntry } from './run';

/** Optional: every process also migrates at start under the same advisory lock. */
async function main() {
  const config = parseConfig(process.env);
  if (!config.database.url) throw new ConfigError(['DATABASE_URL is required: the embedded database migrates itself at start.']);
  // Only Postgres: the migration job runs before (and without) Redis.
  await checkDependencies(config, { redis: false });
  const database = await createDatabase(config.database);
  const started = Date.now();
  let applied: string[];
  try {
    applied = await database.migrate();
  } finally {
    await database.close();
  }
  for (const migration of applied) console.log(JSON.stringify({ level: 'info', msg: 'migration applied', migration }));
  console.log(JSON.stringify({ level: 'info', msg: 'migrations applied', count: applied.length, ms: Date.now() - started }));
}

runEntry(main, { exitWhenDone: true });
