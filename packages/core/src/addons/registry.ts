import { and, asc, desc, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { conflict, notFound, validation, type FieldError } from '../errors';
import { newId } from '../ids';
import { dropToolRules } from '../approvals/rules';
import { announceChoicesForgotten, forgetRemovedTools } from '../oauth/tool-choices';
import type { Json } from '../json';
import type { Services } from '../services';
import { addons, addonSecrets, addonVersions, devSessions, installs, tools, toolSwitches } from '../db/schema/index';
import { newSigningSecret } from '../outbound/signing';
import { pingWebhook } from '../outbound/webhook';
import { checkManifest } from './manifest';
import { liveSecrets } from './signing-secrets';
import { acceptedCounts } from '../installs/releases';
import { listingAfterPush } from './listings';
import { followIfDeveloping } from './dev-sessions';
import { iconUrl, resolveIcons, storeIcons, type ResolvedIcons } from './icons';
import type { CompiledTool, ManifestCheck, StoredIcon } from './types';

/** How long a rotated-out signing secret keeps signing alongside the new one. */
const SECRET_OVERLAP_MS = 24 * 3600 * 1000;
const PING_TIMEOUT_MS = 10_000;

async function ping(svc: Services, url: string, secrets: string[]) {
  await pingWebhook({ client: svc.outbound, url, secrets, deadline: svc.clock.now().getTime() + PING_TIMEOUT_MS, clock: svc.clock });
}

function toolRows(addonId: string, compiled: CompiledTool[]) {
  return compiled.map((t, position) => ({
    addonId,
    name: t.name,
    title: t.title,
    summary: t.summary,
    destructive: t.destructive,
    readOnly: t.readOnly,
    confirm: t.confirm,
    alwaysAsk: t.alwaysAsk ?? false,
    exclusive: t.exclusive ?? false,
    timeoutSeconds: t.timeoutSeconds ?? null,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema ?? null,
    idempotent: t.idempotent ?? null,
    openWorld: t.openWorld ?? null,
    icons: t.icons ?? null,
    position,
  }));
}

/** The compiled tools with the icons the push fetched: a release keeps them with its tools. */
const withIcons = (compiled: CompiledTool[], icons: ResolvedIcons): CompiledTool[] =>
  compiled.map((t) => (icons.tools.has(t.name) ? { ...t, icons: icons.tools.get(t.name)! } : t));

/** Registers an add-on: checks the manifest, verifies the webhook with a signed ping, stores version 1. */
export async function createAddon({ ctx, input }: { ctx: Ctx; input: unknown }) {
  const ownerId = personId(ctx);
  const check: ManifestCheck = checkManifest(input);
  const { manifest, warnings } = check;
  const [taken] = await ctx.svc.db.select({ id: addons.id }).from(addons).where(eq(addons.id, manifest.id));
  if (taken) throw conflict(`The add-on id "${manifest.id}" is taken; ids are never reused. Choose another.`);
  const icons = await resolveIcons(ctx.svc, check.icons);
  const compiled = withIcons(check.tools, icons);

  const signingSecret = newSigningSecret();
  await ping(ctx.svc, manifest.webhook, [signingSecret]);

  const inserted = await ctx.svc.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(addons)
      .values({
        id: manifest.id,
        ownerId,
        name: manifest.name,
        description: manifest.description,
        visibility: manifest.visibility ?? 'private',
        webhookUrl: manifest.webhook,
        version: 1,
        listing: listingAfterPush(manifest.visibility ?? 'private', null),
        listingChangedAt: ctx.svc.clock.now(),
        icons: icons.addon.length ? icons.addon : null,
      })
      .onConflictDoNothing()
      .returning({ id: addons.id });
    if (!row) return false;
    await storeIcons(tx, icons.images);
    await tx.insert(addonVersions).values({ addonId: manifest.id, version: 1, manifest, warnings, tools: compiled, notes: manifest.releaseNotes ?? null });
    if (compiled.length) await tx.insert(tools).values(toolRows(manifest.id, compiled));
    await tx.insert(addonSecrets).values({ id: newId('sec'), addonId: manifest.id, secretEnc: ctx.svc.secrets.webhookBox.seal(signingSecret) });
    return true;
  });
  if (!inserted) throw conflict(`The add-on id "${manifest.id}" is taken; ids are never reused. Choose another.`);
  return { id: manifest.id, version: 1, signingSecret, warnings };
}

async function ownedAddon(ctx: Ctx, id: string) {
  const [row] = await ctx.svc.db
    .select()
    .from(addons)
    .where(and(eq(addons.id, id), eq(addons.ownerId, personId(ctx)), isNull(addons.deletedAt)));
  if (!row) throw notFound('That add-on');
  return row;
}

