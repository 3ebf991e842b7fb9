import { and, desc, eq, lte, ne, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { validation } from '../errors';
import type { Json } from '../json';
import type { Services } from '../services';
import { calls } from '../db/schema/index';
import { withNames } from '../approvals/names';
import { announceCallChange } from './watch';
import { sendOutcomePush } from '../approvals/push';

export type CallOutcomeName =
  | 'ok'
  | 'refused'
  | 'failed'
  | 'timed_out'
  | 'invalid_arguments'
  | 'unknown_tool'
  /** A tool of the person's that this app was not given (calls/why-not.ts). */
  | 'not_given'
  /** A tool of an installed add-on that the person has switched off, or not yet on. */
  | 'switched_off'
  /** A tool of an add-on an operator has taken off the catalog. */
  | 'held_off'
  /** A tool new in a release of the add-on that the person has not reviewed yet. */
  | 'not_reviewed'
  /** A tool its add-on does not offer this person now (installs/tool-lists.ts). */
  | 'not_offered'
  | 'denied'
  | 'dismissed'
  | 'expired'
  | 'cancelled'
  | 'revoked'
  | 'disabled'
  | 'ai_apps_off'
  | 'limited'
  /** The person's rule says never (docs/approvals.md "Rules you set"). */
  | 'blocked'
  /** A required setting of the install is unset: nothing was delivered (installs/settings.ts). */
  | 'needs_setup'
  /** The same call again (app, tool, arguments) while it waited or just after: answered from that call (approvals/held.ts). */
  | 'repeated'
  /** The tool runs only as an MCP task and the app did not ask for one: nothing was asked or sent (calls/tasks.ts). */
  | 'needs_task'
  /** At its add-on: written when the call is sent (call-tool.ts), replaced by how it ended. */
  | 'running'
  /** It was running in a process that stopped before it ended (endLostCalls). */
  | 'lost';

export interface CallRecord {
  id: string;
  userId: string;
  grantId?: string;
  appName: string;
  addonId: string;
  toolName: string;
  argsDigest: string;
  decision?: string;
  decidedBy?: string;
  outcome: CallOutcomeName;
  detail?: string;
  /** A failed call: whether it may have reached its add-on (CallOutcome's `sent`). */
  sent?: boolean;
  latencyMs: number;
}

/** Written behind the call (svc.logs): the app's answer does not wait for its log line. */
export function recordCall(svc: Services, rec: CallRecord) {
  // createdAt from the JS clock (ms precision) keeps the keyset cursor exact.
  svc.logs.call({ ...rec, latencyMs: Math.max(0, Math.round(rec.latencyMs)), createdAt: svc.clock.now() });
  if (rec.outcome !== 'running') auditCall(svc, rec);
  // A rule's allow has no approval to follow up on.
  if (rec.decision === 'allowed' && rec.decidedBy !== 'rule' && rec.outcome !== 'ok' && rec.outcome !== 'running') tellAfterAllow(svc, rec.userId, rec.id);
}

type Nullable<T> = { [K in keyof T]: T[K] | null };
/** A call as it ended, in the person's audit chain: its arguments only as their keyed digest (none when they were never checked). */
function auditCall(svc: Services, rec: Pick<CallRecord, 'id' | 'userId' | 'appName' | 'addonId' | 'toolName' | 'argsDigest' | 'outcome'> & Partial<Nullable<Pick<CallRecord, 'grantId' | 'decision' | 'decidedBy'>>>) {
  svc.audit.record(rec.userId, 'call', {
    call: rec.id,
    app: rec.appName,
    grant: rec.grantId ?? undefined,
    addon: rec.addonId,
    tool: rec.toolName,
    args: rec.argsDigest || undefined,
    outcome: rec.outcome,
    decision: rec.decision ?? undefined,
    decidedBy: rec.decidedBy ?? undefined,
  });
}

/** A call the person allowed did not do it: their devices hear so, as the dashboard shows it. */
function tellAfterAllow(svc: Services, userId: string, callId: string) {
  sendOutcomePush(svc, userId, callId).catch((err: unknown) => svc.log.warn('cannot tell the person what came of an allowed call', { err, callId }));
}

/** No call runs past its budget; a running row this much older than that was left by a stopped process. */
const LOST_AFTER_BUDGET_S = 60;

/** Running rows left by a process that stopped mid-call end as lost (the periodic sweep's, any process). */
export async function endLostCalls(svc: Services): Promise<void> {
  const ended = await svc.db
    .update(calls)
    .set({ outcome: 'lost', detail: 'process_stopped' })
    .where(and(eq(calls.outcome, 'running'), sql`${calls.createdAt} < now() - ${`${svc.config.callBudgetSeconds + LOST_AFTER_BUDGET_S} seconds`}::interval`))
    .returning();
  for (const c of ended) {
    auditCall(svc, { ...c, outcome: 'lost' });
    announceCallChange(svc, c.userId, c.id);
  }
}

/** Running now leaves out a call at its add-on for less than this: most end within it, and it would flicker. */
const SHOWN_AFTER_MS = 1_000;

/** The person's calls at their add-on a while now, in any process, newest first. */
export async function runningCallRows(svc: Services, userId: string, limit: number) {
  await svc.logs.flushed();
  // Rows carry the writing process's clock (svc.clock), so "a while" is read on it too.
  const since = new Date(svc.clock.now().getTime() - SHOWN_AFTER_MS);
  return svc.db
    .select()
    .from(calls)
    .where(and(eq(calls.userId, userId), eq(calls.outcome, 'running'), lte(calls.createdAt, since)))
    .orderBy(desc(calls.createdAt))
    .limit(limit);
}

const PAGE = 50;

function encodeCursor(createdAt: Date, id: string) {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url');
}
function decodeCursor(cursor: string): [Date, string] {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const date = new Date(at);
    if (Number.isNaN(date.getTime()) || typeof id !== 'string') throw new Error('bad');
    return [date, id];
  } catch {
    throw validation('The cursor is not valid; start again without it.', [{ path: '/cursor', message: 'Use the nextCursor of a previous page.' }]);
  }
}

