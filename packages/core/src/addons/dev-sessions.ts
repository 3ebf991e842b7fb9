import { and, count, eq, gt, isNotNull, isNull, lte, or } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { limitExceeded, notFound } from '../errors';
import { newId } from '../ids';
import type { Json } from '../json';
import type { Services } from '../services';
import { addons, addonVersions, apiKeys, devSessions } from '../db/schema/index';
import { followOwnInstall, type OwnInstall } from '../installs/own-install';
import { isCurrentRelease } from './current-release';
import { manifestDigest } from './manifest';
import type { Manifest } from './types';

/*
 * A dev session is `toolport dev` running for an add-on. While one is active, each release of the
 * add-on brings its developer's own install along (installs/own-install.ts) without their pressing
 * Accept. Only the add-on's owner opens one, for their own install: nobody else's ever follows. It
 * ends when the CLI stops (DELETE), when the CLI stops renewing it (SESSION_MS: a killed process, a
 * sleeping laptop), when the key it was renewed with is revoked, or with the add-on.
 */

/** How long a session lives unrenewed. */
const SESSION_MS = 90_000;
/** The CLI renews this often: two renewals may fail before the session lapses. */
const RENEW_AFTER_S = 30;
/** Sessions open at once per add-on (a few terminals, or a restart racing the session it replaces). */
const MAX_SESSIONS_PER_ADDON = 5;

const actorKey = (ctx: Ctx) => (ctx.actor.kind === 'developer' ? ctx.actor.keyId : null);

/** `POST /api/addons/{id}/dev-sessions`. */
export type DevSessionView = Json<Awaited<ReturnType<typeof startDevSession>>>;
export type { OwnInstall } from '../installs/own-install';

/**
 * Opens a session, brings the developer's own install to the current release, and says which release
 * that is (with its manifest's digest, so the CLI pushes only a changed manifest).
 */
export async function startDevSession({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const userId = personId(ctx);
  const [addon] = await ctx.svc.db
    .select({ version: addons.version, webhookDisabledAt: addons.webhookDisabledAt, manifest: addonVersions.manifest })
    .from(addons)
    .innerJoin(addonVersions, isCurrentRelease)
    .where(and(eq(addons.id, addonId), eq(addons.ownerId, userId), isNull(addons.deletedAt)));
  if (!addon) throw notFound('That add-on');
  const now = ctx.svc.clock.now();
  await ctx.svc.db.delete(devSessions).where(and(eq(devSessions.addonId, addonId), lte(devSessions.expiresAt, now)));
  const [open] = await ctx.svc.db.select({ n: count() }).from(devSessions).where(eq(devSessions.addonId, addonId));
  if ((open?.n ?? 0) >= MAX_SESSIONS_PER_ADDON) {
    throw limitExceeded(`At most ${MAX_SESSIONS_PER_ADDON} \`toolport dev\` sessions may run for one add-on at once; stop another first.`, RENEW_AFTER_S);
  }
  const id = newId('dev');
  const expiresAt = new Date(now.getTime() + SESSION_MS);
  await ctx.svc.db.insert(devSessions).values({ id, addonId, userId, keyId: actorKey(ctx), expiresAt });
  return {
    id,
    expiresAt,
    renewAfterSeconds: RENEW_AFTER_S,
    release: { version: addon.version, manifestDigest: manifestDigest(addon.manifest as Manifest), webhookDisabled: addon.webhookDisabledAt !== null },
    ownInstall: await followOwnInstall(ctx, addonId),
  };
}

/** Keeps a session alive; one that lapsed or ended is NOT_FOUND (the CLI opens a new one). */
export async function renewDevSession({ ctx, addonId, sessionId }: { ctx: Ctx; addonId: string; sessionId: string }) {
  const userId = personId(ctx);
  const now = ctx.svc.clock.now();
  const expiresAt = new Date(now.getTime() + SESSION_MS);
  const [row] = await ctx.svc.db
    .update(devSessions)
    .set({ expiresAt, keyId: actorKey(ctx) })
    .where(and(eq(devSessions.id, sessionId), eq(devSessions.addonId, addonId), eq(devSessions.userId, userId), gt(devSessions.expiresAt, now)))
    .returning({ id: devSessions.id });
  if (!row) throw notFound('That dev session');
  return { id: row.id, expiresAt };
}

/** Ends a session at once (the CLI stopping). Ending one already gone is no error. */
export async function endDevSession({ ctx, addonId, sessionId }: { ctx: Ctx; addonId: string; sessionId: string }) {
  const userId = personId(ctx);
  await ctx.svc.db.delete(devSessions).where(and(eq(devSessions.id, sessionId), eq(devSessions.addonId, addonId), eq(devSessions.userId, userId)));
}

/** Whether the add-on's owner has a session running, renewed with a key that still holds. */
async function developing(svc: Services, addonId: string, userId: string): Promise<boolean> {
  const [row] = await svc.db
    .select({ id: devSessions.id })
    .from(devSessions)
    .leftJoin(apiKeys, eq(apiKeys.id, devSessions.keyId))
    .where(
      and(
        eq(devSessions.addonId, addonId),
        eq(devSessions.userId, userId),
        gt(devSessions.expiresAt, svc.clock.now()),
        or(isNull(devSessions.keyId), and(isNotNull(apiKeys.id), isNull(apiKeys.revokedAt))),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/**
 * After the owner published a release: their own install follows it while a session runs; null
 * when none does (the install stays on the release they accepted).
 */
export async function followIfDeveloping(ctx: Ctx, addonId: string): Promise<OwnInstall | null> {
  try {
    return (await developing(ctx.svc, addonId, personId(ctx))) ? await followOwnInstall(ctx, addonId) : null;
  } catch (err) {
    // The release is published already: the push stands, and the install waits for Accept.
    ctx.svc.log.warn("cannot move the developer's own install to their new release", { err, addonId });
    return null;
  }
}
