import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** scrypt's cost parameters; every hash carries the ones it was made with, and is verified with those. */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

// scrypt is memory-hard (N=2^15, r=8: 32 MiB per hash) and ships with Node: no native add-on to build.
export const PASSWORD_COST: ScryptCost = { N: 2 ** 15, r: 8, p: 1 };
const SCRYPT_MAXMEM = 64 * 1024 * 1024;

function scryptAsync(password: string, salt: Buffer, keylen: number, cost: ScryptCost): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, keylen, { ...cost, maxmem: SCRYPT_MAXMEM }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `cost` other than the default is for tests only (Config.passwordCost). */
export async function hashPassword(password: string, cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, 32, cost);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p) });
  return timingSafeEqual(actual, expected);
}

/** A password hash to compare against when the account does not exist, so timing does not tell. */
const dummyHashes = new Map<string, Promise<string>>();
export function dummyPasswordHash(cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const key = `${cost.N}$${cost.r}$${cost.p}`;
  let hash = dummyHashes.get(key);
  if (!hash) dummyHashes.set(key, (hash = hashPassword('not a real password', cost)));
  return hash;
}

/** A short, public name of a master key: which key sealed a secret, without revealing it. */
const masterKeyId = (master: Buffer) => createHmac('sha256', master).update('toolport:key-id').digest('base64url').slice(0, 8);

/**
 * The first key seals; every key opens. With one key values stay `v1` (no key id), so the previous
 * release can read them during a rolling upgrade or rollback; every key is tried on a `v1` value.
 */
export class SecretBox {
  private readonly keys: Array<{ id: string; key: Buffer }>;
  constructor(ring: Buffer | Buffer[], purpose: string) {
    const masters = Array.isArray(ring) ? ring : [ring];
    if (!masters.length) throw new Error('A SecretBox needs at least one master key.');
    this.keys = masters.map((m) => ({ id: masterKeyId(m), key: createHmac('sha256', m).update(`toolport:${purpose}`).digest() }));
  }
  /** The id of the key that seals now (the first of the ring). */
  get currentKeyId(): string {
    return this.keys[0]!.id;
  }
  seal(plain: string): string {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const sealed = `${iv.toString('base64url')}.${body.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
    return this.keys.length > 1 ? `v2.${id}.${sealed}` : `v1.${sealed}`;
  }
  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const found = this.keys.find((k) => k.id === parts[1]);
      if (!found) throw new Error(`Sealed under master key ${parts[1]}, which is not in TOOLPORT_SECRET_KEY.`);
      return decrypt(found.key, parts[2]!, parts[3]!, parts[4]!);
    }
    if (parts[0] === 'v1' && parts.length === 4) {
      for (const { key } of this.keys) {
        try {
          return decrypt(key, parts[1]!, parts[2]!, parts[3]!);
        } catch {
          /* not this key */
        }
      }
      throw new Error('No key in TOOLPORT_SECRET_KEY opens this sealed secret.');
    }
    throw new Error('Unreadable sealed secret.');
  }
  /** True when the value is not sealed under the current key: the re-encrypt command reseals it. */
  isStale(sealed: string): boolean {
    const parts = sealed.split('.');
    if (parts[0] === 'v2') return parts[1] !== this.currentKeyId;
    if (parts[0] !== 'v1' || parts.length !== 4) return true;
    try {
      decrypt(this.keys[0]!.key, parts[1]!, parts[2]!, parts[3]!);
      return false;
    } catch {
      return true;
    }
  }
}

function decrypt(key: Buffer, iv: string, body: string, tag: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

/** Keyed digest for values that must be comparable but not readable (pseudonyms, argument digests). */
export function keyedDigest(master: Buffer, purpose: string, value: string): string {
  return createHmac('sha256', purposeKey(master, purpose)).update(value).digest('base64url');
}

/** The key `keyedDigest` derives for one purpose: storable without revealing the master. */
export const purposeKey = (master: Buffer, purpose: string) => createHmac('sha256', master).update(`toolport:${purpose}`).digest();
