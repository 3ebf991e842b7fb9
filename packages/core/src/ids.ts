import { randomBytes, randomUUID } from 'node:crypto';

export type IdPrefix =
  | 'usr' | 'ses' | 'key' | 'sec' | 'ins' | 'cli' | 'grt' | 'rtf' | 'apr' | 'hld' | 'call' | 'dlv' | 'psh' | 'kid' | 'rul' | 'acct';

/** Prefixed, URL-safe random id: `call_3kQ...`. 16 random bytes. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

/** A secret token with a recognisable prefix; only its hash is stored. */
export function newToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/**
 * A random UUID as one flat string. Node's `randomUUID()` concatenates it from 20 pieces, and V8
 * keeps that as a tree of string nodes: 486 bytes instead of 62 for as long as the id is kept, and
 * a call held for approval keeps two (its request id and its lease) for up to 30 s.
 */
export function flatUuid(): string {
  return Buffer.from(randomUUID(), 'latin1').toString('latin1');
}
