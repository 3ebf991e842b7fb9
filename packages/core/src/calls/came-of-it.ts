import { and, eq, inArray } from 'drizzle-orm';
import { calls, deliveries } from '../db/schema/index';
import { neverSent } from '../outbound/http-client';
import type { Services } from '../services';

/*
 * What came of a call the person allowed, told with the decision wherever they see it (Recent
 * approvals, the approval's and the call's pages, the push that follows a failure): "Allowed" alone
 * let a person believe a file was deleted when the add-on could not be reached.
 */

/** Whether the add-on can have acted on the call: certainly, certainly not, unsure, or not yet known. */
export type Ran = 'yes' | 'no' | 'maybe' | 'running';

export interface CameOfIt {
  ran: Ran;
  /** Whether it did what was allowed: `ok` only when the add-on answered that it did. */
  done: boolean;
  /** Follows "Allowed · ", in the person's words. */
  sentence: string;
}

/** One attempt at the add-on's webhook, as the delivery log keeps it. */
interface Attempt {
  status: number | null;
  errorClass: string | null;
  detail: string | null;
}

/** `deadline` and `gone` are Toolport's own refusals before sending (queue/deliver.ts). */
const reached = (a: Attempt) => a.status !== null || !(a.errorClass === 'deadline' || a.errorClass === 'gone' || neverSent(a.errorClass ?? '', a.detail ?? ''));

const CHECK = 'it may or may not have run, so check before trying again';

/** Why the add-on was never reached, from the last attempt. */
function notReached(last: Attempt | undefined): string {
  switch (last?.errorClass) {
    case 'connect':
    case 'dns':
    case 'tls':
      return 'the add-on could not be reached, so it did not run';
    case 'bad_url':
    case 'blocked_address':
      return 'the add-on’s address is not one Toolport may call, so it did not run';
    case 'gone':
      return 'the add-on is no longer available, so it did not run';
    case 'cancelled':
      return 'the app cancelled it before it was sent, so it did not run';
    default:
      return 'it ran out of time before it could be sent, so it did not run';
  }
}

/** Outcomes recorded before anything was sent: why it did not run. */
const STOPPED_FIRST: Record<string, string> = {
  revoked: 'the app’s access ended first, so it did not run',
  ai_apps_off: 'AI apps were turned off first, so it did not run',
  disabled: 'the add-on was switched off first, so it did not run',
  switched_off: 'the tool was switched off first, so it did not run',
  not_given: 'the tool was taken from this app first, so it did not run',
  held_off: 'the add-on was taken off the catalog first, so it did not run',
  limited: 'a limit held it back, so it did not run',
  needs_setup: 'the add-on needs setting up first, so it did not run',
};

/**
 * What came of an allowed call, from its log row's outcome (null: not ended yet) and its attempts
 * at the add-on (call deliveries only, oldest first).
 */
export function cameOfIt(outcome: string | null, attempts: Attempt[]): CameOfIt {
  if (outcome === null || outcome === 'running') return { ran: 'running', done: false, sentence: 'it is at the add-on now' };
  if (outcome === 'ok') return { ran: 'yes', done: true, sentence: 'done' };
  if (outcome === 'refused') return { ran: 'yes', done: false, sentence: 'the add-on answered that it did not do it' };
  const stopped = STOPPED_FIRST[outcome];
  if (stopped) return { ran: 'no', done: false, sentence: stopped };
  // "Did not run" only on the attempts' evidence: with none read yet (a worker's rows come a moment
  // later), the add-on may have it.
  if (attempts.length && !attempts.some(reached)) return { ran: 'no', done: false, sentence: notReached(attempts.at(-1)) };
  switch (outcome) {
    case 'timed_out':
      return { ran: 'maybe', done: false, sentence: `the add-on did not answer in time: ${CHECK}` };
    case 'lost':
      return { ran: 'maybe', done: false, sentence: `Toolport restarted while the add-on had it: ${CHECK}` };
    case 'cancelled':
      return { ran: 'maybe', done: false, sentence: `the app cancelled it while the add-on had it: ${CHECK}` };
    default:
      return { ran: 'maybe', done: false, sentence: `the add-on failed while handling it: ${CHECK}` };
  }
}

/** What came of each of the person's allowed calls, by call id (a call whose row is not written yet reads running). */
export async function cameOfCalls(svc: Services, userId: string, callIds: string[]): Promise<Map<string, CameOfIt>> {
  const found = new Map<string, CameOfIt>();
  if (!callIds.length) return found;
  await svc.logs.flushed();
  const [rows, attempts] = await Promise.all([
    svc.db.select({ id: calls.id, outcome: calls.outcome }).from(calls).where(and(eq(calls.userId, userId), inArray(calls.id, callIds))),
    svc.db
      .select({ callId: deliveries.callId, status: deliveries.status, errorClass: deliveries.errorClass, detail: deliveries.detail })
      .from(deliveries)
      .where(and(inArray(deliveries.callId, callIds), eq(deliveries.type, 'tool.call')))
      .orderBy(deliveries.createdAt),
  ]);
  const outcomes = new Map(rows.map((r) => [r.id, r.outcome]));
  for (const id of callIds) found.set(id, cameOfIt(outcomes.get(id) ?? null, attempts.filter((a) => a.callId === id)));
  return found;
}
