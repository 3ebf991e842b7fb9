import { and, eq, isNull, sql } from 'drizzle-orm';
import { ADDON_ID, TOOL_NAME } from '../addons/manifest';
import { addons, installs, tools, toolSwitches } from '../db/schema/index';
import type { Services } from '../services';
import type { CallOutcomeName } from './call-log';

/** What the call log and the app are told of a name that is not one of the app's tools. */
export interface NotCallable {
  outcome: CallOutcomeName;
  sentence: string;
  addonId: string;
  toolName: string;
}

/**
 * Why the app cannot call `name`: a tool of the person's that this app was not given, one switched
 * off (or not yet switched on), one new in an update the person has not reviewed, one an operator holds back, or no tool of the person's at all,
 * which reads as a misspelled name does. Only the person's own installs are looked at, so an app
 * learns nothing of add-ons they do not have.
 */
export async function whyNotCallable(svc: Services, actor: { userId: string }, name: string): Promise<NotCallable> {
  const shown = name.slice(0, 80);
  const sep = name.indexOf('__');
  const addonId = sep > 0 ? name.slice(0, sep) : '';
  const toolName = sep > 0 ? name.slice(sep + 2) : name;
  const unknown: NotCallable = {
    outcome: 'unknown_tool',
    sentence: `The tool "${shown}" does not exist. Call tools/list to see the available tools.`,
    addonId: addonId.slice(0, 30),
    toolName: toolName.slice(0, 64),
  };
  if (!ADDON_ID.test(addonId) || !TOOL_NAME.test(toolName)) return unknown;
  const where = { addonId, toolName };
  const own = (await svc.tools.get(actor.userId)).byName.get(name);
  if (own) {
    return {
      ...where,
      outcome: 'not_given',
      sentence: `The person has not given this app the tool "${shown}". They can give it to this app in Toolport at ${svc.config.publicUrl}/apps; then call tools/list again.`,
    };
  }
  const [row] = await svc.db
    .select({
      addonName: addons.name,
      visibility: addons.visibility,
      listing: addons.listing,
      ownerId: addons.ownerId,
      enabled: toolSwitches.enabled,
      // A release the person has not reviewed yet (installs/releases.ts): its new tools wait for that.
      // The add-on narrows its tools per person (installs/tool-lists.ts).
      perPerson: sql<string | null>`(select v.manifest->>'toolsPerPerson' from addon_versions v where v.addon_id = ${addons.id} and v.version = ${addons.version})`,
      unreviewed: sql<boolean>`exists (select 1 from ${toolSwitches} s where s.user_id = ${actor.userId} and s.addon_id = ${addons.id} and s.accepted_version < ${addons.version})`,
    })
    .from(tools)
    .innerJoin(addons, and(eq(addons.id, tools.addonId), isNull(addons.deletedAt)))
    .innerJoin(installs, and(eq(installs.addonId, tools.addonId), eq(installs.userId, actor.userId)))
    .leftJoin(toolSwitches, and(eq(toolSwitches.userId, actor.userId), eq(toolSwitches.addonId, tools.addonId), eq(toolSwitches.toolName, tools.name)))
    .where(and(eq(tools.addonId, addonId), eq(tools.name, toolName)));
  if (!row) return unknown;
  if (row.ownerId !== actor.userId && !(row.visibility === 'public' && row.listing === 'approved')) {
    return {
      ...where,
      outcome: 'held_off',
      sentence: `Toolport's operators have taken the add-on "${row.addonName}" off the catalog for now, so "${shown}" cannot be called. Do not retry it.`,
    };
  }
  if (row.enabled === null && row.unreviewed) {
    return {
      ...where,
      outcome: 'not_reviewed',
      sentence: `The tool "${shown}" is new in an update of "${row.addonName}" that the person has not reviewed yet. They can review the update and switch the tool on in Toolport at ${svc.config.publicUrl}/addons; then call tools/list again.`,
    };
  }
  if (!row.enabled) {
    return {
      ...where,
      outcome: 'switched_off',
      sentence: `The tool "${shown}" is switched off in the person's Toolport. They can switch it on at ${svc.config.publicUrl}/addons; then call tools/list again.`,
    };
  }
  if (row.perPerson === 'true') {
    return {
      ...where,
      outcome: 'not_offered',
      sentence: `The add-on "${row.addonName}" does not offer the tool "${shown}" to this person right now (it chooses each person's tools, by their plan, settings or accounts). Call tools/list for the tools they have.`,
    };
  }
  // Switched on a moment ago, and not yet in this process's copy of the person's tools.
  return unknown;
}
