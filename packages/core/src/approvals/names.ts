import { and, eq, or } from 'drizzle-orm';
import { addons, tools } from '../db/schema/index';
import type { Services } from '../services';
import type { ApprovalView } from './records';

/** What the person knows the tool by: "Delete a note · Notes", not `notes__delete_note`. */
export interface ApprovalNames {
  toolTitle: string;
  addonName: string;
}

export type NamedApproval = ApprovalView & ApprovalNames;

const keyOf = (addonId: string, toolName: string) => `${addonId}__${toolName}`;

/**
 * From the person's enabled tools first (the release the app called, whose title the push showed),
 * then the add-on's current names, then the ids.
 */
export async function withNames<T extends Pick<ApprovalView, 'addon' | 'tool'>>(svc: Services, userId: string, views: T[]): Promise<Array<T & ApprovalNames>> {
  if (!views.length) return [];
  const names = new Map<string, ApprovalNames>();
  const enabled = await svc.tools.get(userId).catch(() => undefined);
  for (const v of views) {
    const tool = enabled?.byName.get(keyOf(v.addon, v.tool));
    if (tool) names.set(keyOf(v.addon, v.tool), { toolTitle: tool.title, addonName: tool.addonName });
  }
  const missing = [...new Map(views.filter((v) => !names.has(keyOf(v.addon, v.tool))).map((v) => [keyOf(v.addon, v.tool), v])).values()];
  if (missing.length) {
    const rows = await svc.db
      .select({ addonId: tools.addonId, name: tools.name, title: tools.title, addonName: addons.name })
      .from(tools)
      .innerJoin(addons, eq(addons.id, tools.addonId))
      .where(or(...missing.map((v) => and(eq(tools.addonId, v.addon), eq(tools.name, v.tool)))));
    for (const r of rows) names.set(keyOf(r.addonId, r.name), { toolTitle: r.title, addonName: r.addonName });
  }
  return views.map((v) => ({ ...v, ...(names.get(keyOf(v.addon, v.tool)) ?? { toolTitle: v.tool, addonName: v.addon }) }));
}
