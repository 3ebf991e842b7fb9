import { and, desc, gt, isNull, ne, or, sql } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { signingKeys } from '../db/schema/index';
import { cacheKind, type CacheScope } from '../caches';
import { KEYS_CHANNEL } from '../events/channels';
import { newId } from '../ids';
import type { Services } from '../services';
import { issuerOf } from './metadata';

export const ACCESS_TOKEN_TTL_S = 600;
const ALG = 'ES256';
/** A retired key stays published this long: its last tokens expire, plus room for clock skew. */
const RETIRED_PUBLISHED_MS = (ACCESS_TOKEN_TTL_S + 600) * 1000;
/** Reload from the database when a token names a kid we do not hold, at most this often. */
const UNKNOWN_KID_RELOAD_MS = 1000;
/** Pick up another process's rotation for signing even if its bus message was lost. */
const SIGNING_RELOAD_MS = 5 * 60 * 1000;
const KEYGEN_LOCK = 7_486_132;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  verifyKey: CryptoKey;
  retiredAt: Date | null;
  createdAt: Date;
}

/** A key from TOOLPORT_SIGNING_KEYS: its kid is its RFC 7638 thumbprint, the same in every process. */
export async function settingsKey(key: KeyObject): Promise<{ kid: string; publicJwk: JWK; privateKey: CryptoKey }> {
  const { d: _d, ...pub } = key.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(pub);
  const privateJwk = { ...(key.export({ format: 'jwk' }) as JWK), kid, alg: ALG };
  return { kid, publicJwk: { ...pub, kid, alg: ALG, use: 'sig' }, privateKey: (await importJWK(privateJwk, ALG)) as CryptoKey };
}

class KeyStore {
  private keys = new Map<string, LoadedKey>();
  private signer?: { kid: string; key: CryptoKey };
  private fromSettings?: Promise<Array<LoadedKey & { privateKey: CryptoKey }>>;
  /** performance.now() of the last load, 0 before it: how often to reload, not a time of day (a moved clock must not stop reloads). */
  private loadedAt = 0;
  private loading?: Promise<void>;
  private subscribed?: Promise<unknown>;

  constructor(
    private readonly svc: Services,
    private readonly scope: CacheScope,
  ) {}

  private reload(): Promise<void> {
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async load() {
    if (!this.subscribed) {
      this.subscribed = this.scope.subscribe(KEYS_CHANNEL, () => void this.reload().catch(() => {}));
      // A rotation broadcast while the bus was down was missed: read the keys again.
      this.scope.afterReconnect(() => void this.reload().catch(() => {}));
    }
    await this.subscribed;
    if (this.svc.config.signingKeys) return this.loadFromSettings(this.svc.config.signingKeys);
    let rows = await this.readRows();
    if (!rows.some((r) => !r.retiredAt)) {
      await ensureActiveKey(this.svc);
      rows = await this.readRows();
    }
    const keys = new Map<string, LoadedKey>();
    for (const row of rows) {
      const publicJwk = row.publicJwk as JWK;
      keys.set(row.kid, {
        kid: row.kid,
        publicJwk,
        verifyKey: (await importJWK(publicJwk, ALG)) as CryptoKey,
        retiredAt: row.retiredAt,
        createdAt: row.createdAt,
      });
    }
    const active = rows.find((r) => !r.retiredAt)!;
    if (this.signer?.kid !== active.kid) {
      const privateJwk = JSON.parse(this.svc.secrets.signingKeyBox.open(active.privateJwkEnc)) as JWK;
      this.signer = { kid: active.kid, key: (await importJWK(privateJwk, ALG)) as CryptoKey };
    }
    this.keys = keys;
    this.loadedAt = performance.now();
  }

  /** Other keys in the database only verify (retired) until the tokens they signed have expired. */
  private async loadFromSettings(configured: KeyObject[]) {
    const now = this.svc.clock.now();
    this.fromSettings ??= Promise.all(
      configured.map(async (k) => {
        const { kid, publicJwk, privateKey } = await settingsKey(k);
        return { kid, publicJwk, privateKey, verifyKey: (await importJWK(publicJwk, ALG)) as CryptoKey, retiredAt: null, createdAt: now };
      }),
    );
    const fromSettings = await this.fromSettings;
    const rows = await this.readRows();
    // A write only when there is something to retire: this runs on every reload (an unknown kid too).
    if (rows.some((r) => !r.retiredAt)) {
      await this.svc.db.update(signingKeys).set({ retiredAt: now }).where(isNull(signingKeys.retiredAt));
    }
    const keys = new Map<string, LoadedKey>(fromSettings.map((k) => [k.kid, k]));
    for (const row of rows) {
      const publicJwk = row.publicJwk as JWK;
      keys.set(row.kid, { kid: row.kid, publicJwk, verifyKey: (await importJWK(publicJwk, ALG)) as CryptoKey, retiredAt: row.retiredAt ?? now, createdAt: row.createdAt });
    }
    this.signer = { kid: fromSettings[0]!.kid, key: fromSettings[0]!.privateKey };
    this.keys = keys;
    this.loadedAt = performance.now();
  }

  private readRows() {
    const publishedSince = new Date(this.svc.clock.now().getTime() - RETIRED_PUBLISHED_MS);
    return this.svc.db
      .select()
      .from(signingKeys)
      .where(or(isNull(signingKeys.retiredAt), gt(signingKeys.retiredAt, publishedSince)))
      .orderBy(desc(signingKeys.createdAt));
  }

  async signingKey() {
    if (!this.signer || performance.now() - this.loadedAt > SIGNING_RELOAD_MS) await this.reload();
    return this.signer!;
  }

  async verifyKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    if (!this.loadedAt) await this.reload();
    if (!kid) return undefined;
    let key = this.keys.get(kid);
    if (!key && performance.now() - this.loadedAt >= UNKNOWN_KID_RELOAD_MS) {
      await this.reload();
      key = this.keys.get(kid);
    }
    return key?.verifyKey;
  }

