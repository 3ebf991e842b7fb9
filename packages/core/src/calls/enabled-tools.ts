import { and, asc, eq, isNull, ne, or } from 'drizzle-orm';
import type { Services } from '../services';
import { addons, addonVersions, installs, tools, toolSwitches } from '../db/schema/index';
import type { CompiledTool, JsonSchema, StoredIcon } from '../addons/types';
import { toolDigest } from '../installs/releases';
import { ADDONS_CHANNEL, TOOLS_CHANNEL } from '../events/channels';
import { BoundedMap } from '../caches';

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
}

export interface EnabledToolSet {
  list: EnabledTool[];
  byName: Map<string, EnabledTool>;
}

const TTL_MS = 30_000;
const MAX_USERS = 10_000;

/**
 * Every tools/list and tools/call reads the person's enabled tools: cached per person, dropped on
 * the bus ('tools' for one person, 'addons' for everyone) so every process sees switches at once.
 */
export class EnabledToolsCache {
  private readonly entries = new BoundedMap<string, Promise<EnabledToolSet>>(MAX_USERS, TTL_MS);
  private unsubscribe: Array<() => Promise<void>> = [];

  constructor(private readonly svc: Services) {}

  async start() {
    this.unsubscribe.push(
      await this.svc.bus.subscribe(TOOLS_CHANNEL, (m) => this.entries.delete((m as { userId: string }).userId)),
      await this.svc.bus.subscribe(ADDONS_CHANNEL, () => this.entries.clear()),
    );
    // A switch or an add-on change broadcast while the bus was down was missed: start over.
    const off = this.svc.bus.afterReconnect(() => this.entries.clear());
    this.unsubscribe.push(async () => off());
  }

  async stop() {
    for (const u of this.unsubscribe) await u();
    this.entries.clear();
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

async function loadEnabledTools(svc: Services, userId: string): Promise<EnabledToolSet> {
  const rows = await svc.db
    .select({
      tool: tools,
      addonName: addons.name,
      addonIcons: addons.icons,
      webhookDisabledAt: addons.webhookDisabledAt,
      // Only for a switch behind the current release: that release's tools, to serve the accepted one.
      accepted: addonVersions.tools,
    })
    .from(toolSwitches)
    .innerJoin(installs, and(eq(installs.userId, toolSwitches.userId), eq(installs.addonId, toolSwitches.addonId)))
    .innerJoin(tools, and(eq(tools.addonId, toolSwitches.addonId), eq(tools.name, toolSwitches.toolName)))
    .innerJoin(addons, eq(addons.id, tools.addonId))
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
  return toolSet(
    rows.map(({ tool, addonName, addonIcons, webhookDisabledAt, accepted }) => {
      const current = toEnabledTool(tool, addonName, webhookDisabledAt !== null, addonIcons);
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
        timeoutSeconds: before.timeoutSeconds ?? null,
        inputSchema: before.inputSchema,
        outputSchema: before.outputSchema ?? null,
        idempotent: before.idempotent ?? null,
        openWorld: before.openWorld ?? null,
      };
    }),
  );
}

/** A stored tool row as the call path sees it. */
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
