import { and, asc, eq, gt, inArray, isNull, lte, or } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { addons, approvalRules, installs, oauthClients, oauthGrants, tools } from '../db/schema/index';
import { conflict, notFound, ToolportError, validation, type FieldError } from '../errors';
import { cacheKind, type BoundedMap, type CacheScope } from '../caches';
import { newId } from '../ids';
import { inputObject, parseInput } from '../input';
import type { Services } from '../services';

/** docs/approvals.md "Rules you set": an app's rule wins over the tool's rule for every app. */
const RULE_MODES = ['ask_every_time', 'ask', 'allow', 'never'] as const;
export type RuleMode = (typeof RULE_MODES)[number];
/** A time-limited allow lasts 1 hour to 30 days. */
const RULE_HOURS_MAX = 720;

export interface Rule {
  id: string;
  mode: RuleMode;
  /** Epoch ms; null: until the person removes it. */
  expiresAt: number | null;
  /** When the person set it: the receipt's `decidedAt`. */
  setAt: Date;
  /** The rule names one app (not every app of the person). */
  forApp: boolean;
  /** An allow set through the destructive warning; without it an allow does not apply to a destructive tool. */
  acknowledged: boolean;
}

interface ToolRules {
  all?: Rule;
  byApp?: Map<string, Rule>;
}
/** A person's rules by `{addonId}__{toolName}`. */
type PersonRules = Map<string, ToolRules>;
const NONE: PersonRules = new Map();

const TTL_MS = 30_000;
const MAX_PEOPLE = 10_000;

/**
 * Read on every tools/call, so cached per person (one shared empty map for most). TTL_MS bounds a
 * missed bus message; an allow's expiry is checked per call.
 */
class RuleCache {
  readonly entries: BoundedMap<string, PersonRules | Promise<PersonRules>>;
  /** Bumped on every drop, so a load that raced one does not store what it read before. */
  epoch = 0;
  readonly subscribed: Promise<void>;

  constructor(scope: CacheScope) {
    this.entries = scope.map(MAX_PEOPLE, TTL_MS);
    this.subscribed = scope.follow('rules', (m) => this.drop(typeof m.userId === 'string' ? m.userId : undefined));
    scope.afterReconnect(() => this.drop());
    this.subscribed.catch(() => {});
  }

  drop(userId?: string) {
    this.epoch++;
    if (userId) this.entries.delete(userId);
    else this.entries.clear();
  }
}

const RULES = cacheKind('approval rules', (_svc, scope) => new RuleCache(scope), ['rules']);

async function loadRules(svc: Services, cache: RuleCache, userId: string): Promise<PersonRules> {
  await cache.subscribed;
  const epoch = cache.epoch;
  const rows = await svc.db
    .select({
      id: approvalRules.id,
      addonId: approvalRules.addonId,
      toolName: approvalRules.toolName,
      grantId: approvalRules.grantId,
      mode: approvalRules.mode,
      expiresAt: approvalRules.expiresAt,
      createdAt: approvalRules.createdAt,
      acknowledged: approvalRules.acknowledgedDestructive,
    })
    .from(approvalRules)
    .where(and(eq(approvalRules.userId, userId), or(isNull(approvalRules.expiresAt), gt(approvalRules.expiresAt, svc.clock.now()))));
  let rules = NONE;
  if (rows.length) {
    rules = new Map();
    for (const r of rows) {
      const key = `${r.addonId}__${r.toolName}`;
      const entry = rules.get(key) ?? {};
      const rule: Rule = { id: r.id, mode: r.mode, expiresAt: r.expiresAt?.getTime() ?? null, setAt: r.createdAt, forApp: r.grantId !== null, acknowledged: r.acknowledged };
      if (r.grantId === null) entry.all = rule;
      else (entry.byApp ??= new Map()).set(r.grantId, rule);
      rules.set(key, entry);
    }
  }
  if (cache.epoch === epoch) cache.entries.set(userId, rules);
  else cache.entries.delete(userId);
  return rules;
}

