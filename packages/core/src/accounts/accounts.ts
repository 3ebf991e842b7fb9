import { randomBytes } from 'node:crypto';
import { and, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { dummyPasswordHash, hashPassword, sha256, verifyPassword } from '../crypto';
import { conflict, limitExceeded, ToolportError, unauthorized, validation } from '../errors';
import type { FieldError } from '../errors';
import { newId, newToken } from '../ids';
import { GATES_CHANNEL } from '../events/channels';
import type { Services } from '../services';
import { loginThrottle, sessions, users } from '../db/schema/index';

export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
const THROTTLE = { maxFailures: 5, windowMs: 15 * 60 * 1000, lockMs: 15 * 60 * 1000 };

export interface PublicUser {
  id: string;
  email: string;
  mcpUrl: string;
  aiApps: boolean;
}

export const mcpUrlFor = (svc: Services, userKey: string) => `${svc.config.publicUrl}/u/${userKey}/mcp`;
const newUserKey = () => randomBytes(18).toString('base64url');

function toPublic(svc: Services, row: typeof users.$inferSelect): PublicUser {
  return { id: row.id, email: row.email, mcpUrl: mcpUrlFor(svc, row.userKey), aiApps: row.aiApps };
}

function readCredentials(input: unknown): { email: string; password: string } {
  const errors: FieldError[] = [];
  const body = (input ?? {}) as Record<string, unknown>;
  const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : '';
  const password = typeof body.password === 'string' ? body.password : '';
  if (!/^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{1,63}$/.test(email)) errors.push({ path: '/email', message: 'Give a valid email address.' });
  if (typeof body.password !== 'string') errors.push({ path: '/password', message: 'Give a password.' });
  if (errors.length) throw validation('The sign-in details are incomplete.', errors);
  return { email, password };
}

export async function signup({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const { email, password } = readCredentials(input);
  if (password.length < 10) throw validation('The password is too short.', [{ path: '/password', message: 'Use at least 10 characters.' }]);
  if (password.length > 256) throw validation('The password is too long.', [{ path: '/password', message: 'Use at most 256 characters.' }]);
  const passwordHash = await hashPassword(password);
  const [row] = await ctx.svc.db
    .insert(users)
    .values({ id: newId('usr'), email, passwordHash, userKey: newUserKey() })
    .onConflictDoNothing({ target: users.email })
    .returning();
  if (!row) throw conflict('An account with this email already exists.');
  const session = await createSession(ctx.svc, row.id);
  return { user: toPublic(ctx.svc, row), session };
}

/** Sign-in with throttling per email and per client address, shared through the database. */
export async function login({ ctx, input, clientAddress }: { ctx: Ctx; input: unknown; clientAddress?: string }) {
  const { email, password } = readCredentials(input);
  const keys = [`email:${email}`, ...(clientAddress ? [`ip:${clientAddress}`] : [])];
  const now = ctx.svc.clock.now();
  const locks = await ctx.svc.db
    .select()
    .from(loginThrottle)
    .where(and(inArray(loginThrottle.key, keys), gt(loginThrottle.lockedUntil, now)));
  if (locks.length) {
    const until = Math.max(...locks.map((l) => l.lockedUntil!.getTime()));
    throw limitExceeded('Too many failed sign-ins. Try again later.', Math.ceil((until - now.getTime()) / 1000));
  }
  const [row] = await ctx.svc.db.select().from(users).where(eq(users.email, email));
  const ok = await verifyPassword(password, row?.passwordHash ?? (await dummyPasswordHash()));
  if (!row || !ok) {
    await recordFailure(ctx.svc, keys, now);
    throw unauthorized('The email or password is wrong.');
  }
  await ctx.svc.db.delete(loginThrottle).where(eq(loginThrottle.key, `email:${email}`));
  const session = await createSession(ctx.svc, row.id);
  return { user: toPublic(ctx.svc, row), session };
}

async function recordFailure(svc: Services, keys: string[], now: Date) {
  const at = now.toISOString();
  const windowStart = new Date(now.getTime() - THROTTLE.windowMs).toISOString();
  const lockUntil = new Date(now.getTime() + THROTTLE.lockMs).toISOString();
  for (const key of keys) {
    // One statement per key: restart the window if it is old, count, lock at the threshold.
    const limit = key.startsWith('ip:') ? THROTTLE.maxFailures * 4 : THROTTLE.maxFailures;
    await svc.db.execute(sql`
      insert into login_throttle (key, failures, window_start) values (${key}, 1, ${at}::timestamptz)
      on conflict (key) do update set
        failures = case when login_throttle.window_start < ${windowStart}::timestamptz then 1 else login_throttle.failures + 1 end,
        window_start = case when login_throttle.window_start < ${windowStart}::timestamptz then ${at}::timestamptz else login_throttle.window_start end,
        locked_until = case
          when login_throttle.window_start >= ${windowStart}::timestamptz and login_throttle.failures + 1 >= ${limit}
          then ${lockUntil}::timestamptz else login_throttle.locked_until end`);
  }
}

export interface SessionToken {
  token: string;
  csrfToken: string;
  expiresAt: Date;
}

async function createSession(svc: Services, userId: string): Promise<SessionToken> {
  const token = newToken('tps_');
  const csrfToken = randomBytes(24).toString('base64url');
  const expiresAt = new Date(svc.clock.now().getTime() + SESSION_TTL_MS);
  await svc.db.insert(sessions).values({ tokenHash: sha256(token), userId, csrfToken, expiresAt });
  return { token, csrfToken, expiresAt };
}

export async function logout({ ctx, token }: { ctx: Ctx; token: string }) {
  await ctx.svc.db.delete(sessions).where(eq(sessions.tokenHash, sha256(token)));
}

/** Resolves a session cookie to its person, or undefined. */
export async function readSession(svc: Services, token: string) {
  if (!token.startsWith('tps_') || token.length > 100) return undefined;
  const [row] = await svc.db
    .select({ userId: sessions.userId, csrfToken: sessions.csrfToken, expiresAt: sessions.expiresAt })
    .from(sessions)
    .where(and(eq(sessions.tokenHash, sha256(token)), gt(sessions.expiresAt, svc.clock.now())));
  return row;
}

export async function getMe({ ctx }: { ctx: Ctx }): Promise<PublicUser> {
  const [row] = await ctx.svc.db.select().from(users).where(eq(users.id, personId(ctx)));
  if (!row) throw unauthorized();
  return toPublic(ctx.svc, row);
}

export async function getSettings({ ctx }: { ctx: Ctx }) {
  const me = await getMe({ ctx });
  return { aiApps: me.aiApps };
}

export async function updateSettings({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const body = (input ?? {}) as Record<string, unknown>;
  const errors: FieldError[] = [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) errors.push({ path: '', message: 'Send a JSON object.' });
  for (const key of Object.keys(body)) if (key !== 'aiApps') errors.push({ path: `/${key}`, message: 'This setting does not exist.' });
  if ('aiApps' in body && typeof body.aiApps !== 'boolean') errors.push({ path: '/aiApps', message: 'Use true or false.' });
  if (errors.length) throw validation('The settings are not valid.', errors);
  const userId = personId(ctx);
  if (typeof body.aiApps === 'boolean') {
    await ctx.svc.db.update(users).set({ aiApps: body.aiApps }).where(eq(users.id, userId));
    await ctx.svc.bus.publish(GATES_CHANNEL, { userId });
  }
  return getSettings({ ctx });
}

/** A new MCP URL; the old one stops answering at once. */
export async function rotateUserKey({ ctx }: { ctx: Ctx }): Promise<PublicUser> {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db.update(users).set({ userKey: newUserKey() }).where(eq(users.id, userId)).returning();
  if (!row) throw new ToolportError('NOT_FOUND', 'That account does not exist.');
  await ctx.svc.bus.publish(GATES_CHANNEL, { userId });
  return toPublic(ctx.svc, row);
}
