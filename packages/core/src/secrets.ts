import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { and, eq, isNotNull, isNull } from 'drizzle-orm';
import type { Config } from './config';
import { StartupError } from './config';
import { keyedDigest, purposeKey, safeEqual, SecretBox } from './crypto';
import type { Db } from './db/client';
import { accountLinkStates, addonOauthClients, addons, addonSecrets, connectedAccounts, installs, serviceSecrets, signingKeys } from './db/schema/index';

export interface Secrets {
  /** Encrypts webhook signing secrets at rest. */
  webhookBox: SecretBox;
  /** Encrypts the private halves of access-token signing keys at rest. */
  signingKeyBox: SecretBox;
  /** Stable, per-add-on pseudonym of a person: what an add-on sees as `user.id`. Survives a master key rotation. */
  pseudonym(addonId: string, userId: string): string;
  /** An app's session or conversation as one add-on sees it: stable for that app's session, unlinkable across add-ons and apps. */
  sessionPseudonym(addonId: string, grantId: string, session: string): string;
  /** Digest of a call's arguments for the logs: comparable, not readable. Survives a master key rotation. */
  argsDigest(json: string): string;
  /** Encrypts service-wide secrets at rest (the Web Push VAPID private key, the pseudonym keys). */
  serviceSecretBox: SecretBox;
  /** Encrypts each install's setting values at rest (installs/settings.ts). */
  installSettingsBox: SecretBox;
  /** Encrypts the client secrets add-on developers register with OAuth providers (addons/oauth-clients.ts). */
  addonOauthClientBox: SecretBox;
  /** Encrypts the person's connected-account tokens at rest (installs/connected-accounts.ts). */
  connectedAccountBox: SecretBox;
  /** Encrypts the PKCE verifier of an account link in progress (`account_link_states`). */
  accountLinkBox: SecretBox;
  /** The capability a push notification carries to decide one approval without a session (current master key). */
  approvalActionToken(value: string): string;
  /** Whether a notification's token is the capability for `value` under any master key of the ring. */
  approvalActionTokenValid(value: string, token: string): boolean;
  /** Derived, not random, so a request racing the rotation gets the same successor without storing it. */
  refreshSuccessors(token: string): string[];
  /** The MAC of a 2026-07-28 `requestState` Toolport issues (current master key). */
  requestStateMac(value: string): string;
  /** Whether a returned `requestState` carries Toolport's MAC under any master key of the ring. */
  requestStateMacValid(value: string, mac: string): boolean;
  /** The MAC of a browser's device cookie (accounts/devices.ts; current master key). */
  deviceMac(value: string): string;
  /** Whether a device cookie carries Toolport's MAC under any master key of the ring. */
  deviceMacValid(value: string, mac: string): boolean;
}

/** The row in `service_secrets` holding the keys that must outlive a master key. */
export const STABLE_KEYS_SECRET = 'stable-keys';

/** Random and stored sealed, so rotating the master key does not change pseudonyms or digests. */
interface StableKeys {
  /** Each add-on's pseudonym key derives from it, unless listed in `addons`. */
  pseudonymRoot: string;
  argsKey: string;
  /** Add-ons that existed before key rings: their pseudonym keys as derived from the master key of then. */
  addons: Record<string, string>;
}