  async published(): Promise<JWK[]> {
    if (!this.loadedAt || performance.now() - this.loadedAt > SIGNING_RELOAD_MS) await this.reload();
    return [...this.keys.values()].map((k) => k.publicJwk);
  }

  forceReload() {
    return this.reload();
  }
}

/** One per services, holding no map: reloaded on the bus message, on an unknown kid, and every few minutes. */
const KEY_STORE = cacheKind('signing keys', (svc, scope) => new KeyStore(svc, scope));
export const keyStore = (svc: Services): KeyStore => svc.caches.get(KEY_STORE);

async function newKeyRow(svc: Services) {
  const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true });
  const kid = newId('kid');
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALG };
  return {
    kid,
    alg: ALG,
    publicJwk,
    privateJwkEnc: svc.secrets.signingKeyBox.seal(JSON.stringify(privateJwk)),
    createdAt: svc.clock.now(),
  };
}

/** Creates the first signing key unless one is active; a lock keeps concurrent first starts to one key. */
async function ensureActiveKey(svc: Services) {
  await svc.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${KEYGEN_LOCK})`);
    const [active] = await tx.select({ kid: signingKeys.kid }).from(signingKeys).where(isNull(signingKeys.retiredAt)).limit(1);
    if (!active) await tx.insert(signingKeys).values(await newKeyRow(svc));
  });
}

/** Loads (and on first start creates) the signing keys; call at start so the first request does not pay for it. */
export async function ensureSigningKeys(svc: Services): Promise<void> {
  await keyStore(svc).signingKey();
}

/**
 * A new key signs from now on; the old ones are retired but stay in the JWKS until the tokens they
 * signed have expired. Other processes reload on the bus message (or on the first unknown kid).
 */
export async function rotateSigningKey(svc: Services): Promise<{ kid: string }> {
  if (svc.config.signingKeys) {
    throw new Error('The signing keys come from TOOLPORT_SIGNING_KEYS: rotate by changing that setting (docs/operations.md).');
  }
  const row = await newKeyRow(svc);
  await svc.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${KEYGEN_LOCK})`);
    await tx.insert(signingKeys).values(row);
    await tx
      .update(signingKeys)
      .set({ retiredAt: svc.clock.now() })
      .where(and(isNull(signingKeys.retiredAt), ne(signingKeys.kid, row.kid)));
  });
  await keyStore(svc).forceReload();
  await svc.bus.publish(KEYS_CHANNEL, { kid: row.kid });
  return { kid: row.kid };
}

/** The JWKS document: the signing keys (the active one first) and the retired ones still published. */
export async function publicJwks(svc: Services): Promise<{ keys: JWK[] }> {
  return { keys: await keyStore(svc).published() };
}

export interface AccessTokenInput {
  userId: string;
  clientId: string;
  grantId: string;
  scope: string;
  /** The MCP URL the token is for. */
  audience: string;
}

/** An RFC 9068 JWT access token, ES256, 10 minutes. `now` is for tests of expiry. */
export async function signAccessToken(svc: Services, input: AccessTokenInput, now = svc.clock.now()) {
  const { kid, key } = await keyStore(svc).signingKey();
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + ACCESS_TOKEN_TTL_S;
  const token = await new SignJWT({ client_id: input.clientId, scope: input.scope, gid: input.grantId })
    .setProtectedHeader({ alg: ALG, kid, typ: 'at+jwt' })
    .setIssuer(issuerOf(svc))
    .setSubject(input.userId)
    .setAudience(input.audience)
    .setJti(randomUUID())
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key);
  return { token, expiresIn: ACCESS_TOKEN_TTL_S };
}
