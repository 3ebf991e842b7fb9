import { and, asc, eq, isNull, ne, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Services } from '../services';
import { addons, addonVersions, installs, tools, toolSwitches } from '../db/schema/index';
import type { CompiledTool, JsonSchema, ManifestAccount, StoredIcon } from '../addons/types';
import { toolDigest } from '../installs/releases';
import { BoundedMap } from '../caches';
import { cachedToolChoice, grantToolChoice, type ToolChoice } from '../oauth/verify';
import { toolSettings, type ToolSettings } from '../installs/settings';
import { toolsOffered } from '../installs/tool-lists';

/** A tool as an app sees it: switched on, of an installed add-on the person may use. */
export interface EnabledTool {
  /** `{addonId}__{toolName}` */
  mcpName: string;
  addonId: string;
  addonName: string;
  name: string;
  title: string;
  summary: string;
  destructive: boolean;
  readOnly: boolean;
  confirm: boolean;
  /** The add-on says every call asks the person: no rule of theirs lets it run unasked. */
  alwaysAsk: boolean;
  /** Runs one call at a time for the person with the add-on's other exclusive tools. */
  exclusive: boolean;
  /** The tool's own delivery timeout, when shorter than a call's 30 s. */
  timeoutSeconds: number | null;
  inputSchema: JsonSchema;
  /** What structuredContent must match (call-tool.ts checks it), when the tool declares it. */
  outputSchema?: JsonSchema | null;
  /** MCP's hints, as declared; null: not declared. */
  idempotent?: boolean | null;
  openWorld?: boolean | null;
  /** The tool's own icons, or else its add-on's: served by Toolport (`/icons/{hash}`). */
  icons?: StoredIcon[];
  webhookDisabled: boolean;
  /** The install's settings, sealed, and the required ones unset (installs/settings.ts); none for a developer's check. */
  settings?: ToolSettings;
  /** Absent for a tool that needs none: its calls do no account work. */
  accounts?: ToolAccount[];
}

/** One provider a tool needs: what the call path says of it and where it refreshes a token. */
export type ToolAccount = Pick<ManifestAccount, 'provider' | 'title' | 'tokenUrl'>;

/** The declared providers a tool names, in its order; a name the release does not declare is left out. */
function toolAccounts(named: unknown, declared: unknown): ToolAccount[] | undefined {
  if (!Array.isArray(named) || !named.length) return undefined;
  const byName = new Map((Array.isArray(declared) ? (declared as ManifestAccount[]) : []).map((a) => [a.provider, a]));
  const list = named.flatMap((n) => {
    const a = byName.get(n as string);
    return a ? [{ provider: a.provider, title: a.title, tokenUrl: a.tokenUrl }] : [];
  });
  return list.length ? list : undefined;
}

/** The add-on's current release, for the settings it declares. */
const currentRelease = alias(addonVersions, 'current_release');

export interface EnabledToolSet {
  list: EnabledTool[];
  byName: Map<string, EnabledTool>;
}

const TTL_MS = 30_000;
const MAX_USERS = 10_000;
/** Distinct choices kept per person's set (it lives 30 s at most): past it they are built again. */
const MAX_CHOICES_PER_SET = 64;

/** A choice covering the whole set is the set itself, so its listing is shared by every such app. */
const chosenSets = new WeakMap<EnabledToolSet, Map<string, EnabledToolSet>>();

function chosenOf(set: EnabledToolSet, choice: ToolChoice): EnabledToolSet {
  let byChoice = chosenSets.get(set);
  if (!byChoice) chosenSets.set(set, (byChoice = new Map()));
  let chosen = byChoice.get(choice.key);
  if (!chosen) {
    const list = set.list.filter((t) => choice.names.has(t.mcpName));
    chosen = list.length === set.list.length ? set : toolSet(list);
    if (byChoice.size >= MAX_CHOICES_PER_SET) byChoice.clear();
    byChoice.set(choice.key, chosen);
  }
  return chosen;
}

