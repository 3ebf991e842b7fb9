import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { keyedDigest, SecretBox } from './crypto';

export interface Secrets {
  /** Encrypts webhook signing secrets at rest. */
  webhookBox: SecretBox;
  /** Encrypts the private halves of access-token signing keys at rest. */
  signingKeyBox: SecretBox;
  /** Stable, per-add-on pseudonym of a person: what an add-on sees as `user.id`. */
  pseudonym(addonId: string, userId: string): string;
  /** Digest of a call's arguments for the logs: comparable, not readable. */
  argsDigest(json: string): string;
  /** Encrypts service-wide generated secrets at rest (the Web Push VAPID private key). */
  serviceSecretBox: SecretBox;
  /** The capability a push notification carries to decide one approval without a session. */
  approvalActionToken(value: string): string;
}

/**
 * The master secret comes from TOOLPORT_SECRET_KEY; only the embedded default generates one
 * under DATA_DIR on first start (several processes on one database must share one key).
 */
export function loadSecrets(config: Config): Secrets {
  let master: Buffer;
  if (config.secretKey) master = Buffer.from(config.secretKey, 'base64');
  else {
    const file = path.join(config.dataDir, 'secret.key');
    if (existsSync(file)) master = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    else {
      mkdirSync(config.dataDir, { recursive: true });
      master = randomBytes(32);
      writeFileSync(file, master.toString('base64'), { mode: 0o600 });
      chmodSync(file, 0o600);
    }
  }
  return {
    webhookBox: new SecretBox(master, 'webhook-secrets'),
    signingKeyBox: new SecretBox(master, 'signing-keys'),
    pseudonym: (addonId, userId) => `usr_${keyedDigest(master, `pseudonym:${addonId}`, userId).slice(0, 26)}`,
    argsDigest: (json) => `sha256:${keyedDigest(master, 'args', json).slice(0, 22)}`,
    serviceSecretBox: new SecretBox(master, 'service-secrets'),
    approvalActionToken: (value) => keyedDigest(master, 'approval-action', value),
  };
}
