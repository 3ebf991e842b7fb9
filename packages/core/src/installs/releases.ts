import { createHash } from 'node:crypto';
import { and, eq, gte, inArray, isNotNull, lt, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { conflict, notFound } from '../errors';
import { inputObject, parseInput } from '../input';
import type { CompiledTool } from '../addons/types';
import { addons, addonVersions, installs, toolSwitches } from '../db/schema/index';
import { executedRows } from '../db/client';

/** DESIGN.md gate 3: what an app sees of a tool changes only when the person accepts a release. */

/**
 * What a model reads or what decides how a call runs. Not icons, nor `accounts`: a token exists
 * only once the person connected that provider for this add-on, which is their consent.
 */
const REVIEWED = ['title', 'summary', 'inputSchema', 'outputSchema', 'destructive', 'readOnly', 'idempotent', 'openWorld', 'confirm', 'alwaysAsk'] as const;
type Reviewed = (typeof REVIEWED)[number];
/** Declared or not: a hint left out means MCP's default, not false. */
const UNSET_IS_NULL = new Set<Reviewed>(['outputSchema', 'idempotent', 'openWorld']);

/** Stable JSON: object keys sorted, so two equal schemas written in another key order compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

const reviewedOf = (t: CompiledTool) =>
  Object.fromEntries(REVIEWED.map((k) => [k, k === 'inputSchema' ? t.inputSchema : (t[k] ?? (UNSET_IS_NULL.has(k) ? null : false))]));

/** Digest of the reviewed fields of a tool. */
export const toolDigest = (t: CompiledTool) => createHash('sha256').update(canonical(reviewedOf(t))).digest('base64url');

/** What the dashboard lists of a tool. */
export interface ToolFace {
  title: string;
  summary: string;
  destructive: boolean;
  readOnly: boolean;
}
const faceOf = (t: CompiledTool): ToolFace => ({ title: t.title, summary: t.summary, destructive: t.destructive ?? false, readOnly: t.readOnly ?? false });

export interface ArgumentChange {
  name: string;
  change: 'added' | 'removed' | 'changed';
  /** The argument's schema (a property of the inputSchema; for `(schema)`, the whole inputSchema). */
  before?: unknown;
  after?: unknown;
  /** Whether a call must give it, before and after: apart from the schema, whose own `required` lists a nested object's fields. */
  requiredBefore?: boolean;
  requiredAfter?: boolean;
}

export interface ToolChange {
  name: string;
  change: 'changed' | 'removed' | 'added';
  /** Field by field, only the fields that differ (arguments are listed in `arguments`). */
  fields: Array<{ field: Exclude<Reviewed, 'inputSchema'>; before: unknown; after: unknown }>;
  arguments: ArgumentChange[];
  /** Why this change makes the tool less safe, one sentence each (destructive → not, confirm → none). */
  lessSafe: string[];
  before?: ToolFace;
  after?: ToolFace;
}

type Schema = { properties?: Record<string, unknown>; required?: string[] };

function argumentChanges(before: Schema, after: Schema): ArgumentChange[] {
  const b = before.properties ?? {};
  const a = after.properties ?? {};
  const req = (s: Schema, n: string) => (s.required ?? []).includes(n);
  const out: ArgumentChange[] = [];
  for (const name of Object.keys(a)) {
    if (!(name in b)) out.push({ name, change: 'added', after: a[name], requiredAfter: req(after, name) });
    else if (canonical(a[name]) !== canonical(b[name]) || req(after, name) !== req(before, name)) {
      out.push({ name, change: 'changed', before: b[name], after: a[name], requiredBefore: req(before, name), requiredAfter: req(after, name) });
    }
  }
  for (const name of Object.keys(b)) if (!(name in a)) out.push({ name, change: 'removed', before: b[name], requiredBefore: req(before, name) });
  // Anything else of the schema (additionalProperties, nesting rules) changed: said as one entry.
  const rest = (s: Record<string, unknown>) => canonical({ ...s, properties: undefined, required: undefined });
  if (!out.length && rest(before as Record<string, unknown>) !== rest(after as Record<string, unknown>)) {
    out.push({ name: '(schema)', change: 'changed', before, after });
  }
  return out;
}

/** The field-by-field difference of one tool between the accepted release and a later one. */
function diffTool(before: CompiledTool, after: CompiledTool): ToolChange {
  const fields: ToolChange['fields'] = [];
  for (const f of ['title', 'summary', 'destructive', 'readOnly', 'confirm', 'alwaysAsk'] as const) {
    if ((before[f] ?? false) !== (after[f] ?? false)) fields.push({ field: f, before: before[f] ?? false, after: after[f] ?? false });
  }
  for (const f of ['idempotent', 'openWorld', 'outputSchema'] as const) {
    if (canonical(before[f] ?? null) !== canonical(after[f] ?? null)) fields.push({ field: f, before: before[f] ?? null, after: after[f] ?? null });
  }
  const lessSafe: string[] = [];
  if (before.destructive && !after.destructive) lessSafe.push('It would no longer ask you before it runs (it is no longer marked destructive).');
  if (before.confirm && !after.confirm) lessSafe.push('The add-on would no longer describe each call before you decide.');
  if (before.readOnly && !after.readOnly) lessSafe.push('It would no longer be read-only.');
  if (before.alwaysAsk && !after.alwaysAsk) lessSafe.push('The add-on would no longer require your approval of every call, so your rules could let it run without asking.');
  if (before.openWorld === false && after.openWorld !== false) lessSafe.push('It would reach beyond its own data (it is no longer marked closed-world).');
  return {
    name: after.name,
    change: 'changed',
    fields,
    arguments: argumentChanges(before.inputSchema as Schema, after.inputSchema as Schema),
    lessSafe: [...new Set(lessSafe)],
    before: faceOf(before),
    after: faceOf(after),
  };
}

export interface PendingUpdate {
  /** The release the person's switched-on tools are at (the oldest of them). */
  from: number;
  to: number;
  notes: string | null;
  publishedAt: string;
  tools: ToolChange[];
}

type Release = { version: number; tools: CompiledTool[] | null; notes: string | null; createdAt: Date };

async function releasesOf(ctx: Ctx, wanted: Array<{ addonId: string; version: number }>): Promise<Map<string, Release>> {
  const out = new Map<string, Release>();
  const byAddon = new Map<string, Set<number>>();
  for (const w of wanted) byAddon.set(w.addonId, (byAddon.get(w.addonId) ?? new Set()).add(w.version));
  for (const [addonId, versions] of byAddon) {
    const rows = await ctx.svc.db
      .select({ version: addonVersions.version, tools: addonVersions.tools, notes: addonVersions.notes, createdAt: addonVersions.createdAt })
      .from(addonVersions)
      .where(and(eq(addonVersions.addonId, addonId), inArray(addonVersions.version, [...versions])));
    for (const r of rows) out.set(`${addonId}@${r.version}`, { ...r, tools: r.tools as CompiledTool[] | null });
  }
  return out;
}

/** Per add-on: switched-on (or removed) tools whose accepted definition differs, and added tools. */
export async function pendingUpdates(ctx: Ctx, current: Map<string, { version: number; tools: CompiledTool[] }>): Promise<Map<string, PendingUpdate>> {
  const userId = personId(ctx);
  const ids = [...current.keys()];
  const result = new Map<string, PendingUpdate>();
  if (!ids.length) return result;
  const stale = await ctx.svc.db
    .select({ addonId: toolSwitches.addonId, toolName: toolSwitches.toolName, enabled: toolSwitches.enabled, accepted: toolSwitches.acceptedVersion })
    .from(toolSwitches)
    .innerJoin(addons, eq(addons.id, toolSwitches.addonId))
    .where(
      and(
        eq(toolSwitches.userId, userId),
        inArray(toolSwitches.addonId, ids),
        isNotNull(toolSwitches.acceptedVersion),
        lt(toolSwitches.acceptedVersion, addons.version),
      ),
    );
  if (!stale.length) return result;
  const releases = await releasesOf(ctx, stale.map((s) => ({ addonId: s.addonId, version: s.accepted! })));
  const latest = await releasesOf(ctx, ids.map((id) => ({ addonId: id, version: current.get(id)!.version })));
  for (const [addonId, now] of current) {
    const mine = stale.filter((s) => s.addonId === addonId);
    if (!mine.length) continue;
    const changes: ToolChange[] = [];
    let from = Infinity;
    let base: CompiledTool[] = [];
    for (const s of mine) {
      const accepted = releases.get(`${addonId}@${s.accepted}`)?.tools?.find((t) => t.name === s.toolName);
      const after = now.tools.find((t) => t.name === s.toolName);
      if (!accepted) continue;
      if (!after) {
        from = Math.min(from, s.accepted!);
        changes.push({ name: s.toolName, change: 'removed', fields: [], arguments: [], lessSafe: [], before: faceOf(accepted) });
      } else if (s.enabled && toolDigest(accepted) !== toolDigest(after)) {
        from = Math.min(from, s.accepted!);
        base = releases.get(`${addonId}@${s.accepted}`)?.tools ?? base;
        changes.push(diffTool(accepted, after));
      }
    }
    if (!changes.length) continue;
    for (const t of now.tools) {
      if (!base.some((b) => b.name === t.name) && !mine.some((s) => s.toolName === t.name)) {
        changes.push({ name: t.name, change: 'added', fields: [], arguments: [], lessSafe: [], after: faceOf(t) });
      }
    }
    const release = latest.get(`${addonId}@${now.version}`);
    result.set(addonId, { from, to: now.version, notes: release?.notes ?? null, publishedAt: (release?.createdAt ?? ctx.svc.clock.now()).toISOString(), tools: changes });
  }
  return result;
}

const RELEASE = 'Give the release number shown with the update.';
const acceptInput = inputObject({ version: z.number({ message: RELEASE }).int(RELEASE).safe(RELEASE) });
/** `POST /api/installs/{addon}/accept`. */
export type AcceptUpdateInput = z.input<typeof acceptInput>;

/** `version` must be the release reviewed: a newer one that arrived meanwhile is refused. */
export async function acceptUpdate({ ctx, addonId, input }: { ctx: Ctx; addonId: string; input: unknown }) {
  const userId = personId(ctx);
  const { version } = parseInput(acceptInput, input, 'Say which release you accept.');
  const [row] = await ctx.svc.db
    .select({ version: addons.version })
    .from(installs)
    .innerJoin(addons, eq(addons.id, installs.addonId))
    .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId), sql`${addons.deletedAt} is null`));
  if (!row) throw notFound('That install');
  if (row.version !== version) {
    throw conflict(`A newer release (${row.version}) arrived after the one you reviewed (${String(version)}). Review it, then accept.`, { current: row.version });
  }
  await acceptRelease(ctx, addonId, row.version);
  return { addon: addonId, accepted: row.version };
}

