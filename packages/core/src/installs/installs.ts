import { and, asc, eq, ilike, inArray, isNull, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { notFound } from '../errors';
import { inputObject, parseInput } from '../input';
import type { Json } from '../json';
import type { Services } from '../services';
import { addons, installs, tools, toolSwitches, users } from '../db/schema/index';
import type { CompiledTool, StoredIcon } from '../addons/types';
import { pendingUpdates } from './releases';
import { forgetAddonTools, giveNewTools } from '../oauth/tool-choices';
import { hostOf, visibleTo } from '../addons/listings';
import { dropAddonRules } from '../approvals/rules';
import { catalogSettings, initialSettings, setInstallSettings } from './settings';
import { forgetInstallAccounts } from './connected-accounts';


async function toolsOf(svc: Services, addonIds: string[]) {
  if (!addonIds.length) return new Map<string, Array<typeof tools.$inferSelect>>();
  const rows = await svc.db.select().from(tools).where(inArray(tools.addonId, addonIds)).orderBy(asc(tools.position));
  const byAddon = new Map<string, Array<typeof tools.$inferSelect>>();
  for (const r of rows) byAddon.set(r.addonId, [...(byAddon.get(r.addonId) ?? []), r]);
  return byAddon;
}

/** The icon the dashboard shows beside a name: Toolport's own path (same origin), one drawn for a light background first. */
function iconPath(list: unknown): { icon?: string } {
  const icons = (list as StoredIcon[] | null) ?? [];
  const chosen = icons.find((i) => i.theme !== 'dark') ?? icons[0];
  return chosen ? { icon: `/icons/${chosen.hash}` } : {};
}

const toolView = (t: typeof tools.$inferSelect) => ({
  name: t.name,
  title: t.title,
  summary: t.summary,
  destructive: t.destructive,
  readOnly: t.readOnly,
  ...(t.alwaysAsk ? { alwaysAsk: true } : {}),
  ...iconPath(t.icons),
});

const catalogQuery = z.object({
  q: z.string().trim().max(100, 'Search with at most 100 characters.').optional(),
});

/** `%` and `_` are literal in what a person types. */
const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** `GET /api/catalog` (each). */
export type CatalogEntry = Awaited<ReturnType<typeof listCatalog>>[number];

export async function listCatalog({ ctx, query = {} }: { ctx: Ctx; query?: { q?: string } }) {
  const userId = personId(ctx);
  const { q } = parseInput(catalogQuery, query, 'The search is not valid.');
  const pattern = q ? likePattern(q) : undefined;
  const rows = await ctx.svc.db
    .select({ addon: addons, installedAt: installs.createdAt, publisher: users.displayName })
    .from(addons)
    .innerJoin(users, eq(users.id, addons.ownerId))
    .leftJoin(installs, and(eq(installs.addonId, addons.id), eq(installs.userId, userId)))
    .where(
      and(
        visibleTo(userId),
        pattern
          ? or(ilike(addons.name, pattern), ilike(addons.id, pattern), ilike(addons.description, pattern), ilike(users.displayName, pattern))
          : undefined,
      ),
    )
    .orderBy(asc(addons.name));
  const byAddon = await toolsOf(ctx.svc, rows.map((r) => r.addon.id));
  return rows.map((row) => catalogEntry(row, userId, (byAddon.get(row.addon.id) ?? []).map(toolView)));
}

function catalogEntry<T>(
  { addon, installedAt, publisher }: { addon: typeof addons.$inferSelect; installedAt: Date | null; publisher: string | null },
  userId: string,
  toolList: T[],
) {
  return {
    id: addon.id,
    name: addon.name,
    description: addon.description,
    ...iconPath(addon.icons),
    visibility: addon.visibility,
    mine: addon.ownerId === userId,
    installed: installedAt !== null,
    // The developer's own name for themselves and where the webhook runs: who you would be trusting.
    publisher: { name: publisher, webhookHost: hostOf(addon.webhookUrl) },
    release: { version: addon.version, publishedAt: addon.updatedAt.toISOString() },
    ...(addon.ownerId === userId ? { listing: addon.listing } : {}),
    tools: toolList,
  };
}

/** What the arguments of a tool are called and say, from its input schema. */
function argumentsOf(schema: unknown) {
  const s = (schema ?? {}) as { properties?: Record<string, { description?: unknown }>; required?: unknown };
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  return Object.entries(s.properties ?? {}).map(([name, p]) => ({
    name,
    summary: typeof p?.description === 'string' ? p.description : '',
    required: required.has(name),
  }));
}

/** `GET /api/catalog/{id}`. */
export type CatalogDetail = Awaited<ReturnType<typeof getCatalogEntry>>;

/** An add-on the person may not see does not exist for them. */
export async function getCatalogEntry({ ctx, id }: { ctx: Ctx; id: string }) {
  const userId = personId(ctx);
  const [row] = await ctx.svc.db
    .select({ addon: addons, installedAt: installs.createdAt, publisher: users.displayName })
    .from(addons)
    .innerJoin(users, eq(users.id, addons.ownerId))
    .leftJoin(installs, and(eq(installs.addonId, addons.id), eq(installs.userId, userId)))
    .where(and(visibleTo(userId), eq(addons.id, id)));
  if (!row) throw notFound('That add-on');
  const toolRows = (await toolsOf(ctx.svc, [id])).get(id) ?? [];
  return { ...catalogEntry(
    row,
    userId,
    toolRows.map((t) => ({
      ...toolView(t),
      confirm: t.confirm,
      idempotent: t.idempotent,
      openWorld: t.openWorld,
      arguments: argumentsOf(t.inputSchema),
    })),
  ), settings: await catalogSettings(ctx.svc.db, id) };
}

async function installView(ctx: Ctx, addonId: string) {
  const all = await listInstalls({ ctx, only: addonId });
  const found = all[0];
  if (!found) throw notFound('That install');
  return found;
}

/** `GET /api/installs` (each); `POST /api/installs` and `PATCH /api/installs/{addon}` answer one. */
export type InstallView = Json<Awaited<ReturnType<typeof listInstalls>>[number]>;

export async function listInstalls({ ctx, only }: { ctx: Ctx; only?: string }) {
  const userId = personId(ctx);
  // Every install of an add-on that exists, a delisted one too: the person is told its tools are off.
  const rows = await ctx.svc.db
    .select({ addon: addons, installedAt: installs.createdAt })
    .from(installs)
    .innerJoin(addons, eq(addons.id, installs.addonId))
    .where(and(eq(installs.userId, userId), isNull(addons.deletedAt), only ? eq(installs.addonId, only) : undefined))
    .orderBy(asc(addons.name));
  const ids = rows.map((r) => r.addon.id);
  const byAddon = await toolsOf(ctx.svc, ids);
  const switches = ids.length
    ? await ctx.svc.db
        .select()
        .from(toolSwitches)
        .where(and(eq(toolSwitches.userId, userId), inArray(toolSwitches.addonId, ids)))
    : [];
  const on = new Set(switches.filter((s) => s.enabled).map((s) => `${s.addonId}/${s.toolName}`));
  const updates = await pendingUpdates(
    ctx,
    new Map(rows.map(({ addon }) => [addon.id, { version: addon.version, tools: (byAddon.get(addon.id) ?? []) as unknown as CompiledTool[] }])),
  );
  return rows.map(({ addon, installedAt }) => {
    const update = updates.get(addon.id);
    const held = new Map((update?.tools ?? []).filter((c) => c.change === 'changed').map((c) => [c.name, c.before!]));
    const listed = addon.ownerId === userId || (addon.visibility === 'public' && addon.listing === 'approved');
    return {
      addon: { id: addon.id, name: addon.name, description: addon.description, version: addon.version, ...iconPath(addon.icons) },
      installedAt,
      // Taken off the catalog (delisted, or made private): its tools reach no app.
      ...(listed ? {} : ({ heldOff: addon.listing === 'delisted' ? 'delisted' : 'unlisted' } as const)),
      // A switched-on tool changed by a release not yet reviewed shows what apps still see of it.
      tools: (byAddon.get(addon.id) ?? []).map((t) => ({
        ...toolView(t),
        ...(held.get(t.name) ?? {}),
        enabled: on.has(`${addon.id}/${t.name}`),
        ...(held.has(t.name) ? { updatePending: true } : {}),
      })),
      update: update ?? null,
    };
  });
}

const installInput = inputObject({
  addon: z.string({ message: 'Give the add-on id.' }).min(1, 'Give the add-on id.'),
  // The add-on's settings, checked by settings.ts: `{"api_key": "..."}`.
  settings: z.unknown().optional(),
});
/** `POST /api/installs`. */
export type InstallInput = z.input<typeof installInput>;

/** Installs an add-on with every tool off (the third gate). Installing twice is harmless. */
export async function installAddon({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const userId = personId(ctx);
  const { addon: addonId, settings } = parseInput(installInput, input, 'Say which add-on to install.');
  const [addon] = await ctx.svc.db.select({ id: addons.id }).from(addons).where(and(eq(addons.id, addonId), visibleTo(userId)));
  if (!addon) throw notFound('That add-on');
  const settingsEnc = await initialSettings(ctx.svc, addonId, settings);
  const [created] = await ctx.svc.db.insert(installs).values({ userId, addonId, settingsEnc }).onConflictDoNothing().returning();
  if (!created && settings !== undefined) await setInstallSettings({ ctx, addonId, input: { values: settings } });
  return { created: Boolean(created), install: await installView(ctx, addonId) };
}

export async function uninstallAddon({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const userId = personId(ctx);
  const forgotten = await ctx.svc.db.transaction(async (tx) => {
    const [gone] = await tx
      .delete(installs)
      .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId)))
      .returning();
    if (!gone) throw notFound('That install');
    await tx.delete(toolSwitches).where(and(eq(toolSwitches.userId, userId), eq(toolSwitches.addonId, addonId)));
    // Installed again later, its tools start off and reach only the apps the person gives them to.
    return forgetAddonTools(tx, userId, addonId);
  });
  if (forgotten) await ctx.svc.changes.changed('gate', { userId });
  await dropAddonRules(ctx.svc, userId, addonId);
  // Its connected accounts are forgotten and revoked at their providers (after the install is gone: no call uses them).
  await forgetInstallAccounts(ctx.svc, userId, addonId);
  await ctx.svc.changes.changed('tools', { userId });
}