/** A new version of an add-on. Installs keep their switches for the tools that remain. */
export async function updateAddon({ ctx, id, input }: { ctx: Ctx; id: string; input: unknown }) {
  const current = await ownedAddon(ctx, id);
  const check = checkManifest(input);
  const { manifest, warnings } = check;
  if (manifest.id !== id) {
    throw validation('The manifest is for another add-on.', [{ path: '/id', message: `The id must stay "${id}".` }]);
  }
  const icons = await resolveIcons(ctx.svc, check.icons);
  const compiled = withIcons(check.tools, icons);
  if (manifest.webhook !== current.webhookUrl || current.webhookDisabledAt) {
    await ping(ctx.svc, manifest.webhook, await liveSecrets(ctx.svc, id));
  }
  let rulesDropped = false;
  let choicesChanged: Array<{ id: string; userId: string }> = [];
  const version = await ctx.svc.db.transaction(async (tx) => {
    const [row] = await tx
      .update(addons)
      .set({
        name: manifest.name,
        description: manifest.description,
        visibility: manifest.visibility ?? 'private',
        webhookUrl: manifest.webhook,
        webhookDisabledAt: null,
        icons: icons.addon.length ? icons.addon : null,
        ...(listingAfterPush(manifest.visibility ?? 'private', current.listing) !== current.listing
          ? { listing: listingAfterPush(manifest.visibility ?? 'private', current.listing), listingReason: null, listingChangedAt: ctx.svc.clock.now() }
          : {}),
        version: sql`${addons.version} + 1`,
        updatedAt: ctx.svc.clock.now(),
      })
      .where(and(eq(addons.id, id), isNull(addons.deletedAt)))
      .returning({ version: addons.version });
    if (!row) throw notFound('That add-on');
    await storeIcons(tx, icons.images);
    await tx.insert(addonVersions).values({ addonId: id, version: row.version, manifest, warnings, tools: compiled, notes: manifest.releaseNotes ?? null });
    const before = await tx.delete(tools).where(eq(tools.addonId, id)).returning({ name: tools.name });
    if (compiled.length) await tx.insert(tools).values(toolRows(id, compiled));
    const kept = new Set(compiled.map((t) => t.name));
    const removed = before.map((t) => t.name).filter((name) => !kept.has(name));
    // A removed tool leaves every app's choice and every rule: brought back, it starts afresh.
    choicesChanged = await forgetRemovedTools(tx, removed.map((name) => `${id}__${name}`));
    rulesDropped = await dropToolRules(tx, id, removed);
    // A tool this release removed is off: if a later release brings it back, it starts off like any
    // new tool. The switch keeps the release it was accepted at, so the person's review lists it.
    await tx
      .update(toolSwitches)
      .set({ enabled: false })
      .where(and(eq(toolSwitches.addonId, id), compiled.length ? notInArray(toolSwitches.toolName, compiled.map((t) => t.name)) : undefined));
    return row.version;
  });
  await ctx.svc.changes.changed('addon', { addonId: id });
  await announceChoicesForgotten(ctx.svc, choicesChanged);
  if (rulesDropped) await ctx.svc.changes.changed('rules', {});
  // While `toolport dev` runs, the developer's own install follows (null: it stays where they accepted).
  return { id, version, warnings, ownInstall: await followIfDeveloping(ctx, id) };
}

/** Icons as the developer API shows them: at Toolport's own URL. */
const iconsView = (publicUrl: string, list: unknown) =>
  ((list as StoredIcon[] | null) ?? []).map((i) => ({ src: iconUrl(publicUrl, i), mimeType: i.mimeType, sizes: i.sizes, ...(i.theme ? { theme: i.theme } : {}) }));

function describe(publicUrl: string, row: typeof addons.$inferSelect, toolList: Array<typeof tools.$inferSelect>, warnings: FieldError[]) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    visibility: row.visibility,
    /** The public listing's review: pending, approved, rejected (with the operator's reason) or delisted. */
    listing: row.listing ? { status: row.listing, reason: row.listingReason, changedAt: row.listingChangedAt } : null,
    webhook: row.webhookUrl,
    webhookDisabled: row.webhookDisabledAt !== null,
    version: row.version,
    warnings,
    icons: iconsView(publicUrl, row.icons),
    tools: toolList.map((t) => ({
      name: t.name,
      title: t.title,
      summary: t.summary,
      destructive: t.destructive,
      readOnly: t.readOnly,
      ...(t.idempotent !== null ? { idempotent: t.idempotent } : {}),
      ...(t.openWorld !== null ? { openWorld: t.openWorld } : {}),
      confirm: t.confirm,
      ...(t.alwaysAsk ? { alwaysAsk: true } : {}),
      ...(t.exclusive ? { exclusive: true } : {}),
      inputSchema: t.inputSchema,
      ...(t.outputSchema !== null ? { outputSchema: t.outputSchema } : {}),
      icons: iconsView(publicUrl, t.icons),
    })),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** Each add-on with its current tools and that version's warnings: three queries, however many add-ons. */
