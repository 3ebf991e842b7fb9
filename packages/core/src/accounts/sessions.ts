import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import Bowser from 'bowser';
import { and, desc, eq, gt, isNull, lt, ne, or, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { sha256 } from '../crypto';
import { sessions } from '../db/schema/index';
import { notFound } from '../errors';
import { newToken } from '../ids';
import type { Services } from '../services';

const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
/** How stale "last seen" may be: a write at most this often per session, not one per request. */
const SEEN_EVERY_MS = 5 * 60_000;
/** The public id of a session: a prefix of its token's hash (the token cannot be derived from it). */
const ID_CHARS = 16;

export interface SessionToken {
  token: string;
  csrfToken: string;
  expiresAt: Date;
}

/** Where a session was started from, as the person will see it in their list. */
export interface Device {
  userAgent?: string;
  address?: string;
}

export async function createSession(svc: Services, userId: string, device: Device = {}): Promise<SessionToken> {
  const token = newToken('tps_');
  const csrfToken = randomBytes(24).toString('base64url');
  const now = svc.clock.now();
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  await svc.db.insert(sessions).values({
    tokenHash: sha256(token),
    userId,
    csrfToken,
    createdAt: now,
    expiresAt,
    lastSeenAt: now,
    userAgent: device.userAgent?.slice(0, 400) || null,
    address: device.address?.slice(0, 64) || null,
  });
  return { token, csrfToken, expiresAt };
}

export async function logout({ ctx, token }: { ctx: Ctx; token: string }) {
  await ctx.svc.db.delete(sessions).where(eq(sessions.tokenHash, sha256(token)));
}

/** Resolves a session cookie to its person, or undefined; notes when it was last used, now and then. */
export async function readSession(svc: Services, token: string) {
  if (!token.startsWith('tps_') || token.length > 100) return undefined;
  const hash = sha256(token);
  const now = svc.clock.now();
  const [row] = await svc.db
    .select({ userId: sessions.userId, csrfToken: sessions.csrfToken, expiresAt: sessions.expiresAt, lastSeenAt: sessions.lastSeenAt })
    .from(sessions)
    .where(and(eq(sessions.tokenHash, hash), gt(sessions.expiresAt, now)));
  if (row && (!row.lastSeenAt || now.getTime() - row.lastSeenAt.getTime() > SEEN_EVERY_MS)) {
    const stale = new Date(now.getTime() - SEEN_EVERY_MS);
    void svc.db
      .update(sessions)
      .set({ lastSeenAt: now })
      .where(and(eq(sessions.tokenHash, hash), or(isNull(sessions.lastSeenAt), lt(sessions.lastSeenAt, stale))))
      .catch((err: unknown) => svc.log.warn('cannot note a session’s use', { err }));
  }
  return row && { userId: row.userId, csrfToken: row.csrfToken, expiresAt: row.expiresAt };
}

/** "Chrome on Linux", from what the browser said of itself; never more than that. */
export function browserOf(userAgent: string | null): string {
  if (!userAgent) return 'An unknown browser';
  const ua = Bowser.parse(userAgent);
  const browser = ua.browser.name || 'A browser';
  return ua.os.name ? `${browser} on ${ua.os.name}` : browser;
}

/** Roughly where from: the network, not the address (an IPv4 /24, an IPv6 /48). */
export function networkOf(address: string | null): string {
  if (!address) return 'an unknown network';
  const bare = address.replace(/^::ffff:/, '');
  if (bare === '127.0.0.1' || bare === '::1') return 'this server’s own machine';
  if (isIP(bare) === 4) return `the network ${bare.split('.').slice(0, 3).join('.')}.x`;
  if (isIP(bare) === 6) return `the network ${bare.split(':').slice(0, 3).join(':')}::/48`;
  return 'an unknown network';
}

/** `GET /api/sessions`. */
export interface SessionView {
  id: string;
  /** "Chrome on Linux" */
  browser: string;
  /** "the network 203.0.113.x" */
  network: string;
  /** ISO 8601 */
  signedInAt: string;
  lastSeenAt: string;
  /** The session this request came with. */
  current: boolean;
}

/** The person's sessions, the one in use first, then the most recently used. */
export async function listSessions({ ctx, token }: { ctx: Ctx; token: string }): Promise<SessionView[]> {
  const userId = personId(ctx);
  const rows = await ctx.svc.db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), gt(sessions.expiresAt, ctx.svc.clock.now())))
    .orderBy(desc(sessions.lastSeenAt))
    .limit(100);
  const mine = sha256(token);
  return rows
    .map((r) => ({
      id: r.tokenHash.slice(0, ID_CHARS),
      browser: browserOf(r.userAgent),
      network: networkOf(r.address),
      signedInAt: r.createdAt.toISOString(),
      lastSeenAt: (r.lastSeenAt ?? r.createdAt).toISOString(),
      current: r.tokenHash === mine,
    }))
    .sort((a, b) => Number(b.current) - Number(a.current));
}

/** Signs one of the person's sessions out (their current one too, if they choose it). */
export async function endSession({ ctx, id }: { ctx: Ctx; id: string }) {
  if (!/^[A-Za-z0-9_-]{16}$/.test(id)) throw notFound('That session');
  const gone = await ctx.svc.db
    .delete(sessions)
    .where(and(eq(sessions.userId, personId(ctx)), sql`left(${sessions.tokenHash}, ${ID_CHARS}) = ${id}`))
    .returning({ tokenHash: sessions.tokenHash });
  if (!gone.length) throw notFound('That session');
}

/** Every session of the person but the one in use; how many ended. */
export async function endOtherSessions(svc: Services, userId: string, token: string): Promise<number> {
  const gone = await svc.db
    .delete(sessions)
    .where(and(eq(sessions.userId, userId), ne(sessions.tokenHash, sha256(token))))
    .returning({ tokenHash: sessions.tokenHash });
  return gone.length;
}