/** The person's rules: at once when cached (the call path does not wait a turn for a hit). */
export function rulesOf(svc: Services, userId: string): PersonRules | Promise<PersonRules> {
  const cache = svc.caches.get(RULES);
  const hit = cache.entries.get(userId);
  if (hit) return hit;
  const loading = loadRules(svc, cache, userId);
  cache.entries.set(userId, loading);
  loading.catch(() => cache.entries.delete(userId));
  return loading;
}

/** The rule that decides this app's call of this tool now, if any: the app's own, else the tool's for every app. */
export function ruleFor(rules: PersonRules, grantId: string | undefined, mcpName: string, now: () => Date): Rule | undefined {
  if (rules.size === 0) return undefined;
  const entry = rules.get(mcpName);
  if (!entry) return undefined;
  const at = now().getTime();
  const live = (r: Rule | undefined) => (r && (r.expiresAt === null || r.expiresAt > at) ? r : undefined);
  return live(grantId ? entry.byApp?.get(grantId) : undefined) ?? live(entry.all);
}

const changed = (svc: Services, userId: string) => svc.changes.changed('rules', { userId });

export interface RuleView {
  id: string;
  addon: string;
  addonName: string | null;
  tool: string;
  toolTitle: string | null;
  /** The app the rule is for; null: every app. */
  app: { id: string; name: string } | null;
  mode: RuleMode;
  expiresAt: string | null;
  createdAt: string;
  /** The tool became destructive since: it asks again until set through the warning. */
  needsAcknowledge: boolean;
}

/** Whether an allow set without the warning has stopped applying because the tool became destructive. */
const needsAcknowledge = (rule: { mode: RuleMode; acknowledgedDestructive: boolean }, destructive: boolean | undefined) =>
  rule.mode === 'allow' && !rule.acknowledgedDestructive && !!destructive;

/** Expired allows are removed here (they already stopped applying); revoked apps' rules are hidden. */
export async function listRules({ ctx }: { ctx: Ctx }): Promise<RuleView[]> {
  const userId = personId(ctx);
  const now = ctx.svc.clock.now();
  const swept = await ctx.svc.db
    .delete(approvalRules)
    .where(and(eq(approvalRules.userId, userId), lte(approvalRules.expiresAt, now)))
    .returning({ id: approvalRules.id });
  if (swept.length) await changed(ctx.svc, userId);
  const rows = await ctx.svc.db
    .select({ rule: approvalRules, appName: oauthClients.name, revokedAt: oauthGrants.revokedAt, addonName: addons.name, toolTitle: tools.title })
    .from(approvalRules)
    .leftJoin(oauthGrants, eq(oauthGrants.id, approvalRules.grantId))
    .leftJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .leftJoin(addons, eq(addons.id, approvalRules.addonId))
    .leftJoin(tools, and(eq(tools.addonId, approvalRules.addonId), eq(tools.name, approvalRules.toolName)))
    .where(eq(approvalRules.userId, userId))
    .orderBy(asc(approvalRules.addonId), asc(approvalRules.toolName), asc(approvalRules.createdAt));
  // What the person's apps are served may still be an accepted older release: its flags decide.
  const served = rows.some((r) => r.rule.mode === 'allow' && !r.rule.acknowledgedDestructive) ? (await ctx.svc.tools.get(userId)).byName : undefined;
  return rows
    .filter((r) => r.rule.grantId === null || (r.appName !== null && r.revokedAt === null))
    .map(({ rule, appName, addonName, toolTitle }) => ({
      id: rule.id,
      addon: rule.addonId,
      addonName,
      tool: rule.toolName,
      toolTitle,
      app: rule.grantId ? { id: rule.grantId, name: appName ?? '' } : null,
      mode: rule.mode,
      expiresAt: rule.expiresAt?.toISOString() ?? null,
      createdAt: rule.createdAt.toISOString(),
      needsAcknowledge: needsAcknowledge(rule, served?.get(`${rule.addonId}__${rule.toolName}`)?.destructive),
    }));
}

