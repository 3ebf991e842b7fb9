import { and, eq, inArray, isNull, ne, sql } from 'drizzle-orm';
import { approvalHolders, approvals } from '../db/schema/index';
import type { ConfirmDescriptor } from '../outbound/types';
import type { Services } from '../services';
import { APPROVALS_CHANNEL, userChannel } from '../events/channels';
import type { ApprovalNames } from './names';

export type ApprovalRow = typeof approvals.$inferSelect;

/** The process the approval names as its holder still has a live lease row. */
const holderAlive = sql`exists (select 1 from ${approvalHolders} where ${approvalHolders.id} = ${approvals.holderId} and ${approvalHolders.heldUntil} > now())`;
/** The holder's lease lapsed, or its row is gone (it stopped): that process can no longer finish the call. */
const holderGone = sql`(${approvals.heldUntil} <= now() or (${approvals.holderId} is not null and not ${holderAlive}))`;
/** A holder row this long past its lease belongs to a process long gone. */
const FORGET_HOLDERS_AFTER = '1 hour';
/**
 * A decided call whose holder is gone is taken over only this soon after the decision: an allow
 * is meant to run now, and after a whole deployment's outage a stale one must not run by surprise.
 */
const TAKE_OVER_WITHIN_SECONDS = 60;
export type FinalStatus = 'allowed' | 'denied' | 'dismissed' | 'expired' | 'cancelled' | 'revoked';


/** What travels on `user:{id}`: an SSE event name and its data (the dashboard's live feed, `GET /api/events`). */
export type UserEvent =
  | { event: 'approval'; id: string; data: LiveApproval }
  | { event: 'approval.decided'; id: string; data: Pick<RecordedDecision, 'id' | 'status'> }
  /** One of the person's calls started running, made progress or ended: read it again (calls/watch.ts). */
  | { event: 'call.changed'; id: string; data: { callId: string } };

/** An approval as the live feed sends it: named, unless the names could not be looked up (then the ids stand in). */
export type LiveApproval = ApprovalView & Partial<ApprovalNames>;

/** Why a tool with a description step has none on its card: the add-on took too long, or failed. */
export type ConfirmMissing = 'slow' | 'failed';

export interface ApprovalView {
  id: string;
  /** The call's own page is `/calls/{callId}`. */
  callId: string;
  app: string;
  addon: string;
  tool: string;
  arguments: unknown;
  confirm: ConfirmDescriptor | null;
  confirmMissing: ConfirmMissing | null;
  destructive: boolean;
  expiresAt: string;
}

/** A recorded decision, as answered by a decision request (200) or a refused one (409). */
export interface RecordedDecision {
  id: string;
  status: ApprovalRow['status'];
  decidedBy: string | null;
  decidedAt: string | null;
  reason: string | null;
}

export function toView(row: ApprovalRow): ApprovalView {
  let args: unknown;
  try {
    args = JSON.parse(row.arguments);
  } catch {
    args = row.arguments;
  }
  return {
    id: row.id,
    callId: row.callId,
    app: row.appName,
    addon: row.addonId,
    tool: row.toolName,
    arguments: args,
    confirm: (row.confirm as ConfirmDescriptor | null) ?? null,
    confirmMissing: row.confirmMissing,
    destructive: row.destructive,
    expiresAt: row.expiresAt.toISOString(),
  };
}

export const toDecision = (row: Pick<ApprovalRow, 'id' | 'status' | 'decidedBy' | 'decidedAt' | 'reason'>): RecordedDecision => ({
  id: row.id,
  status: row.status,
  decidedBy: row.decidedBy,
  decidedAt: row.decidedAt?.toISOString() ?? null,
  reason: row.reason ?? null,
});

/**
 * The only way an approval leaves `pending`: one conditional update, so exactly one decision is
 * ever recorded whichever process, timer or person gets there first. Undefined if it lost.
 */
export async function transition(
  svc: Services,
  id: string,
  status: FinalStatus,
  decidedBy: string,
  opts: { userId?: string; grantId?: string; notExpired?: boolean; overdue?: boolean; runnable?: boolean; lapsed?: boolean; reason?: string | null; runBy?: string } = {},
): Promise<ApprovalRow | undefined> {
  const [row] = await svc.db
    .update(approvals)
    .set({ status, decidedBy, decidedAt: sql`now()`, ...(opts.reason ? { reason: opts.reason } : {}), ...(opts.runBy ? { runBy: opts.runBy, runAt: sql`now()` } : {}) })
    .where(
      and(
        eq(approvals.id, id),
        eq(approvals.status, 'pending'),
        opts.userId ? eq(approvals.userId, opts.userId) : undefined,
        // The app's own answer (URL elicitation) reaches only the calls of its grant.
        opts.grantId ? eq(approvals.grantId, opts.grantId) : undefined,
        opts.notExpired ? sql`${approvals.expiresAt} > now()` : undefined,
        opts.overdue ? sql`${approvals.expiresAt} <= now()` : undefined,
        // An allow counts if some process can run the call: one that may be taken over, or a live holder.
        opts.runnable ? sql`(${approvals.takeover} or not ${holderGone})` : undefined,
        // A previous release's call whose holder is gone: nothing can run it.
        opts.lapsed ? and(eq(approvals.takeover, false), holderGone) : undefined,
      ),
    )
    .returning();
  if (row) {
    svc.metrics.approval(status);
    auditDecision(svc, row);
  }
  return row;
}

/** What an approval's audit event names; the `returning` of every statement that decides one. */
const decidedColumns = {
  id: approvals.id,
  userId: approvals.userId,
  status: approvals.status,
  callId: approvals.callId,
  decidedBy: approvals.decidedBy,
  appName: approvals.appName,
  addonId: approvals.addonId,
  toolName: approvals.toolName,
};
type Decided = { [K in keyof typeof decidedColumns]: ApprovalRow[K] };