/** `{"tools": {"add_note": true}}` naming only tools of the install: every bad switch is listed. */
const switchesInput = (known: ReadonlySet<string>) =>
  inputObject({
    tools: z
      .record(z.string(), z.unknown(), { message: 'Give an object of tool names to true or false.' })
      .transform((tools, ctx) => {
        for (const [name, value] of Object.entries(tools)) {
          const message = !known.has(name) ? `The add-on has no tool "${name}".` : typeof value !== 'boolean' ? 'Use true or false.' : undefined;
          if (message) ctx.addIssue({ code: 'custom', path: [name], message, params: { sentence: 'Some switches are not valid.' } });
        }
        return tools as Record<string, boolean>;
      }),
  });

/** `PATCH /api/installs/{addon}`. */
export type ToolSwitchesInput = z.input<ReturnType<typeof switchesInput>>;

/** Switches tools on or off: `{"tools": {"add_note": true}}`. Unknown tools are refused, all listed. */
export async function setToolSwitches({ ctx, addonId, input }: { ctx: Ctx; addonId: string; input: unknown }) {
  const userId = personId(ctx);
  const install = await installView(ctx, addonId);
  const { tools: wanted } = parseInput(switchesInput(new Set(install.tools.map((t) => t.name))), input, 'Send the switches as {"tools": {"name": true}}.');
  const entries = Object.entries(wanted);
  let given = false;
  if (entries.length) {
    given = await ctx.svc.db.transaction(async (tx) => {
      const before = await tx
        .select({ toolName: toolSwitches.toolName })
        .from(toolSwitches)
        .where(and(eq(toolSwitches.userId, userId), eq(toolSwitches.addonId, addonId), eq(toolSwitches.enabled, true)))
        .for('update');
      const wasOn = new Set(before.map((r) => r.toolName));
      await tx
        .insert(toolSwitches)
        .values(entries.map(([toolName, enabled]) => ({ userId, addonId, toolName, enabled, acceptedVersion: install.addon.version })))
        .onConflictDoUpdate({
          target: [toolSwitches.userId, toolSwitches.addonId, toolSwitches.toolName],
          // Switching a tool on accepts the definition the person sees now; a tool already on keeps
          // the release it was accepted at (its update is accepted only by reviewing it).
          set: {
            enabled: sql`excluded.enabled`,
            acceptedVersion: sql`case when ${toolSwitches.enabled} then ${toolSwitches.acceptedVersion} else excluded.accepted_version end`,
          },
        });
      // Switched on now (not already on): given to the apps that asked for later tools, and no others.
      const switchedOn = entries.filter(([name, on]) => on && !wasOn.has(name)).map(([name]) => `${addonId}__${name}`);
      return giveNewTools(tx, userId, switchedOn);
    });
  }
  // The gates first: a change stream comparing after the tools message then reads the new choices.
  if (given) await ctx.svc.changes.changed('gate', { userId });
  await ctx.svc.changes.changed('tools', { userId });
  return installView(ctx, addonId);
}
