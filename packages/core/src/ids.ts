import { randomBytes, randomFillSync, randomUUID } from 'node:crypto';

export type IdPrefix =
  | 'usr' | 'ses' | 'key' | 'sec' | 'ins' | 'cli' | 'grt' | 'rtf' | 'apr' | 'hld' | 'call' | 'dlv' | 'psh' | 'kid' | 'rul' | 'acct' | 'art' | 'dev';

// Ids are drawn from one pool filled 256 at a time (as Node does for randomUUID): asking the CSPRNG
// for 16 bytes cost more than the rest of making an id, twice per call. Secrets (newToken) are not pooled.
const ID_BYTES = 16;
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

/** Prefixed, URL-safe random id: `call_3kQ...`. 16 random bytes. */
export function newId(prefix: IdPrefix): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString('base64url', offset, (offset += ID_BYTES));
  return `${prefix}_${id}`;
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
