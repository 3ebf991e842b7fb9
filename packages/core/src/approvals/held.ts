import { and, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import { approvals } from '../db/schema/index';
import { APPROVALS_CHANNEL, HELD_RESULTS_CHANNEL } from '../events/channels';
import type { Services } from '../services';
import type { ToolResult } from '../calls/types';
import type { CancelSignal } from '../cancel';

/*
 * A call the app stopped waiting for (MCP 2026-07-28: the first round answers `input_required`
 * with the approval page) goes on in the process that holds it, or, if that process is gone, in
 * whichever takes it over once decided; its answer is kept on the approval row, and the app's
 * retry, which names it by a signed `requestState`, gets that answer in any API process. A retry
 * never starts a second run: one process claims the decided call (records.ts claimDecided).
 */

/** Long enough for an app to retry after the person's 30 s and a slow add-on; short, as a result may hold personal data. */
export const RESULT_KEPT_MINUTES = 10;
const RESULT_KEPT_MS = RESULT_KEPT_MINUTES * 60_000;
/** A wake missed on the bus (a Redis blip) costs at most this much waiting. */
const RECHECK_MS = 5_000;
/** After its call's budget, the holder has answered or is gone: its write of the answer gets this long. */
const KEEP_MARGIN_S = 15;
const STATE_VERSION = 'v1';
const MAX_STATE_LENGTH = 2_048;

/** What a `requestState` names: the approval, the app (grant), the tool and the arguments' digest. */
export interface HeldCall {
  approvalId: string;
  grantId: string;
  tool: string;
  argsDigest: string;
}

/** Signed (the master key ring), so an app can neither forge one nor point it at another call. */
export function issueRequestState(svc: Services, call: HeldCall): string {
  const claims = { a: call.approvalId, g: call.grantId, t: call.tool, d: call.argsDigest, e: svc.clock.now().getTime() + RESULT_KEPT_MS };
  const value = `${STATE_VERSION}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${value}.${svc.secrets.requestStateMac(value)}`;
}

export type ReadState = { ok: true; call: HeldCall } | { ok: false; reason: 'forged' | 'expired' };

export function readRequestState(svc: Services, state: string): ReadState {
  const parts = state.length <= MAX_STATE_LENGTH ? state.split('.') : [];
  if (parts.length !== 3 || parts[0] !== STATE_VERSION) return { ok: false, reason: 'forged' };
  const value = `${parts[0]}.${parts[1]}`;
  if (!svc.secrets.requestStateMacValid(value, parts[2]!)) return { ok: false, reason: 'forged' };
  const c = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { a: string; g: string; t: string; d: string; e: number };
  if (c.e <= svc.clock.now().getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, call: { approvalId: c.a, grantId: c.g, tool: c.t, argsDigest: c.d } };
}

/** Answers that stand in for a call's answer (its holder gave up waiting for another process's): never kept. */
const standIns = new WeakSet<ToolResult>();
export function standIn(result: ToolResult): ToolResult {
  standIns.add(result);
  return result;
}

/** Records the held call's answer once, and wakes whoever waits for it. */
export async function keepHeldResult(svc: Services, approvalId: string, result: ToolResult): Promise<void> {
  if (standIns.has(result)) return;
  await svc.db
    .update(approvals)
    .set({ result, resultAt: sql`now()` })
    .where(and(eq(approvals.id, approvalId), isNull(approvals.result)));
  await svc.bus.publish(HELD_RESULTS_CHANNEL, { id: approvalId }).catch(() => {});
}

/** Answers kept past their time are dropped (the sweeper's, any process). */
export async function forgetHeldResults(svc: Services): Promise<void> {
  await svc.db
    .update(approvals)
    .set({ result: null })
    .where(sql`${approvals.result} is not null and ${approvals.resultAt} < now() - ${`${RESULT_KEPT_MINUTES} minutes`}::interval`);
}

export type HeldAnswer =
  /** With the approval's final status: a repeat takes only what the person decided. */
  | { kind: 'result'; result: ToolResult; status: string }
  /** Still with the person or the add-on when the wait ended. */
  | { kind: 'waiting' }
  /** The holding process is gone without an answer: `allowed` means it may or may not have run. */
  | { kind: 'lost'; status: string }
  /** No such call of this app. */
  | { kind: 'unknown' };

/** Wakers per approval id, behind one subscription per channel for the whole process. */
class Wakers {
  private readonly byId = new Map<string, Set<() => void>>();
  private subscribed: Promise<unknown> | undefined;

  constructor(private readonly svc: Services) {}

  /** Listening before the row is read: an answer kept in between still wakes us. */
  async watch(id: string, wake: () => void): Promise<() => void> {
    this.subscribed ??= Promise.all([
      this.svc.bus.subscribe(HELD_RESULTS_CHANNEL, (msg) => this.wake(msg?.id)),
      // A sweep's expiry, or a cancelled task's approval, is announced here.
      this.svc.bus.subscribe(APPROVALS_CHANNEL, (msg) => this.wake(msg?.id)),
    ]).catch((err) => {
      this.subscribed = undefined;
      throw err;
    });
    await this.subscribed;
    let set = this.byId.get(id);
    if (!set) this.byId.set(id, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (!set.size) this.byId.delete(id);
    };
  }

  private wake(id: unknown) {
    if (typeof id === 'string') for (const wake of this.byId.get(id) ?? []) wake();
  }
}
const wakers = new WeakMap<Services, Wakers>();

/** A budget after it began running (or was asked) with no answer kept, whoever ran it is gone. */
const answerOverdue = (svc: Services) =>
  sql<boolean>`coalesce(${approvals.runAt}, ${approvals.createdAt}) < now() - ${`${svc.config.callBudgetSeconds + KEEP_MARGIN_S} seconds`}::interval`;

/** Waits until `untilMs` (epoch) for the answer of this app's held call. */
export async function awaitHeldResult(svc: Services, who: { userId: string; grantId: string }, approvalId: string, untilMs: number, signal?: CancelSignal): Promise<HeldAnswer> {
  let registry = wakers.get(svc);
  if (!registry) wakers.set(svc, (registry = new Wakers(svc)));
  // A wake during the read is not lost: it is remembered until the next wait.
  let woken = false;
  let wake: () => void = () => {};
  const unwatch = await registry.watch(approvalId, () => {
    woken = true;
    wake();
  });
  try {
    for (;;) {
      woken = false;
      const [row] = await svc.db
        .select({ userId: approvals.userId, grantId: approvals.grantId, status: approvals.status, result: approvals.result, overdue: answerOverdue(svc) })
        .from(approvals)
        .where(eq(approvals.id, approvalId));
      if (!row || row.userId !== who.userId || row.grantId !== who.grantId) return { kind: 'unknown' };
      if (row.result) return { kind: 'result', result: row.result as ToolResult, status: row.status };
      if (row.status !== 'pending' && row.overdue) return { kind: 'lost', status: row.status };
      const left = untilMs - svc.clock.now().getTime();
      if (left <= 0 || signal?.aborted) return { kind: 'waiting' };
      if (woken) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          wake = () => {};
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, RECHECK_MS));
        wake = done;
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    unwatch();
  }
}

