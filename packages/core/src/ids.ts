import { randomBytes, randomUUID } from 'node:crypto';

export type IdPrefix =
  | 'usr' | 'ses' | 'key' | 'sec' | 'ins' | 'cli' | 'grt' | 'rtf' | 'apr' | 'hld' | 'call' | 'dlv' | 'psh' | 'kid' | 'rul' | 'acct' | 'art' | 'dev';

/** Prefixed, URL-safe random id: `call_3kQ...`. 16 random bytes. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

/** A secret token with a recognisable prefix; only its hash is stored. */
export function newToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/**
 * V8 keeps `randomUUID()`'s result as a tree of string pieces, about 8× the flat size, and a held
 * call keeps two ids for up to 30 s.
 */
export function flatUuid(): string {
  return Buffer.from(randomUUID(), 'latin1').toString('latin1');
}