/** Read on every tools/list and tools/call; dropped on the bus so every process sees switches at once. */
export class EnabledToolsCache {
  private readonly entries = new BoundedMap<string, Promise<EnabledToolSet>>(MAX_USERS, TTL_MS, () => this.svc.clock.now().getTime());
  private unsubscribe: Array<() => Promise<void>> = [];

  constructor(private readonly svc: Services) {}

  async start() {
    this.unsubscribe.push(
      await this.svc.changes.follow('tools', (m) => this.forget(typeof m.userId === 'string' ? m.userId : undefined)),
      await this.svc.changes.follow('addon', () => this.forget()),
    );
    // A switch or an add-on change broadcast while the bus was down was missed: start over.
    const off = this.svc.bus.afterReconnect(() => this.entries.clear());
    this.unsubscribe.push(async () => off());
  }

  async stop() {
    for (const u of this.unsubscribe) await u();
    this.entries.clear();
  }

  /** Drops one person's cached tools, or everyone's. */
  forget(userId?: string) {
    if (userId === undefined) this.entries.clear();
    else this.entries.delete(userId);
  }

  /** A tool outside the grant answers like a tool that does not exist. */
  async forApp(app: { userId: string; grantId: string }): Promise<EnabledToolSet> {
    const set = await this.get(app.userId);
    return chosenOf(set, cachedToolChoice(this.svc, app.grantId) ?? (await grantToolChoice(this.svc, app.grantId)));
  }

  get(userId: string): Promise<EnabledToolSet> {
    const hit = this.entries.get(userId);
    if (hit) return hit;
    const value = loadEnabledTools(this.svc, userId);
    this.entries.set(userId, value);
    value.catch(() => this.entries.delete(userId));
    return value;
  }
}

/**
 * The person's switched-on tools read now, not from the cache: what a consent or an app's choice
 * may name. An add-on's narrowing for the person is not applied: it hides tools from apps for now,
 * it does not take them out of what the person gave.
 */
export async function switchedOnTools(svc: Services, userId: string): Promise<EnabledTool[]> {
  return (await loadEnabledTools(svc, userId, false)).list;
}