/** Only the embedded default generates one: several processes on one database must share keys. */
export function loadMasterKeys(config: Config): Buffer[] {
  if (config.secretKeys?.length) return config.secretKeys;
  const file = path.join(config.dataDir, 'secret.key');
  if (existsSync(file)) return [Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')];
  mkdirSync(config.dataDir, { recursive: true });
  const master = randomBytes(32);
  writeFileSync(file, master.toString('base64'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return [master];
}

export interface SecretBoxes {
  webhookBox: SecretBox;
  signingKeyBox: SecretBox;
  serviceSecretBox: SecretBox;
  /** Encrypts each install's setting values (one JSON object, secrets among them) at rest. */
  installSettingsBox: SecretBox;
  /** Encrypts the developers' OAuth client secrets (`addon_oauth_clients.client_secret_enc`) at rest. */
  addonOauthClientBox: SecretBox;
  /** Encrypts the access and refresh tokens of connected accounts (`connected_accounts`) at rest. */
  connectedAccountBox: SecretBox;
  /** Encrypts the PKCE verifier of each account link in progress (`account_link_states.code_verifier_enc`). */
  accountLinkBox: SecretBox;
}

export function secretBoxes(ring: Buffer[]): SecretBoxes {
  return {
    webhookBox: new SecretBox(ring, 'webhook-secrets'),
    signingKeyBox: new SecretBox(ring, 'signing-keys'),
    serviceSecretBox: new SecretBox(ring, 'service-secrets'),
    installSettingsBox: new SecretBox(ring, 'install-settings'),
    addonOauthClientBox: new SecretBox(ring, 'addon-oauth-client'),
    connectedAccountBox: new SecretBox(ring, 'connected-accounts'),
    accountLinkBox: new SecretBox(ring, 'account-link'),
  };
}

export async function loadSecrets(config: Config, db: Db): Promise<Secrets> {
  const ring = loadMasterKeys(config);
  const boxes = secretBoxes(ring);
  const stable = await loadStableKeys(db, ring, boxes, config);
  const root = Buffer.from(stable.pseudonymRoot, 'base64');
  const argsKey = Buffer.from(stable.argsKey, 'base64');
  const addonKeys = new Map<string, Buffer>(Object.entries(stable.addons).map(([id, k]) => [id, Buffer.from(k, 'base64')]));
  const addonKey = (addonId: string) => {
    let key = addonKeys.get(addonId);
    if (!key) addonKeys.set(addonId, (key = purposeKey(root, `pseudonym:${addonId}`)));
    return key;
  };
  const actionToken = (master: Buffer, value: string) => keyedDigest(master, 'approval-action', value);
  return {
    ...boxes,
    pseudonym: (addonId, userId) => `usr_${createHmac('sha256', addonKey(addonId)).update(userId).digest('base64url').slice(0, 26)}`,
    sessionPseudonym: (addonId, grantId, session) => `ses_${createHmac('sha256', addonKey(addonId)).update(`session\n${grantId}\n${session}`).digest('base64url').slice(0, 26)}`,
    argsDigest: (json) => `sha256:${createHmac('sha256', argsKey).update(json).digest('base64url').slice(0, 22)}`,
    approvalActionToken: (value) => actionToken(ring[0]!, value),
    approvalActionTokenValid: (value, token) => ring.some((m) => safeEqual(actionToken(m, value), token)),
    refreshSuccessors: (token) => ring.map((m) => `tprt_${keyedDigest(m, 'refresh-successor', token)}`),
    requestStateMac: (value) => keyedDigest(ring[0]!, 'request-state', value),
    requestStateMacValid: (value, mac) => ring.some((m) => safeEqual(keyedDigest(m, 'request-state', value), mac)),
    deviceMac: (value) => keyedDigest(ring[0]!, 'device-cookie', value),
    deviceMacValid: (value, mac) => ring.some((m) => safeEqual(keyedDigest(m, 'device-cookie', value), mac)),
  };
}

/** Derived as before key rings where secrets exist, so pseudonyms and digests stay stable. */
async function loadStableKeys(db: Db, ring: Buffer[], boxes: SecretBoxes, config: Config): Promise<StableKeys> {
  const read = async () => {
    const [row] = await db.select().from(serviceSecrets).where(eq(serviceSecrets.name, STABLE_KEYS_SECRET));
    if (!row) return undefined;
    let plain: string;
    try {
      plain = boxes.serviceSecretBox.open(row.valueEnc);
    } catch {
      throw wrongMasterKey(config);
    }
    return JSON.parse(plain) as StableKeys;
  };
  const found = await read();
  if (found) return found;
  const legacy = await legacyMaster(db, ring, config);
  const fresh: StableKeys = {
    pseudonymRoot: randomBytes(32).toString('base64'),
    argsKey: (legacy ? purposeKey(legacy, 'args') : randomBytes(32)).toString('base64'),
    addons: {},
  };
  if (legacy) {
    for (const { id } of await db.select({ id: addons.id }).from(addons)) {
      fresh.addons[id] = purposeKey(legacy, `pseudonym:${id}`).toString('base64');
    }
  }
  await db
    .insert(serviceSecrets)
    .values({ name: STABLE_KEYS_SECRET, valueEnc: boxes.serviceSecretBox.seal(JSON.stringify(fresh)) })
    .onConflictDoNothing();
  // Another process may have won the race: everyone uses the stored keys.
  const stored = await read();
  if (!stored) throw new Error('The stable keys could not be stored.');
  return stored;
}

/** The master key that sealed the secrets written before key rings (`v1.`), if there are any. */
async function legacyMaster(db: Db, ring: Buffer[], config: Config): Promise<Buffer | undefined> {
  const samples: Array<{ purpose: string; sealed: string | undefined }> = [
    { purpose: 'webhook-secrets', sealed: (await db.select({ v: addonSecrets.secretEnc }).from(addonSecrets).limit(1))[0]?.v },
    { purpose: 'signing-keys', sealed: (await db.select({ v: signingKeys.privateJwkEnc }).from(signingKeys).limit(1))[0]?.v },
    { purpose: 'service-secrets', sealed: (await db.select({ v: serviceSecrets.valueEnc }).from(serviceSecrets).limit(1))[0]?.v },
  ];
  const old = samples.filter((s) => s.sealed?.startsWith('v1.'));
  if (!old.length) return undefined;
  for (const master of ring) {
    const box = new SecretBox(master, old[0]!.purpose);
    try {
      box.open(old[0]!.sealed!);
      return master;
    } catch {
      /* not this key */
    }
  }
  throw wrongMasterKey(config);
}

/**
 * The master keys open nothing this database holds (a new TOOLPORT_SECRET_KEY, or a lost
 * secret.key): the fix is the rotation of docs/operations.md, which keeps the old key listed.
 */
function wrongMasterKey(config: Config): StartupError {
  if (!config.secretKeys) {
    return new StartupError(
      `the master key in ${path.join(config.dataDir, 'secret.key')} does not open the secrets this database already holds; put back the secret.key this DATA_DIR was created with, or set TOOLPORT_SECRET_KEY to that key.`,
    );
  }
  return new StartupError(
    `no key in TOOLPORT_SECRET_KEY opens the secrets this database already holds; list the database's key after the new one (TOOLPORT_SECRET_KEY=NEW,OLD), start, then run npm run reencrypt-secrets and only then drop the old key (docs/operations.md, "Keys and rotation").`,
  );
}

export interface ResealReport {
  /** Rows sealed again under the current master key. */
  resealed: number;
  /** Rows already under the current key (left alone: running the command again changes nothing). */
  current: number;
  /** Rows no key of the ring opens, as `table:id` (ids are not secret): keep the old key until they are dealt with. */
  unreadable: string[];
}

/**
 * Safe while running: a row is replaced only if it still holds what was read (a row changed
 * meanwhile was sealed under a key every process holds). Idempotent.
 */
export async function resealSecrets(db: Db, boxes: SecretBoxes): Promise<ResealReport> {
  const report: ResealReport = { resealed: 0, current: 0, unreadable: [] };
  const each = async (
    table: string,
    box: SecretBox,
    rows: Array<{ id: string; sealed: string }>,
    replace: (id: string, from: string, to: string) => Promise<unknown[]>,
  ) => {
    for (const { id, sealed } of rows) {
      if (!box.isStale(sealed)) {
        report.current++;
        continue;
      }
      let plain: string;
      try {
        plain = box.open(sealed);
      } catch {
        report.unreadable.push(`${table}:${id}`);
        continue;
      }
      if ((await replace(id, sealed, box.seal(plain))).length) report.resealed++;
    }
  };
  await each(
    'addon_secrets',
    boxes.webhookBox,
    await db.select({ id: addonSecrets.id, sealed: addonSecrets.secretEnc }).from(addonSecrets),
    (id, from, to) =>
      db.update(addonSecrets).set({ secretEnc: to }).where(and(eq(addonSecrets.id, id), eq(addonSecrets.secretEnc, from))).returning({ id: addonSecrets.id }),
  );
  await each(
    'signing_keys',
    boxes.signingKeyBox,
    await db.select({ id: signingKeys.kid, sealed: signingKeys.privateJwkEnc }).from(signingKeys),
    (id, from, to) =>
      db.update(signingKeys).set({ privateJwkEnc: to }).where(and(eq(signingKeys.kid, id), eq(signingKeys.privateJwkEnc, from))).returning({ id: signingKeys.kid }),
  );
  await each(
    'service_secrets',
    boxes.serviceSecretBox,
    await db.select({ id: serviceSecrets.name, sealed: serviceSecrets.valueEnc }).from(serviceSecrets),
    (id, from, to) =>
      db.update(serviceSecrets).set({ valueEnc: to }).where(and(eq(serviceSecrets.name, id), eq(serviceSecrets.valueEnc, from))).returning({ id: serviceSecrets.name }),
  );
  // An install's id is its person and add-on: `usr_...|addon-id` (ids, not secrets).
  const settingsRows = await db
    .select({ userId: installs.userId, addonId: installs.addonId, sealed: installs.settingsEnc })
    .from(installs)
    .where(isNotNull(installs.settingsEnc));
  await each(
    'installs',
    boxes.installSettingsBox,
    settingsRows.map((r) => ({ id: `${r.userId}|${r.addonId}`, sealed: r.sealed! })),
    (id, from, to) => {
      const [userId, addonId] = id.split('|') as [string, string];
      return db
        .update(installs)
        .set({ settingsEnc: to })
        .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId), eq(installs.settingsEnc, from)))
        .returning({ id: installs.userId });
    },
  );
  // A client's id is its add-on and provider: `addon-id|provider` (names, not secrets).
  const clientRows = await db
    .select({ addonId: addonOauthClients.addonId, provider: addonOauthClients.provider, sealed: addonOauthClients.clientSecretEnc })
    .from(addonOauthClients)
    .where(isNotNull(addonOauthClients.clientSecretEnc));
  await each(
    'addon_oauth_clients',
    boxes.addonOauthClientBox,
    clientRows.map((r) => ({ id: `${r.addonId}|${r.provider}`, sealed: r.sealed! })),
    (id, from, to) => {
      const [addonId, provider] = id.split('|') as [string, string];
      return db
        .update(addonOauthClients)
        .set({ clientSecretEnc: to })
        .where(and(eq(addonOauthClients.addonId, addonId), eq(addonOauthClients.provider, provider), eq(addonOauthClients.clientSecretEnc, from)))
        .returning({ id: addonOauthClients.addonId });
    },
  );
  // A connected account's two tokens are resealed together: the row is replaced only if both still hold what was read.
  const accountRows = await db
    .select({ id: connectedAccounts.id, access: connectedAccounts.accessTokenEnc, refresh: connectedAccounts.refreshTokenEnc })
    .from(connectedAccounts);
  for (const row of accountRows) {
    const box = boxes.connectedAccountBox;
    if (!box.isStale(row.access) && (row.refresh === null || !box.isStale(row.refresh))) {
      report.current++;
      continue;
    }
    let access: string;
    let refresh: string | null;
    try {
      access = box.open(row.access);
      refresh = row.refresh === null ? null : box.open(row.refresh);
    } catch {
      report.unreadable.push(`connected_accounts:${row.id}`);
      continue;
    }
    const replaced = await db
      .update(connectedAccounts)
      .set({ accessTokenEnc: box.seal(access), refreshTokenEnc: refresh === null ? null : box.seal(refresh) })
      .where(
        and(
          eq(connectedAccounts.id, row.id),
          eq(connectedAccounts.accessTokenEnc, row.access),
          row.refresh === null ? isNull(connectedAccounts.refreshTokenEnc) : eq(connectedAccounts.refreshTokenEnc, row.refresh),
        ),
      )
      .returning({ id: connectedAccounts.id });
    if (replaced.length) report.resealed++;
  }
  // Links in progress live ten minutes, but an old key may be dropped sooner: their verifiers too.
  await each(
    'account_link_states',
    boxes.accountLinkBox,
    (await db.select({ id: accountLinkStates.stateHash, sealed: accountLinkStates.codeVerifierEnc }).from(accountLinkStates)),
    (id, from, to) =>
      db
        .update(accountLinkStates)
        .set({ codeVerifierEnc: to })
        .where(and(eq(accountLinkStates.stateHash, id), eq(accountLinkStates.codeVerifierEnc, from)))
        .returning({ id: accountLinkStates.stateHash }),
  );
  return report;
}