async function describeAll(svc: Services, rows: Array<typeof addons.$inferSelect>) {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  const toolRowsOf = await svc.db.select().from(tools).where(inArray(tools.addonId, ids)).orderBy(asc(tools.position));
  const versions = await svc.db
    .select({ addonId: addonVersions.addonId, warnings: addonVersions.warnings })
    .from(addonVersions)
    .innerJoin(addons, and(eq(addons.id, addonVersions.addonId), eq(addons.version, addonVersions.version)))
    .where(inArray(addonVersions.addonId, ids));
  return rows.map((row) =>
    describe(
      svc.config.publicUrl,
      row,
      toolRowsOf.filter((t) => t.addonId === row.id),
      versions.find((v) => v.addonId === row.id)?.warnings ?? [],
    ),
  );
}

/** `GET /api/addons` (each) and `GET /api/addons/{id}`: an add-on as its developer sees it. */
export type AddonView = Json<Awaited<ReturnType<typeof getAddon>>>;
/** `POST /api/addons`: the signing secret, shown this once. */
export type CreatedAddon = Awaited<ReturnType<typeof createAddon>>;
/** `PUT /api/addons/{id}`. */
export type UpdatedAddon = Awaited<ReturnType<typeof updateAddon>>;
/** `GET /api/addons/{id}/versions` (each). */
export type AddonVersionView = Json<Awaited<ReturnType<typeof listAddonVersions>>[number]>;
/** `POST /api/addons/{id}/secret`: the new signing secret, shown this once. */
export type NewSigningSecret = Awaited<ReturnType<typeof rotateAddonSecret>>;

export async function getAddon({ ctx, id }: { ctx: Ctx; id: string }) {
  const [described] = await describeAll(ctx.svc, [await ownedAddon(ctx, id)]);
  return described!;
}

export async function listAddons({ ctx }: { ctx: Ctx }) {
  const rows = await ctx.svc.db
    .select()
    .from(addons)
    .where(and(eq(addons.ownerId, personId(ctx)), isNull(addons.deletedAt)))
    .orderBy(asc(addons.id));
  return describeAll(ctx.svc, rows);
}

/** The add-on's releases, newest first, each with its notes and how many installs accepted it. */
export async function listAddonVersions({ ctx, id }: { ctx: Ctx; id: string }) {
  await ownedAddon(ctx, id);
  const [rows, accepted] = [
    await ctx.svc.db
      .select({ version: addonVersions.version, warnings: addonVersions.warnings, notes: addonVersions.notes, createdAt: addonVersions.createdAt })
      .from(addonVersions)
      .where(eq(addonVersions.addonId, id))
      .orderBy(desc(addonVersions.version)),
    await acceptedCounts(ctx, id),
  ];
  return rows.map((r) => ({ ...r, acceptedBy: accepted.get(r.version) ?? 0 }));
}

/** Removes an add-on for everyone; its id stays reserved forever. */
export async function deleteAddon({ ctx, id }: { ctx: Ctx; id: string }) {
  await ownedAddon(ctx, id);
  await ctx.svc.db.transaction(async (tx) => {
    await tx.update(addons).set({ deletedAt: ctx.svc.clock.now() }).where(eq(addons.id, id));
    await tx.delete(installs).where(eq(installs.addonId, id));
    await tx.delete(toolSwitches).where(eq(toolSwitches.addonId, id));
    await tx.delete(addonSecrets).where(eq(addonSecrets.addonId, id));
    await tx.delete(devSessions).where(eq(devSessions.addonId, id));
  });
  await ctx.svc.changes.changed('addon', { addonId: id });
}

/** A new signing secret, shown once; the previous ones keep signing for 24 h. */
export async function rotateAddonSecret({ ctx, id }: { ctx: Ctx; id: string }) {
  await ownedAddon(ctx, id);
  const signingSecret = newSigningSecret();
  const now = ctx.svc.clock.now();
  await ctx.svc.db.transaction(async (tx) => {
    await tx
      .update(addonSecrets)
      .set({ expiresAt: new Date(now.getTime() + SECRET_OVERLAP_MS) })
      .where(and(eq(addonSecrets.addonId, id), isNull(addonSecrets.expiresAt)));
    await tx.insert(addonSecrets).values({ id: newId('sec'), addonId: id, secretEnc: ctx.svc.secrets.webhookBox.seal(signingSecret) });
  });
  await ctx.svc.changes.changed('addon', { addonId: id });
  return { signingSecret };
}
