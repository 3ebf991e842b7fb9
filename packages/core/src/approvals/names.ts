import { and, eq, inArray, or, sql } from 'drizzle-orm';
import { addons, addonVersions, tools } from '../db/schema/index';
import type { Services } from '../services';
import type { ApprovalView } from './records';
import { executedRows } from '../db/client';

/** What the person knows the tool by: "Delete a note · Notes", not `notes__delete_note`. */
export interface ApprovalNames {
  toolTitle: string;
  addonName: string;
}

export type NamedApproval = ApprovalView & ApprovalNames;

const keyOf = (addonId: string, toolName: string) => `${addonId}__${toolName}`;

/**
 * A name read from an id when nothing better is known (an app asked for a tool that never existed):
 * `delete_file` reads "Delete file", `acme-files` "Acme files".
 */
function humanName(id: string): string {
  const words = id.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_\-.\s]+/g, ' ').trim().toLowerCase();
  return words ? words[0]!.toUpperCase() + words.slice(1) : '';
}

/**
 * From the person's enabled tools first (the release the app called, whose title the push showed),
 * then the add-on's current names; a tool since removed or renamed by the latest release that had
 * it (the add-on's row outlives it, and every release is kept); else the ids, humanised.
 */
export async function withNames<T extends Pick<ApprovalView, 'addon' | 'tool'>>(svc: Services, userId: string, views: T[]): Promise<Array<T & ApprovalNames>> {
  if (!views.length) return [];
  const names = new Map<string, ApprovalNames>();
  const enabled = await svc.tools.get(userId).catch(() => undefined);
  for (const v of views) {
    const tool = enabled?.byName.get(keyOf(v.addon, v.tool));
    if (tool) names.set(keyOf(v.addon, v.tool), { toolTitle: tool.title, addonName: tool.addonName });
  }
  const missingOf = () => [...new Map(views.filter((v) => !names.has(keyOf(v.addon, v.tool))).map((v) => [keyOf(v.addon, v.tool), v])).values()];
  let missing = missingOf();
  if (missing.length) {
    const rows = await svc.db
      .select({ addonId: tools.addonId, name: tools.name, title: tools.title, addonName: addons.name })
      .from(tools)
      .innerJoin(addons, eq(addons.id, tools.addonId))
      .where(or(...missing.map((v) => and(eq(tools.addonId, v.addon), eq(tools.name, v.tool)))));
    for (const r of rows) names.set(keyOf(r.addonId, r.name), { toolTitle: r.title, addonName: r.addonName });
    missing = missingOf();
  }
  if (missing.length) {
    const addonIds = [...new Set(missing.map((v) => v.addon))];
    const addonNames = await namesOfAddons(svc, addonIds);
    const titles = await releasedTitles(svc, addonIds, [...new Set(missing.map((v) => v.tool))]);
    for (const v of missing) {
      names.set(keyOf(v.addon, v.tool), { toolTitle: titles.get(keyOf(v.addon, v.tool)) ?? humanName(v.tool), addonName: addonNames.get(v.addon) ?? humanName(v.addon) });
    }
  }
  return views.map((v) => ({ ...v, ...names.get(keyOf(v.addon, v.tool))! }));
}

/** Add-ons' names by id, deleted ones too (their row is kept); an id nobody registered is missing. */
async function namesOfAddons(svc: Services, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await svc.db.select({ id: addons.id, name: addons.name }).from(addons).where(inArray(addons.id, ids));
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** The add-ons' names, for lists that have no tool (latency per add-on); an unknown id humanised. */
export async function addonNamesOf(svc: Services, ids: string[]): Promise<Map<string, string>> {
  const found = await namesOfAddons(svc, [...new Set(ids)]);
  return new Map(ids.map((id) => [id, found.get(id) ?? humanName(id)]));
}

/** Each tool's title in the latest release of its add-on that had it, for tools no release has now. */
async function releasedTitles(svc: Services, addonIds: string[], toolNames: string[]): Promise<Map<string, string>> {
  const known = addonIds.filter(Boolean);
  if (!known.length || !toolNames.length) return new Map();
  const found = await svc.db.execute(sql`
    select distinct on (v.addon_id, t->>'name') v.addon_id as "addonId", t->>'name' as name, t->>'title' as title
    from ${addonVersions} v, jsonb_array_elements(case when jsonb_typeof(v.manifest->'tools') = 'array' then v.manifest->'tools' else '[]'::jsonb end) t
    where v.addon_id in (${sql.join(known.map((id) => sql`${id}`), sql`, `)}) and t->>'name' in (${sql.join(toolNames.map((n) => sql`${n}`), sql`, `)})
    order by v.addon_id, t->>'name', v.version desc`);
  const rows = executedRows<{ addonId: string; name: string; title: unknown }>(found);
  const out = new Map<string, string>();
  for (const r of rows) if (typeof r.title === 'string' && r.title) out.set(keyOf(r.addonId, r.name), r.title);
  return out;
}

/** One add-on's tools by the titles of its current release, else of the latest release that had them, else humanised. */
export async function toolTitlesOf(svc: Services, addonId: string, toolNames: string[]): Promise<Map<string, string>> {
  const wanted = [...new Set(toolNames)];
  if (!wanted.length) return new Map();
  const current = await svc.db
    .select({ name: tools.name, title: tools.title })
    .from(tools)
    .where(and(eq(tools.addonId, addonId), inArray(tools.name, wanted)));
  const out = new Map(current.map((r) => [r.name, r.title]));
  const gone = wanted.filter((n) => !out.has(n));
  const released = await releasedTitles(svc, [addonId], gone);
  for (const n of gone) out.set(n, released.get(keyOf(addonId, n)) ?? humanName(n));
  return out;
}
