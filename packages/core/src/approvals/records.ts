import { performance } from 'node:perf_hooks';
import { and, eq, inArray, isNotNull, or, sql } from 'drizzle-orm';
import { approvalHolders, approvals } from '../db/schema/index';
import type { ConfirmDescriptor } from '../outbound/types';
import type { Services } from '../services';
import { APPROVALS_CHANNEL, userChannel } from '../events/channels';
import type { ApprovalNames } from './names';

export type ApprovalRow = typeof approvals.$inferSelect;

/** The process the approval names as its holder still has a live lease row. */
const holderAlive = sql`exists (select 1 from ${approvalHolders} where ${approvalHolders.id} = ${approvals.holderId} and ${approvalHolders.heldUntil} > now())`;
/** Neither the holder's lease nor an older row's own lease has lapsed; rows with neither count as held. */
export const stillHeld = sql`((${approvals.heldUntil} is null or ${approvals.heldUntil} > now()) and (${approvals.holderId} is null or ${holderAlive}))`;
/** The holder's lease lapsed: that process is gone, and nothing can run the call. */
const holderGone = sql`(${approvals.heldUntil} <= now() or (${approvals.holderId} is not null and not ${holderAlive}))`;
/** A holder row this long past its lease belongs to a process long gone. */
const FORGET_HOLDERS_AFTER = '1 hour';
export type FinalStatus = 'allowed' | 'denied' | 'dismissed' | 'expired' | 'cancelled' | 'revoked';


/** What travels on `user:{id}`: an SSE event name and its data (the dashboard's live feed, `GET /api/events`). */
export type UserEvent =
  | { event: 'approval'; id: string; data: LiveApproval }
  | { event: 'approval.decided'; id: string; data: Pick<RecordedDecision, 'id' | 'status'> }
  /** One of the person's calls started running, made progress or ended: read it again (calls/watch.ts). */
  | { event: 'call.changed'; id: string; data: { callId: string } };

/** An approval as the live feed sends it: named, unless the names could not be looked up (then the ids stand in). */
export type LiveApproval = ApprovalView & Partial<ApprovalNames>;

export interface ApprovalView {
  id: string;
  app: string;
  addon: string;
  tool: string;
  arguments: unknown;
  confirm: ConfirmDescriptor | null;
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
    app: row.appName,
    addon: row.addonId,
    tool: row.toolName,
    arguments: args,
    confirm: (row.confirm as ConfirmDescriptor | null) ?? null,
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
  opts: { userId?: string; grantId?: string; notExpired?: boolean; held?: boolean; overdue?: boolean; lapsed?: boolean; reason?: string | null } = {},
): Promise<ApprovalRow | undefined> {
  const [row] = await svc.db
    .update(approvals)
    .set({ status, decidedBy, decidedAt: sql`now()`, ...(opts.reason ? { reason: opts.reason } : {}) })
    .where(
      and(
        eq(approvals.id, id),
        eq(approvals.status, 'pending'),
        opts.userId ? eq(approvals.userId, opts.userId) : undefined,
        // The app's own answer (URL elicitation) reaches only the calls of its grant.
        opts.grantId ? eq(approvals.grantId, opts.grantId) : undefined,
        opts.notExpired ? sql`${approvals.expiresAt} > now()` : undefined,
        // An allow counts only while a process still holds the call to run it.
        opts.held ? stillHeld : undefined,
        opts.overdue ? sql`${approvals.expiresAt} <= now()` : undefined,
        opts.lapsed ? holderGone : undefined,
      ),
    )
    .returning();
  if (row) svc.metrics.approval(status);
  return row;
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

/** Who recorded a `cancelled` when the process holding the call stopped renewing its lease. */
export const HOLDER_GONE = 'holder_gone';

/** Records these approvals, if still pending, as cancelled by `decidedBy`, in one statement. */
export async function cancelPending(svc: Services, ids: string[], decidedBy: string) {
  if (!ids.length) return [];
  const rows = await svc.db
    .update(approvals)
    .set({ status: 'cancelled', decidedBy, decidedAt: sql`now()` })
    .where(and(inArray(approvals.id, ids), eq(approvals.status, 'pending')))
    .returning({ id: approvals.id, userId: approvals.userId, status: approvals.status });
  for (const _ of rows) svc.metrics.approval('cancelled');
  return rows;
}

/** Holder id → its lease's end (database time, ms) and when this process first saw it lapsed. */
export type LapsedLeases = Map<string, { heldUntil: number; seenAt: number }>;
/**
 * A lapse must be seen unchanged by two sweeps this far apart: a live holder (renewing every 3 s,
 * retrying every 0.5 s) would have moved it; one sighting may be a shared database outage.
 */
const GONE_AFTER_MS = 4_000;

/**
 * Cancels approvals whose holder is gone (their calls can never run). Idempotent, any process.
 * Without `lapsed` (one sweep's memory) no approval of a lapsed lease is cancelled.
 */
export async function expireOverdue(svc: Services, lapsed: LapsedLeases = new Map()): Promise<number> {
  const expired = await svc.db
    .update(approvals)
    .set({ status: 'expired', decidedBy: 'timeout', decidedAt: sql`now()` })
    .where(and(eq(approvals.status, 'pending'), sql`${approvals.expiresAt} <= now()`))
    .returning({ id: approvals.id, userId: approvals.userId, status: approvals.status });
  const lapsedNow = await svc.db
    .select({ id: approvalHolders.id, heldUntil: approvalHolders.heldUntil })
    .from(approvalHolders)
    .where(sql`${approvalHolders.heldUntil} <= now()`);
  const now = performance.now();
  const gone: string[] = [];
  const seen = new Map(lapsed);
  lapsed.clear();
  for (const { id, heldUntil } of lapsedNow) {
    const before = seen.get(id);
    const same = before?.heldUntil === heldUntil.getTime();
    if (same && now - before.seenAt >= GONE_AFTER_MS) gone.push(id);
    lapsed.set(id, same ? before : { heldUntil: heldUntil.getTime(), seenAt: now });
  }
  const holderRowGone = sql`not exists (select 1 from ${approvalHolders} where ${approvalHolders.id} = ${approvals.holderId})`;
  const orphaned = await svc.db
    .update(approvals)
    .set({ status: 'cancelled', decidedBy: HOLDER_GONE, decidedAt: sql`now()` })
    .where(
      and(
        eq(approvals.status, 'pending'),
        or(
          // The previous release's lease on the row itself.
          sql`${approvals.heldUntil} <= now()`,
          and(isNotNull(approvals.holderId), holderRowGone),
          // Still lapsed now: a renewal since the select keeps its calls.
          gone.length ? and(inArray(approvals.holderId, gone), sql`not ${holderAlive}`) : undefined,
        ),
      ),
    )
    .returning({ id: approvals.id, userId: approvals.userId, status: approvals.status });
  await svc.db.delete(approvalHolders).where(sql`${approvalHolders.heldUntil} < now() - ${FORGET_HOLDERS_AFTER}::interval`);
  const rows = [...expired, ...orphaned];
  for (const row of rows) {
    svc.metrics.approval(row.status as FinalStatus);
    await announceDecided(svc, row);
    // A holder still alive elsewhere learns at once rather than at its own timer.
    await svc.bus.publish(APPROVALS_CHANNEL, { id: row.id }).catch(() => {});
  }
  return rows.length;
}
