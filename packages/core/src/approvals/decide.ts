import { and, desc, eq, gt, ne, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { conflict, notFound, ToolportError } from '../errors';
import { inputObject, parseInput } from '../input';
import type { Services } from '../services';
import { approvals } from '../db/schema/index';
import { invisibleProblem } from '../addons/manifest';
import { withNames, type NamedApproval } from './names';
import { approvalActionTokenValid } from './push';
import {
  announceDecided,
  HOLDER_GONE,
  readApproval,
  toDecision,
  toView,
  transition,
  type ApprovalRow,
  type RecordedDecision,
} from './records';
import { APPROVALS_CHANNEL } from '../events/channels';
import { cameOfCalls, type CameOfIt } from '../calls/came-of-it';

const DECIDED_SHOWN = 50;

/** `GET /api/approvals`: the pending ones carry no decision; with `status=all` each is a OneApproval (pending ones too). */
export type ListedApproval = NamedApproval & Partial<Omit<RecordedDecision, 'id'>> & { came?: CameOfIt | null };

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
  const came = await cameOfCalls(ctx.svc, userId, decided.filter((row) => row.status === 'allowed').map((row) => row.callId));
  return [
    ...pending.map((p) => ({ ...p, status: 'pending' as const, decidedBy: null, decidedAt: null, reason: null, came: null })),
    ...(await withNames(ctx.svc, userId, decided.map((row) => ({ ...toView(row), ...toDecision(row), came: came.get(row.callId) ?? null })))),
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

/** A deny's reason reaches the model in the tool error: short, one line of plain text, nothing hidden. */
const REASON_MAX = 500;

/** Why `reason` (NFC, trimmed) cannot be passed on, as a sentence, or null. */
function reasonProblem(reason: string): string | null {
  if (Array.from(reason).length > REASON_MAX) return `A reason is at most ${REASON_MAX} characters; this one has ${Array.from(reason).length}. Shorten it.`;
  // A line or paragraph separator (U+2028, U+2029) is a line break to whoever reads it, and JSON
  // does not escape it: one line means neither, like a newline.
  const control = /[\p{Cc}\p{Zl}\p{Zp}]/u.exec(reason);
  if (control) {
    const hex = control[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    const at = Array.from(reason.slice(0, control.index)).length + 1;
    const what = /\p{Cc}/u.test(control[0]) ? 'a control character' : 'a line or paragraph separator';
    return `The reason contains ${what} (U+${hex}) at character ${at}: write it as one line of plain text.`;
  }
  const hidden = invisibleProblem(reason);
  return hidden ? `The reason ${hidden}.` : null;
}

const reasonField = z.unknown().transform((raw, ctx): string | null => {
  if (raw === undefined || raw === null) return null;
  const sentence = typeof raw === 'string' ? undefined : 'Give the reason as text, or leave it out.';
  const reason = typeof raw === 'string' ? raw.normalize('NFC').trim() : '';
  const problem = sentence ?? (reason ? reasonProblem(reason) : null);
  if (problem) ctx.addIssue({ code: 'custom', message: problem, params: { sentence: problem } });
  return reason || null;
});

const dashboardDecision = inputObject({
  decision: z.enum(['allow', 'deny'], { message: 'Use "allow" or "deny".' }),
  reason: reasonField,
}).superRefine((v, ctx) => {
  const sentence = 'A reason goes with a deny only: an allow carries none. Leave the reason out, or deny.';
  if (v.decision === 'allow' && v.reason) ctx.addIssue({ code: 'custom', path: ['reason'], message: sentence, params: { sentence } });
});
/** `POST /api/approvals/{id}/decision`. */
export type DecisionInput = z.input<typeof dashboardDecision>;
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
  reason: string | null = null,
  retry = true,
): Promise<RecordedDecision> {
  // Whether or not its holder is still alive: a call whose holder is gone is finished by another process (finishOrphans).
  const row = await transition(svc, id, status, decidedBy, { userId, notExpired: true, reason, ...(status === 'allowed' ? { runnable: true } : {}) });
  if (row) {
    await wake(svc, id);
    await announceDecided(svc, row);
    return toDecision(row);
  }
  const found = await readApproval(svc, id);
  if (!found || found.userId !== userId) throw notFound('That approval');
  if (found.status === 'pending') {
    // Past its expiry but not yet swept: record that now (the database's clock decides), and answer with it.
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
    // Still pending: the decision can be made again.
    if (again.status === 'pending' && retry) return decide(svc, userId, id, status, decidedBy, reason, false);
    throw alreadyDecided(again);
  }
  throw alreadyDecided(found);
}

/** A deny's optional reason is what the model receives. */
export async function decideApproval({ ctx, id, input }: { ctx: Ctx; id: string; input: unknown }): Promise<RecordedDecision> {
  const { decision, reason } = parseInput(dashboardDecision, input, 'Say allow or deny.');
  if (id.length > 64) throw notFound('That approval');
  return decide(ctx.svc, personId(ctx), id, DECIDED[decision], 'dashboard', decision === 'deny' ? reason : null);
}

/** `GET /api/approvals/{id}`: what was asked, and what ended it. */
export type OneApproval = NamedApproval & Omit<RecordedDecision, 'id'> & { came: CameOfIt | null };

/** A pending row past its expiry shows as what the sweeper will record. */
export async function getApproval({ ctx, id }: { ctx: Ctx; id: string }): Promise<OneApproval> {
  const userId = personId(ctx);
  if (id.length > 64) throw notFound('That approval');
  const [found] = await ctx.svc.db
    .select({ row: approvals, overdue: sql<boolean>`${approvals.expiresAt} <= now()` })
    .from(approvals)
    .where(and(eq(approvals.id, id), eq(approvals.userId, userId)));
  if (!found) throw notFound('That approval');
  const { row, overdue } = found;
  let decision = toDecision(row);
  if (row.status === 'pending' && overdue) decision = { ...decision, status: 'expired', decidedBy: 'timeout' };
  const [named] = await withNames(ctx.svc, userId, [toView(row)]);
  const { id: _id, ...rest } = decision;
  const came = row.status === 'allowed' ? (await cameOfCalls(ctx.svc, userId, [row.callId])).get(row.callId)! : null;
  return { ...named!, ...rest, came };
}

/** What an app answered: an ElicitResult's action, or a JSON-RPC error (it could not ask). */
export type ElicitationAnswer = 'accept' | 'decline' | 'cancel' | 'error';

/**
 * MCP URL elicitation answer. It never approves: "accept" only says the person was shown the
 * page; "decline" or "cancel" cancels (an app may always say no).
 */
export async function answerApprovalElicitation({ ctx, approvalId, action }: { ctx: Ctx; approvalId: string; action: ElicitationAnswer }): Promise<RecordedDecision> {
  if (ctx.actor.kind !== 'app') throw new Error('answerApprovalElicitation needs an app acting for a person.');
  const { userId, grantId } = ctx.actor;
  const { svc } = ctx;
  const unknown = () => notFound('That approval');
  if (approvalId.length > 64) throw unknown();
  if (action === 'decline' || action === 'cancel') {
    // Past its expiry the approval is expired whatever the app says (the sweeper records it so).
    const row = await transition(svc, approvalId, 'cancelled', 'app', { userId, grantId, notExpired: true });
    if (row) {
      await wake(svc, approvalId);
      await announceDecided(svc, row);
      return toDecision(row);
    }
  }
  const found = await readApproval(svc, approvalId);
  if (!found || found.userId !== userId || found.grantId !== grantId) throw unknown();
  return toDecision(found);
}

/** No session: the token is the capability; a replayed one meets the already-recorded decision. */
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