/** A decision in the person's audit chain, with its channel and receipt id (the approval's id, DESIGN.md "Webhook protocol"). */
function auditDecision(svc: Services, row: Decided) {
  svc.audit.record(row.userId, 'approval', {
    receipt: row.id,
    call: row.callId,
    status: row.status,
    channel: row.decidedBy,
    app: row.appName,
    addon: row.addonId,
    tool: row.toolName,
  });
}

/**
 * A call `self` may take over: its holder is gone and claims before it runs (this release), it was
 * decided lately, and it is not `self`'s own (a live process's waits finish its calls, even after
 * its lease lapsed in a stall).
 */
const orphanOf = (self: string) =>
  and(
    eq(approvals.takeover, true),
    holderGone,
    sql`${approvals.holderId} is distinct from ${self}`,
    sql`${approvals.decidedAt} > now() - ${`${TAKE_OVER_WITHIN_SECONDS} seconds`}::interval`,
  );

/**
 * Takes a decided call to finish (deliver if allowed, else answer with the decision): one
 * conditional update, so its holder and a process taking over never both run it. With `orphan`,
 * only a call whose holder is gone, decided within TAKE_OVER_WITHIN_SECONDS. Undefined if taken.
 */
export async function claimDecided(svc: Services, id: string, runner: string, opts: { orphan?: boolean } = {}): Promise<ApprovalRow | undefined> {
  const [row] = await svc.db
    .update(approvals)
    .set({ runBy: runner, runAt: sql`now()` })
    .where(
      and(
        eq(approvals.id, id),
        ne(approvals.status, 'pending'),
        isNull(approvals.runBy),
        opts.orphan ? orphanOf(runner) : undefined,
      ),
    )
    .returning();
  return row;
}

/** Decided calls whose holder is gone and that nobody has taken: the sweep finishes them (any process). */
export async function orphansDecided(svc: Services, limit: number, self: string): Promise<string[]> {
  const rows = await svc.db
    .select({ id: approvals.id })
    .from(approvals)
    .where(
      and(
        isNull(approvals.runBy),
        ne(approvals.status, 'pending'),
        orphanOf(self),
      ),
    )
    .orderBy(approvals.decidedAt)
    .limit(limit);
  return rows.map((r) => r.id);
}

export async function readApproval(svc: Services, id: string): Promise<ApprovalRow | undefined> {
  const [row] = await svc.db.select().from(approvals).where(eq(approvals.id, id));
  return row;
}

/** Tells the person's dashboards (every process) that an approval is decided. Never throws. */
export async function announceDecided(svc: Services, row: Pick<ApprovalRow, 'id' | 'userId' | 'status'>) {
  const event: UserEvent = { event: 'approval.decided', id: `${row.id}.decided`, data: { id: row.id, status: row.status } };
  try {
    await svc.bus.publish(userChannel(row.userId), event);
  } catch (err) {
    svc.log.warn('cannot announce an approval decision', { err, approvalId: row.id });
  }
}

/** Who recorded a `cancelled` when the process holding a previous release's call stopped renewing its lease. */
export const HOLDER_GONE = 'holder_gone';

/** A task's app cancelled it: its approval, if still waiting, is cancelled too, wherever its holder is (or is not). */
export async function cancelPendingOfCall(svc: Services, callId: string, decidedBy: 'app' | 'dashboard'): Promise<void> {
  const rows = await svc.db
    .update(approvals)
    .set({ status: 'cancelled', decidedBy, decidedAt: sql`now()` })
    .where(and(eq(approvals.callId, callId), eq(approvals.status, 'pending')))
    .returning(decidedColumns);
  for (const row of rows) {
    svc.metrics.approval('cancelled');
    auditDecision(svc, row);
    await announceDecided(svc, row);
    await svc.bus.publish(APPROVALS_CHANNEL, { id: row.id }).catch(() => {});
  }
}

/** Records these approvals, if still pending, as cancelled by `decidedBy` and finished by `runBy`, in one statement. */
export async function cancelPending(svc: Services, ids: string[], decidedBy: string, runBy: string) {
  if (!ids.length) return [];
  const rows = await svc.db
    .update(approvals)
    .set({ status: 'cancelled', decidedBy, decidedAt: sql`now()`, runBy, runAt: sql`now()` })
    .where(and(inArray(approvals.id, ids), eq(approvals.status, 'pending')))
    .returning(decidedColumns);
  for (const row of rows) {
    svc.metrics.approval('cancelled');
    auditDecision(svc, row);
  }
  return rows;
}

/**
 * Records overdue approvals expired, whoever holds them (their holder, or a process taking them
 * over, answers for them). Idempotent, any process.
 */
export async function expireOverdue(svc: Services): Promise<number> {
  const rows = await svc.db
    .update(approvals)
    .set({ status: 'expired', decidedBy: 'timeout', decidedAt: sql`now()` })
    .where(and(eq(approvals.status, 'pending'), sql`${approvals.expiresAt} <= now()`))
    .returning(decidedColumns);
  await svc.db.delete(approvalHolders).where(sql`${approvalHolders.heldUntil} < now() - ${FORGET_HOLDERS_AFTER}::interval`);
  for (const row of rows) {
    svc.metrics.approval(row.status as FinalStatus);
    auditDecision(svc, row);
    await announceDecided(svc, row);
    // A holder still alive elsewhere learns at once rather than at its own timer.
    await svc.bus.publish(APPROVALS_CHANNEL, { id: row.id }).catch(() => {});
  }
  return rows.length;
}