async function loadEnabledTools(svc: Services, userId: string, narrowed = true): Promise<EnabledToolSet> {
  const rows = await svc.db
    .select({
      tool: tools,
      addonName: addons.name,
      addonIcons: addons.icons,
      webhookDisabledAt: addons.webhookDisabledAt,
      // Only for a switch behind the current release: that release's tools, to serve the accepted one.
      accepted: addonVersions.tools,
      settingsEnc: installs.settingsEnc,
      declaredSettings: sql<unknown>`${currentRelease.manifest}->'settings'`,
      // The accounts the current release's tool names (never the accepted release's: see releases.ts REVIEWED), and the providers it declares.
      namedAccounts: sql<unknown>`(select e->'accounts' from jsonb_array_elements(case when jsonb_typeof(${currentRelease.tools}) = 'array' then ${currentRelease.tools} else '[]'::jsonb end) e where e->>'name' = ${tools.name} limit 1)`,
      declaredAccounts: sql<unknown>`${currentRelease.manifest}->'accounts'`,
      perPerson: sql<string | null>`${currentRelease.manifest}->>'toolsPerPerson'`,
      addonVersion: addons.version,
    })
    .from(toolSwitches)
    .innerJoin(installs, and(eq(installs.userId, toolSwitches.userId), eq(installs.addonId, toolSwitches.addonId)))
    .innerJoin(tools, and(eq(tools.addonId, toolSwitches.addonId), eq(tools.name, toolSwitches.toolName)))
    .innerJoin(addons, eq(addons.id, tools.addonId))
    .leftJoin(currentRelease, and(eq(currentRelease.addonId, addons.id), eq(currentRelease.version, addons.version)))
    .leftJoin(
      addonVersions,
      and(eq(addonVersions.addonId, toolSwitches.addonId), eq(addonVersions.version, toolSwitches.acceptedVersion), ne(toolSwitches.acceptedVersion, addons.version)),
    )
    .where(
      and(
        eq(toolSwitches.userId, userId),
        eq(toolSwitches.enabled, true),
        isNull(addons.deletedAt),
        or(and(eq(addons.visibility, 'public'), eq(addons.listing, 'approved')), eq(addons.ownerId, userId)),
      ),
    )
    .orderBy(asc(tools.addonId), asc(tools.position));
  const settingsOf = new Map<string, ToolSettings>();
  // An add-on that narrows its tools per person (installs/tool-lists.ts) offers this person these.
  const offered = new Map<string, Set<string>>();
  const asking: Array<Promise<void>> = [];
  for (const r of rows) {
    if (!narrowed || r.perPerson !== 'true' || offered.has(r.tool.addonId)) continue;
    offered.set(r.tool.addonId, new Set());
    const o = { userId, addonId: r.tool.addonId, version: r.addonVersion, settingsSealed: r.settingsEnc, webhookDisabled: r.webhookDisabledAt !== null };
    // Each add-on at once: one slow add-on costs its 3 s, not 3 s each.
    asking.push(toolsOffered(svc, o).then((names) => void offered.set(o.addonId, names)));
  }
  await Promise.all(asking);
  return toolSet(
    rows.flatMap(({ tool, addonName, addonIcons, webhookDisabledAt, accepted, settingsEnc, declaredSettings, namedAccounts, declaredAccounts }) => {
      if (offered.get(tool.addonId)?.has(tool.name) === false) return [];
      let settings = settingsOf.get(tool.addonId);
      if (!settings) settingsOf.set(tool.addonId, (settings = toolSettings(svc, settingsEnc, declaredSettings)));
      const accounts = toolAccounts(namedAccounts, declaredAccounts);
      const current: EnabledTool = { ...toEnabledTool(tool, addonName, webhookDisabledAt !== null, addonIcons), settings, ...(accounts ? { accounts } : {}) };
      const before = (accepted as CompiledTool[] | null)?.find((t) => t.name === tool.name);
      // Until the person reviews a release that changed this tool, apps see and calls use the
      // definition they accepted (its text, arguments and safety flags).
      if (!before || toolDigest(before) === toolDigest(tool as unknown as CompiledTool)) return current;
      return {
        ...current,
        title: before.title,
        summary: before.summary,
        destructive: before.destructive,
        readOnly: before.readOnly,
        confirm: before.confirm,
        // Asking more needs no review: a release that turns alwaysAsk on applies at once, one that turns it off after review.
        alwaysAsk: current.alwaysAsk || (before.alwaysAsk ?? false),
        timeoutSeconds: before.timeoutSeconds ?? null,
        inputSchema: before.inputSchema,
        outputSchema: before.outputSchema ?? null,
        idempotent: before.idempotent ?? null,
        openWorld: before.openWorld ?? null,
      };
    }),
  );
}

export function toEnabledTool(tool: typeof tools.$inferSelect, addonName: string, webhookDisabled: boolean, addonIcons: unknown = null): EnabledTool {
  return {
    mcpName: `${tool.addonId}__${tool.name}`,
    addonId: tool.addonId,
    addonName,
    name: tool.name,
    title: tool.title,
    summary: tool.summary,
    destructive: tool.destructive,
    readOnly: tool.readOnly,
    confirm: tool.confirm,
    alwaysAsk: tool.alwaysAsk,
    exclusive: tool.exclusive,
    timeoutSeconds: tool.timeoutSeconds,
    inputSchema: tool.inputSchema as JsonSchema,
    outputSchema: (tool.outputSchema as JsonSchema | null) ?? null,
    idempotent: tool.idempotent,
    openWorld: tool.openWorld,
    icons: ((tool.icons ?? addonIcons) as StoredIcon[] | null) ?? [],
    webhookDisabled,
  };
}

export function toolSet(list: EnabledTool[]): EnabledToolSet {
  return { list, byName: new Map(list.map((t) => [t.mcpName, t])) };
}
