import { and, desc, eq, isNull } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { installs, oauthClients, oauthGrants } from '../db/schema/index';
import { switchedOnTools } from '../calls/enabled-tools';
import { notFound } from '../errors';
import type { Services } from '../services';
import { dropAppRules } from '../approvals/rules';

/** Who ended an app's access: the person, the app itself (RFC 7009), or Toolport on seeing a code or token replayed. */
export type RevokedBy = 'person' | 'app' | 'replay';

/** Access tokens stop within `verifyAccessToken`'s cache bound (at once where the bus message arrives). */
export async function revokeGrant(svc: Services, grantId: string, by: RevokedBy, userId?: string): Promise<boolean> {
  const where = userId
    ? and(eq(oauthGrants.id, grantId), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt))
    : and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt));
  const [row] = await svc.db
    .update(oauthGrants)
    .set({ revokedAt: svc.clock.now() })
    .where(where)
    .returning({ id: oauthGrants.id, userId: oauthGrants.userId });
  if (!row) return false;
  svc.audit.record(row.userId, 'app.revoked', { grant: row.id, by });
  await svc.changes.changed('gate', { userId: row.userId, grantId: row.id });
  await dropAppRules(svc, row.userId, row.id);
  return true;
}

function hostOf(uri: string | null | undefined): string | null {
  if (!uri) return null;
  try {
    const url = new URL(uri);
    // A native app's private-use scheme (com.example.app:/cb) has no host: show the scheme.
    return url.host || url.protocol.replace(/:$/, '');
  } catch {
    return null;
  }
}

export interface Connection {
  id: string;
  appName: string;
  clientId: string;
  unverified: true;
  redirectHost: string | null;
  scope: string;
  /** The switched-on tools this app may use (`{addonId}__{toolName}`), in the person's order. */
  tools: string[];
  /** Whether the app also gets the tools the person switches on later. */
  newTools: boolean;
  /** Whether every tool call of this app asks the person first. */
  askEveryTool: boolean;
  /** Switched-on tools not yet chosen for this app (the Apps page marks them new). */
  addedSince: string[];
  createdAt: string;
  lastUsedAt: string | null;
}

/** The apps the person has let in and not revoked, newest first. */
export async function listConnections({ ctx }: { ctx: Ctx }): Promise<Connection[]> {
  const userId = personId(ctx);
  const rows = await ctx.svc.db
    .select({
      id: oauthGrants.id,
      appName: oauthClients.name,
      clientId: oauthGrants.clientId,
      redirectUri: oauthGrants.redirectUri,
      redirectUris: oauthClients.redirectUris,
      scope: oauthGrants.scope,
      tools: oauthGrants.tools,
      newTools: oauthGrants.newTools,
      askEveryTool: oauthGrants.askEveryTool,
      createdAt: oauthGrants.createdAt,
      lastUsedAt: oauthGrants.lastUsedAt,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
    .orderBy(desc(oauthGrants.createdAt));
  const [switchedOn, installed] = rows.length
    ? await Promise.all([
        switchedOnTools(ctx.svc, userId),
        ctx.svc.db.select({ addonId: installs.addonId, at: installs.createdAt }).from(installs).where(eq(installs.userId, userId)),
      ])
    : [[], []];
  const installedAt = new Map(installed.map((i) => [i.addonId, i.at.getTime()]));
  return rows.map((r) => {
    const chosen = new Set(r.tools);
    const since = r.createdAt.getTime();
    return {
      id: r.id,
      appName: r.appName,
      clientId: r.clientId,
      unverified: true as const,
      redirectHost: hostOf(r.redirectUri ?? r.redirectUris[0]),
      scope: r.scope,
      tools: switchedOn.filter((t) => chosen.has(t.mcpName)).map((t) => t.mcpName),
      newTools: r.newTools,
      askEveryTool: r.askEveryTool,
      addedSince: switchedOn.filter((t) => !chosen.has(t.mcpName) && (installedAt.get(t.addonId) ?? 0) > since).map((t) => t.mcpName),
      createdAt: r.createdAt.toISOString(),
      lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    };
  });
}

/** Revokes one of the person's connections; another person's id (or an unknown one) is NOT_FOUND. */
export async function revokeConnection({ ctx, id }: { ctx: Ctx; id: string }): Promise<void> {
  const userId = personId(ctx);
  if (await revokeGrant(ctx.svc, id, 'person', userId)) return;
  const [exists] = await ctx.svc.db
    .select({ id: oauthGrants.id })
    .from(oauthGrants)
    .where(and(eq(oauthGrants.id, id), eq(oauthGrants.userId, userId)));
  if (!exists) throw notFound('That connection');
}