/**
 * The person's switched-on tools take `version`'s definitions (their apps are told the list changed);
 * switched-off ones forget theirs. The dashboard's Accept, and a developer's own install following
 * their `toolport dev` (installs/own-install.ts).
 */
export async function acceptRelease(ctx: Ctx, addonId: string, version: number) {
  const userId = personId(ctx);
  await ctx.svc.db
    .update(toolSwitches)
    .set({ acceptedVersion: sql`case when ${toolSwitches.enabled} then ${version}::int else null end` })
    .where(and(eq(toolSwitches.userId, userId), eq(toolSwitches.addonId, addonId), isNotNull(toolSwitches.acceptedVersion)));
  ctx.svc.audit.record(userId, 'release.accepted', { addon: addonId, version });
  await ctx.svc.changes.changed('tools', { userId });
}

/** Per release of an add-on, how many installs have accepted it (or a later one). */
export async function acceptedCounts(ctx: Ctx, addonId: string): Promise<Map<number, number>> {
  // An install is at the oldest release any of its switched-on tools accepted; with none on, at the current one.
  const rows = await ctx.svc.db.execute(sql`
    select coalesce(min(case when ${toolSwitches.enabled} then ${toolSwitches.acceptedVersion} end), ${addons.version}) as at
    from ${installs}
    join ${addons} on ${addons.id} = ${installs.addonId}
    left join ${toolSwitches} on ${toolSwitches.userId} = ${installs.userId} and ${toolSwitches.addonId} = ${installs.addonId}
    where ${installs.addonId} = ${addonId}
    group by ${installs.userId}, ${addons.version}`);
  const list = executedRows<{ at: number }>(rows).map((r) => Number(r.at));
  const counts = new Map<number, number>();
  const versions = await ctx.svc.db
    .select({ version: addonVersions.version })
    .from(addonVersions)
    .where(and(eq(addonVersions.addonId, addonId), gte(addonVersions.version, 1)));
  for (const { version } of versions) counts.set(version, list.filter((at) => at >= version).length);
  return counts;
}