/**
 * How long after the person decided a call its repeat (same app, tool and arguments) gets that
 * call's answer instead of a new approval: an app's own timeout (60 s in the SDKs) and a retry
 * land inside it; a deliberate repeat a few minutes later is asked again.
 */
const SAME_CALL_MINUTES = 2;

/** A call of this app with these exact arguments: still waiting for the person, or decided by them moments ago. */
export async function findSameCall(
  svc: Services,
  q: { userId: string; grantId: string; addonId: string; toolName: string; argumentsText: string },
): Promise<{ approvalId: string; result: ToolResult | null; status: string; createdAt: Date } | undefined> {
  const kept = sql`${approvals.result} is not null and ${approvals.resultAt} > now() - ${`${SAME_CALL_MINUTES} minutes`}::interval`;
  const [row] = await svc.db
    .select({ approvalId: approvals.id, result: approvals.result, status: approvals.status, createdAt: approvals.createdAt })
    .from(approvals)
    .where(
      and(
        eq(approvals.userId, q.userId),
        eq(approvals.grantId, q.grantId),
        eq(approvals.addonId, q.addonId),
        eq(approvals.toolName, q.toolName),
        eq(approvals.arguments, q.argumentsText),
        or(
          // Waiting for the person, or allowed and on its way to the add-on: wait for its answer.
          and(eq(approvals.status, 'pending'), sql`${approvals.expiresAt} > now()`),
          and(eq(approvals.status, 'allowed'), isNull(approvals.result), sql`not ${answerOverdue(svc)}`),
          // Decided by the person moments ago: a deny or dismissal, or an answer that did not fail
          // (a failure, "busy" or a timeout is tried again, with the person asked again).
          and(inArray(approvals.status, ['denied', 'dismissed']), kept),
          and(eq(approvals.status, 'allowed'), kept, sql`coalesce(${approvals.result} ->> 'isError', 'false') <> 'true'`),
        ),
      ),
    )
    .orderBy(desc(approvals.createdAt))
    .limit(1);
  return row ? { approvalId: row.approvalId, result: row.result as ToolResult | null, status: row.status, createdAt: row.createdAt } : undefined;
}
