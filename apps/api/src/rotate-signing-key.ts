import { closeServices, ConfigError, createLogger, createServices, parseConfig, rotateSigningKey } from '@toolport/core';
import { runEntry } from './run';

/**
 * Rotates the access-token signing key, once, from an operator's shell (`kubectl exec` into an API
 * pod, or `docker compose exec api ...`). The new key signs from now on; the old one stays in the
 * JWKS until its tokens expire, and every running process picks the new key up over the bus.
 */
async function main() {
  // ROLE=api: this short-lived process must not start a call worker.
  const config = parseConfig({ ...process.env, ROLE: 'api' });
  if (!config.database.url) {
    throw new ConfigError(['DATABASE_URL is required: the embedded database belongs to the running server; restart it instead.']);
  }
  if (config.signingKeys) {
    throw new ConfigError(['TOOLPORT_SIGNING_KEYS is set, so the signing keys come from it: rotate by changing the setting (docs/operations.md, Keys and rotation).']);
  }
  const svc = await createServices(config, { log: createLogger({ tool: 'rotate-signing-key' }) });
  try {
    const { kid } = await rotateSigningKey(svc);
    console.log(JSON.stringify({ level: 'info', msg: 'signing key rotated', kid }));
  } finally {
    await closeServices(svc);
  }
}

runEntry(main, { exitWhenDone: true });
