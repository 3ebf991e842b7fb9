import { checkDependencies, ConfigError, createDatabase, parseConfig } from '@toolport/core';
import { runEntry } from './run';

/**
 * Applies the database migrations and exits: the Kubernetes migration Job and the compose
 * `migrate` service run it before a rollout. Optional: every process also migrates at start under
 * the same advisory lock, so a rollout without it is safe, just slower to become ready.
 */
async function main() {
  const config = parseConfig(process.env);
  if (!config.database.url) throw new ConfigError(['DATABASE_URL is required: the embedded database migrates itself at start.']);
  // Only Postgres: the migration job runs before (and without) Redis.
  await checkDependencies(config, { redis: false });
  const database = await createDatabase(config.database);
  const started = Date.now();
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
  console.log(JSON.stringify({ level: 'info', msg: 'migrations applied', ms: Date.now() - started }));
}

runEntry(main, { exitWhenDone: true });
