import { and, eq, isNull } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { addons, addonVersions, installs, toolSwitches } from '../db/schema/index';
import type { CompiledTool, Manifest } from '../addons/types';
import { acceptRelease, pendingUpdates } from './releases';
import { toolSettings } from './settings';

/**
 * What became of the developer's own install of their add-on while `toolport dev` runs
 * (addons/dev-sessions.ts). It follows each release as the dashboard's Accept would, except a
 * release that makes a switched-on tool less safe: that one waits for the developer's review, so a
 * leaked API key cannot quietly take the asking out of their own apps.
 */
export type OwnInstall =
  /** The developer has not installed the add-on: no app of theirs sees it. */
  | { status: 'not_installed' }
  | {
      status: 'follows';
      version: number;
      /** Switched-on tools whose definition the developer's apps now see changed: they were told. */
      changed: string[];
      /** Tools the developer has never switched on (new ones among them): off until they do. */
      notSwitchedOn: string[];
      /** How many of the release's tools are switched on. */
      on: number;
      /** Titles of required settings without a value: calls are refused until they are set. */
      missingSettings: string[];
    }
  | {
      status: 'held';
      version: number;
      /** The release the install stays at. */
      accepted: number;
      lessSafe: Array<{ tool: string; why: string }>;
    };

/** Brings the caller's own install of their own add-on to its current release; see OwnInstall. */
export async function followOwnInstall(ctx: Ctx, addonId: string): Promise<OwnInstall> {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db
    .select({ version: addons.version, settingsEnc: installs.settingsEnc, tools: addonVersions.tools, manifest: addonVersions.manifest })
    .from(installs)
    .innerJoin(addons, eq(addons.id, installs.addonId))
    .innerJoin(addonVersions, and(eq(addonVersions.addonId, addons.id), eq(addonVersions.version, addons.version)))
    // Only ever the developer's own install: the owner's, read by the owner.
    .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId), eq(addons.ownerId, userId), isNull(addons.deletedAt)));
  if (!row) return { status: 'not_installed' };
  const tools = (row.tools as CompiledTool[] | null) ?? [];
  const update = (await pendingUpdates(ctx, new Map([[addonId, { version: row.version, tools }]]))).get(addonId);
  const lessSafe = (update?.tools ?? []).flatMap((t) => t.lessSafe.map((why) => ({ tool: t.name, why })));
  if (update && lessSafe.length) return { status: 'held', version: row.version, accepted: update.from, lessSafe };

  // Already on it: nothing to accept, and its apps need not hear of a change that did not happen.
  if (update) await acceptRelease(ctx, addonId, row.version);
  const switches = await ctx.svc.db
    .select({ toolName: toolSwitches.toolName, enabled: toolSwitches.enabled })
    .from(toolSwitches)
    .where(and(eq(toolSwitches.userId, userId), eq(toolSwitches.addonId, addonId)));
  const decided = new Set(switches.map((s) => s.toolName));
  const on = new Set(switches.filter((s) => s.enabled).map((s) => s.toolName));
  return {
    status: 'follows',
    version: row.version,
    changed: (update?.tools ?? []).filter((t) => t.change === 'changed').map((t) => t.name),
    notSwitchedOn: tools.filter((t) => !decided.has(t.name)).map((t) => t.name),
    on: tools.filter((t) => on.has(t.name)).length,
    missingSettings: toolSettings(ctx.svc, row.settingsEnc, (row.manifest as Manifest).settings).missing,
  };
}