const NAME_MAX = 100;
const named = (what: string) =>
  z.string({ message: `Give the ${what}.` }).min(1, `Give the ${what}.`).max(NAME_MAX, `The ${what} is at most ${NAME_MAX} characters.`);
const HOURS = `Give "hours" as a whole number from 1 to ${RULE_HOURS_MAX}.`;

const ruleInput = inputObject({
  addon: named('add-on id'),
  tool: named('tool name'),
  /** A connection id (`grt_...`, from GET /api/connections); absent or null: every app. */
  app: named('app (a connection id)').nullable().optional(),
  mode: z.enum(RULE_MODES, { message: 'The mode is "ask_every_time", "ask", "allow" or "never".' }),
  hours: z.number({ message: HOURS }).int(HOURS).min(1, HOURS).max(RULE_HOURS_MAX, HOURS).nullable().optional(),
  acknowledge: z.literal('destructive', { errorMap: () => ({ message: 'The only acknowledgement is "destructive".' }) }).optional(),
}).strict('Only "addon", "tool", "app", "mode", "hours" and "acknowledge" can be given.');
/** `PUT /api/rules`. */
export type RuleInput = z.input<typeof ruleInput>;

/** The rule's input, or VALIDATION whose sentence is every problem found (the person reads it as it is). */
function parseRule(input: unknown) {
  try {
    return parseInput(ruleInput, input, 'The rule is not valid.');
  } catch (err) {
    const errors = err instanceof ToolportError ? (err.details.errors as FieldError[] | undefined) : undefined;
    if (!errors?.length) throw err;
    throw validation([...new Set(errors.map((e) => e.message))].join(' '), errors);
  }
}

const refused = (path: string, message: string) => validation(message, [{ path, message }]);

/**
 * An allow must name an app, and is refused for an alwaysAsk tool and for a destructive tool
 * without `"acknowledge": "destructive"`.
 */
export async function setRule({ ctx, input }: { ctx: Ctx; input: unknown }): Promise<RuleView> {
  const userId = personId(ctx);
  const wanted = parseRule(input);
  const { svc } = ctx;
  const [tool] = await svc.db
    .select({ title: tools.title, destructive: tools.destructive, alwaysAsk: tools.alwaysAsk, addonName: addons.name })
    .from(tools)
    .innerJoin(installs, and(eq(installs.addonId, tools.addonId), eq(installs.userId, userId)))
    .innerJoin(addons, eq(addons.id, tools.addonId))
    .where(and(eq(tools.addonId, wanted.addon), eq(tools.name, wanted.tool), isNull(addons.deletedAt)));
  if (!tool) {
    throw refused('/tool', `None of your installed add-ons has that tool ("addon" and "tool" name it): install the add-on first, then set a rule for one of its tools.`);
  }
  let app: { id: string; name: string } | null = null;
  if (wanted.app) {
    const [grant] = await svc.db
      .select({ id: oauthGrants.id, name: oauthClients.name })
      .from(oauthGrants)
      .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
      .where(and(eq(oauthGrants.id, wanted.app), eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)));
    if (!grant) throw notFound('That app');
    app = grant;
  }
  // What the person's apps are served may still be an accepted older release: its flags count too.
  const served = (await svc.tools.get(userId)).byName.get(`${wanted.addon}__${wanted.tool}`);
  const alwaysAsk = tool.alwaysAsk || !!served?.alwaysAsk;
  const destructive = tool.destructive || !!served?.destructive;
  if (wanted.hours != null && wanted.mode !== 'allow') throw refused('/hours', 'Only an allow rule can last a number of hours; leave "hours" out.');
  if (wanted.mode === 'allow') {
    if (!app) throw refused('/app', 'An allow rule is for one app: say which ("app": a connection id from your apps), so no other app runs this tool unasked.');
    if (alwaysAsk) {
      throw refused('/mode', `${tool.addonName} asks you before every call of “${tool.title}” (the add-on marks it alwaysAsk), so it cannot be allowed without asking.`);
    }
    if (destructive && wanted.acknowledge !== 'destructive') {
      throw refused(
        '/acknowledge',
        `“${tool.title}” changes or deletes things: allowing it without asking lets ${app.name} do that whenever it wants. To allow it anyway, send "acknowledge": "destructive".`,
      );
    }
  }
  const now = svc.clock.now();
  const expiresAt = wanted.mode === 'allow' && wanted.hours ? new Date(now.getTime() + wanted.hours * 3_600_000) : null;
  // Only a warning actually given counts: an acknowledgement sent for a tool that changes nothing
  // does not carry over to a release that makes it destructive.
  const acknowledgedDestructive = wanted.mode === 'allow' && destructive && wanted.acknowledge === 'destructive';
  const scope = and(
    eq(approvalRules.userId, userId),
    eq(approvalRules.addonId, wanted.addon),
    eq(approvalRules.toolName, wanted.tool),
    app ? eq(approvalRules.grantId, app.id) : isNull(approvalRules.grantId),
  );
  // One rule per scope (a unique index on an expression): insert, or else replace the one there.
  let [row] = await svc.db
    .insert(approvalRules)
    .values({ id: newId('rul'), userId, addonId: wanted.addon, toolName: wanted.tool, grantId: app?.id ?? null, mode: wanted.mode, expiresAt, createdAt: now, acknowledgedDestructive })
    .onConflictDoNothing()
    .returning();
  row ??= (await svc.db.update(approvalRules).set({ mode: wanted.mode, expiresAt, createdAt: now, acknowledgedDestructive }).where(scope).returning())[0];
  if (!row) throw conflict('The rule changed while it was being set. Try again.');
  svc.audit.record(userId, 'rule.set', {
    rule: row.id,
    addon: row.addonId,
    tool: row.toolName,
    app: row.grantId,
    mode: row.mode,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    acknowledgedDestructive: row.acknowledgedDestructive,
  });
  await changed(svc, userId);
  return {
    id: row.id,
    addon: row.addonId,
    addonName: tool.addonName,
    tool: row.toolName,
    toolTitle: tool.title,
    app,
    mode: row.mode,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    needsAcknowledge: needsAcknowledge(row, destructive),
  };
}