/** `GET /api/calls`: a page of the call log, and the cursor of the next one (null: the last page). */
export type CallPage = Json<Awaited<ReturnType<typeof listCalls>>>;
export type CallView = CallPage['items'][number];

/** The person's call log, newest first, keyset-paginated, optionally filtered. */
export async function listCalls({ ctx, query }: { ctx: Ctx; query: { cursor?: string; app?: string; addon?: string; outcome?: string; limit?: number } }) {
  const userId = personId(ctx);
  const limit = Math.min(Math.max(Number(query.limit) || PAGE, 1), 200);
  // A running call is in Running now until it ends (runningCallRows).
  const conditions = [eq(calls.userId, userId), ne(calls.outcome, 'running')];
  if (query.app) conditions.push(eq(calls.appName, query.app));
  if (query.addon) conditions.push(eq(calls.addonId, query.addon));
  if (query.outcome) conditions.push(eq(calls.outcome, query.outcome));
  if (query.cursor) {
    const [at, id] = decodeCursor(query.cursor);
    // A row comparison is an index condition on calls_user_created_idx; the equivalent OR is only a filter.
    conditions.push(sql`(${calls.createdAt}, ${calls.id}) < (${at.toISOString()}::timestamptz, ${id})`);
  }
  // This process's own calls are in the log before the page is read.
  await ctx.svc.logs.flushed();
  const rows = await ctx.svc.db
    .select()
    .from(calls)
    .where(and(...conditions))
    // NULLS LAST as in calls_user_created_idx: plain DESC means NULLS FIRST, which the index cannot serve.
    .orderBy(sql`${calls.createdAt} desc nulls last`, sql`${calls.id} desc nulls last`)
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  // The names a person reads: a tool since removed or renamed keeps the title it last had.
  const named = await withNames(ctx.svc, userId, page.map((r) => ({ addon: r.addonId, tool: r.toolName })));
  return {
    items: page.map((r, i) => ({
      id: r.id,
      app: r.appName,
      addon: r.addonId,
      addonName: named[i]!.addonName,
      tool: r.toolName,
      toolTitle: named[i]!.toolTitle,
      argsDigest: r.argsDigest,
      decision: r.decision,
      decidedBy: r.decidedBy,
      outcome: r.outcome,
      detail: r.detail,
      latencyMs: r.latencyMs,
      createdAt: r.createdAt,
    })),
    nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}
