import { checkDependencies, ConfigError, createDatabase, loadMasterKeys, parseConfig, resealSecrets, secretBoxes } from '@toolport/core';
import { runEntry } from './run';

/**
 * Step 3 of a master key rotation (docs/operations.md), safe while the service is up. Exits 1 if a
 * secret opens under no listed key: the old key must then stay.
 */
async function main() {
  const config = parseConfig({ ...process.env, ROLE: 'api' });
  const problems: string[] = [];
  if (!config.database.url) problems.push('DATABASE_URL is required: the embedded database belongs to the running server.');
  if (!config.secretKeys) problems.push('TOOLPORT_SECRET_KEY is required: the new key first, then the ones the secrets may still be sealed under.');
  if (problems.length) throw new ConfigError(problems);
  await checkDependencies(config, { redis: false });
  const database = await createDatabase(config.database);
  try {
    const report = await resealSecrets(database.db, secretBoxes(loadMasterKeys(config)));
    const ok = report.unreadable.length === 0;
    console.log(JSON.stringify({ level: ok ? 'info' : 'error', msg: ok ? 'secrets re-encrypted' : 'some secrets open under no listed key', ...report }));
    if (!ok) process.exitCode = 1;
  } finally {
    await database.close();
  }
}

runEntry(main, { exitWhenDone: true });