/** Removes one of the person's rules: the tool is back to its default (or to the rule for every app). */
export async function removeRule({ ctx, id }: { ctx: Ctx; id: string }) {
  const userId = personId(ctx);
  const [gone] = await ctx.svc.db
    .delete(approvalRules)
    .where(and(eq(approvalRules.id, id), eq(approvalRules.userId, userId)))
    .returning({ id: approvalRules.id, addonId: approvalRules.addonId, toolName: approvalRules.toolName, grantId: approvalRules.grantId });
  if (!gone) throw notFound('That rule');
  ctx.svc.audit.record(userId, 'rule.removed', { rule: gone.id, addon: gone.addonId, tool: gone.toolName, app: gone.grantId });
  await changed(ctx.svc, userId);
}

/** An add-on uninstalled: its rules go with it (installing it again starts from the defaults). */
export async function dropAddonRules(svc: Services, userId: string, addonId: string) {
  await svc.db.delete(approvalRules).where(and(eq(approvalRules.userId, userId), eq(approvalRules.addonId, addonId)));
  await changed(svc, userId);
}

/** An app revoked: its rules can never apply again, so they go (the rules for every app stay). */
export async function dropAppRules(svc: Services, userId: string, grantId: string) {
  const gone = await svc.db
    .delete(approvalRules)
    .where(and(eq(approvalRules.userId, userId), eq(approvalRules.grantId, grantId)))
    .returning({ id: approvalRules.id });
  if (gone.length) await changed(svc, userId);
}

type Tx = Parameters<Parameters<Services['db']['transaction']>[0]>[0];

/** A tool brought back later starts from the defaults. True if any went (announce a `rules` change). */
export async function dropToolRules(tx: Tx, addonId: string, toolNames: string[]): Promise<boolean> {
  if (!toolNames.length) return false;
  const gone = await tx
    .delete(approvalRules)
    .where(and(eq(approvalRules.addonId, addonId), inArray(approvalRules.toolName, toolNames)))
    .returning({ id: approvalRules.id });
  return gone.length > 0;
}

