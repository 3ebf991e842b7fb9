import { and, desc, eq, isNull } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { sha256 } from '../crypto';
import { notFound, validation } from '../errors';
import { inputObject, parseInput } from '../input';
import type { Json } from '../json';
import { newId, newToken } from '../ids';
import type { Services } from '../services';
import { apiKeys } from '../db/schema/index';

const MAX_KEYS = 50;
const KEY_NAME = 'Give a name of 1 to 60 characters.';
const keyInput = inputObject({ name: z.string({ message: KEY_NAME }).trim().min(1, KEY_NAME).max(60, KEY_NAME) });
/** `POST /api/keys`. */
export type ApiKeyInput = z.input<typeof keyInput>;
/** `POST /api/keys`: the key itself, shown this once. */
export type NewApiKey = Awaited<ReturnType<typeof createApiKey>>;
/** `GET /api/keys`: one active key, never the key itself. */
export type ApiKeyView = Json<Awaited<ReturnType<typeof listApiKeys>>[number]>;

export async function createApiKey({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const userId = personId(ctx);
  const { name } = parseInput(keyInput, input, 'The key needs a name.');
  const active = await ctx.svc.db.select({ id: apiKeys.id }).from(apiKeys).where(and(eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)));
  if (active.length >= MAX_KEYS) throw validation(`You can have at most ${MAX_KEYS} active keys; revoke one first.`);
  const key = newToken('tpk_');
  const id = newId('key');
  await ctx.svc.db.insert(apiKeys).values({ id, userId, name, keyHash: sha256(key), hint: key.slice(0, 8) });
  return { id, name, key };
}

export async function listApiKeys({ ctx }: { ctx: Ctx }) {
  const rows = await ctx.svc.db
    .select({ id: apiKeys.id, name: apiKeys.name, hint: apiKeys.hint, createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt })
    .from(apiKeys)
    .where(and(eq(apiKeys.userId, personId(ctx)), isNull(apiKeys.revokedAt)))
    .orderBy(desc(apiKeys.createdAt));
  return rows;
}

/** The key is still active (not revoked): a long-lived stream opened with it checks this as it goes. */
export async function apiKeyActive(svc: Services, keyId: string): Promise<boolean> {
  const [row] = await svc.db.select({ id: apiKeys.id }).from(apiKeys).where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)));
  return row !== undefined;
}

export async function revokeApiKey({ ctx, id }: { ctx: Ctx; id: string }) {
  const [row] = await ctx.svc.db
    .update(apiKeys)
    .set({ revokedAt: ctx.svc.clock.now() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, personId(ctx)), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  if (!row) throw notFound('That key');
}

export async function verifyApiKey(svc: Services, key: string): Promise<{ userId: string; keyId: string } | undefined> {
  if (!key.startsWith('tpk_') || key.length > 100) return undefined;
  const [row] = await svc.db
    .update(apiKeys)
    .set({ lastUsedAt: svc.clock.now() })
    .where(and(eq(apiKeys.keyHash, sha256(key)), isNull(apiKeys.revokedAt)))
    .returning({ userId: apiKeys.userId, keyId: apiKeys.id });
  return row;
}
