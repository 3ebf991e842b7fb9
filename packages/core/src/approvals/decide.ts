import { and, desc, eq, gt, ne, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { conflict, notFound, ToolportError } from '../errors';
import { inputObject, parseInput } from '../input';
import type { Services } from '../services';
import { approvals } from '../db/schema/index';
import { withNames, type NamedApproval } from './names';
import { approvalActionTokenValid } from './push';
import {
  announceDecided,
  HOLDER_GONE,
  readApproval,
  stillHeld,
  toDecision,
  toView,
  transition,
  type ApprovalRow,
  type RecordedDecision,
} from './records';
import { APPROVALS_CHANNEL } from '../events/channels';

const DECIDED_SHOWN = 50;

export type ListedApproval = NamedApproval & Partial<Omit<RecordedDecision, 'id'>>;

const listQuery = z.object({ status: z.enum(['pending', 'all'], { message: 'Use pending or all.' }).default('pending') });

/** The person's pending approvals; with `status=all`, also their last 50 decided ones. */
export async function listApprovals({ ctx, status: wanted }: { ctx: Ctx; status?: string }): Promise<ListedApproval[]> {
  const { status } = parseInput(listQuery, { status: wanted }, 'Unknown status filter.');
  const userId = personId(ctx);
  const pending = await listPending(ctx.svc, userId);
  if (status === 'pending') return pending;
  const decided = await ctx.svc.db
    .select()
    .from(approvals)
    .where(and(eq(approvals.userId, userId), ne(approvals.status, 'pending')))
    .orderBy(desc(approvals.decidedAt), desc(approvals.id))
    .limit(DECIDED_SHOWN);
  return [
    ...pending.map((p) => ({ ...p, status: 'pending' as const, decidedBy: null, decidedAt: null })),
    ...(await withNames(ctx.svc, userId, decided.map((row) => ({ ...toView(row), ...toDecision(row) })))),
  ];
}

export async function listPending(svc: Services, userId: string): Promise<NamedApproval[]> {
  const rows = await svc.db
    .select()
    .from(approvals)
    .where(
      and(
        eq(approvals.userId, userId),
        eq(approvals.status, 'pending'),
        gt(approvals.expiresAt, sql`now()`),
        // A call whose holder died is not shown as waiting, even before the sweeper records it.
        stillHeld,
      ),
    )
    .orderBy(approvals.createdAt);
  return withNames(svc, userId, rows.map(toView));
}

/** Approvals of the person decided since `since` (a reconnecting dashboard drops their cards). */
export async function listDecidedSince(svc: Services, userId: string, since: Date) {
  const rows = await svc.db
    .select({ id: approvals.id, status: approvals.status })
    .from(approvals)
    .where(and(eq(approvals.userId, userId), ne(approvals.status, 'pending'), gt(approvals.decidedAt, since)))
    .orderBy(approvals.decidedAt)
    .limit(DECIDED_SHOWN);
  return rows;
}

type Decision = 'allowed' | 'denied' | 'dismissed';
const DECIDED = { allow: 'allowed', deny: 'denied', dismiss: 'dismissed' } as const satisfies Record<string, Decision>;

const dashboardDecision = inputObject({ decision: z.enum(['allow', 'deny'], { message: 'Use "allow" or "deny".' }) });
/** A notification can also be dismissed (closed without an answer); the dashboard's card cannot. */
const pushDecision = inputObject({ decision: z.enum(['allow', 'deny', 'dismiss'], { message: 'Use "allow", "deny" or "dismiss".' }) });
/** A notification action's capability; anything else about it is "not valid", never a field error. */
const approvalLink = z.object({ approvalId: z.string().max(64), token: z.string().max(128) });

const cancelledBecause: Record<string, string> = {
  [HOLDER_GONE]: 'the Toolport server holding it stopped',
  shutdown: 'the Toolport server holding it shut down',
  app: 'the app cancelled it',
};

function conflictSentence(row: ApprovalRow): string {
  if (row.status === 'expired') return 'This approval expired before it was decided.';
  if (row.status === 'cancelled') {
    const why = cancelledBecause[row.decidedBy ?? ''] ?? 'it was cancelled';
    return `The call that asked for this approval is no longer waiting (${why}), so nothing will run.`;
  }
  return `This approval was already decided: ${row.status}.`;
}

const alreadyDecided = (row: ApprovalRow) => conflict(conflictSentence(row), { decision: toDecision(row) });

/** The decision is recorded whatever happens here; a holder that misses this reads it at its expiry. */
async function wake(svc: Services, id: string) {
  try {
    await svc.bus.publish(APPROVALS_CHANNEL, { id });
  } catch (err) {
    svc.log.error('cannot wake the call waiting for an approval', { err, approvalId: id });
  }
}

/**
 * Records the person's decision: one conditional update, so exactly one decision wins whoever
 * decides (dashboard, phone, timer, another process). Wakes the waiting call wherever it is.
 */
async function decide(
  svc: Services,
  userId: string,
  id: string,
  status: Decision,
  decidedBy: string,
  retry = true,
): Promise<RecordedDecision> {
  // An allow needs a live holder to run the call; a deny (or dismissal) of a call nobody holds is still the person's answer.
  const row = await transition(svc, id, status, decidedBy, { userId, notExpired: true, held: status === 'allowed' });
  if (row) {
    await wake(svc, id);
    await announceDecided(svc, row);
    return toDecision(row);
  }
  const found = await readApproval(svc, id);
  if (!found || found.userId !== userId) throw notFound('That approval');
  if (found.status === 'pending') {
    // Past its expiry, or its holder's lease, but not yet swept: record that now (the database's
    // clock decides which), and answer with it.
    const ended =
      (await transition(svc, id, 'expired', 'timeout', { userId, overdue: true })) ??
      (await transition(svc, id, 'cancelled', HOLDER_GONE, { userId, lapsed: true }));
    if (ended) {
      await wake(svc, id);
      await announceDecided(svc, ended);
      throw alreadyDecided(ended);
    }
    const again = await readApproval(svc, id);
    if (!again) throw notFound('That approval');
    // Still pending: its holder renewed the lease just now; the decision can be made again.
    if (again.status === 'pending' && retry) return decide(svc, userId, id, status, decidedBy, false);
    throw alreadyDecided(again);
  }
  throw alreadyDecided(found);
}

export async function decideApproval({ ctx, id, input }: { ctx: Ctx; id: string; input: unknown }): Promise<RecordedDecision> {
  const status = DECIDED[parseInput(dashboardDecision, input, 'Say allow or deny.').decision];
  if (id.length > 64) throw notFound('That approval');
  return decide(ctx.svc, personId(ctx), id, status, 'dashboard');
}

/**
 * A decision from a notification's action, or its dismissal, without a session: the token is the
 * capability. A forged token (or another approval's) changes nothing; a replayed or late one meets
 * the already-recorded decision.
 */
export async function decideApprovalWithToken({ ctx, input }: { ctx: Ctx; input: unknown }): Promise<RecordedDecision> {
  const status = DECIDED[parseInput(pushDecision, input, 'Say allow, deny or dismiss.').decision];
  const link = approvalLink.safeParse(input);
  const refused = new ToolportError('UNAUTHORIZED', 'This approval link is not valid.');
  if (!link.success) throw refused;
  const { approvalId, token } = link.data;
  const row = await readApproval(ctx.svc, approvalId);
  // Any master key of the ring: a notification sent just before a rotation still decides.
  if (!row || !approvalActionTokenValid(ctx.svc, row, token)) throw refused;
  return decide(ctx.svc, row.userId, row.id, status, 'push');
}
