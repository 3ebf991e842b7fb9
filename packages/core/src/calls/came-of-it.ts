import { and, eq, inArray } from 'drizzle-orm';
import { calls } from '../db/schema/index';
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

/** A call's log row, as far as what came of it goes (null: not written yet). */
interface Ended {
  outcome: string;
  /** A failure's error class (or the sentence of a refusal, unused here). */
  detail: string | null;
  /** Whether a failed call may have reached its add-on, as its delivery knew; null: not known. */
  sent: boolean | null;
}

const CHECK = 'it may or may not have run, so check before trying again';

/** Why a call that was certainly not sent was not, from its final error class. */
function notReached(errorClass: string | null): string {
  switch (errorClass) {
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
    case 'deadline':
    case 'timeout':
      return 'it ran out of time before it could be sent, so it did not run';
    default:
      return 'it was not sent, so it did not run';
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
 * What came of an allowed call, from its log row. "Did not run" only where its delivery knew no
 * attempt can have reached the add-on (queue/deliver.ts `sent`); unsure is "may or may not".
 */
export function cameOfIt(row: Ended | null | undefined): CameOfIt {
  if (!row || row.outcome === 'running') return { ran: 'running', done: false, sentence: 'it is at the add-on now' };
  const { outcome, detail } = row;
  if (outcome === 'ok') return { ran: 'yes', done: true, sentence: 'done' };
  if (outcome === 'refused') return { ran: 'yes', done: false, sentence: 'the add-on answered that it did not do it' };
  const stopped = STOPPED_FIRST[outcome];
  if (stopped) return { ran: 'no', done: false, sentence: stopped };
  if (row.sent === false) return { ran: 'no', done: false, sentence: notReached(detail) };
  if (detail?.startsWith('output_schema')) {
    return { ran: 'yes', done: false, sentence: 'the add-on answered, but not in the shape this tool promises, so the app was not given its answer' };
  }
  switch (outcome) {
    case 'timed_out':
      return { ran: 'maybe', done: false, sentence: `the add-on did not answer in time: ${CHECK}` };
    case 'lost':
      return { ran: 'maybe', done: false, sentence: `Toolport restarted while the add-on had it: ${CHECK}` };
    case 'cancelled':
      return { ran: 'maybe', done: false, sentence: `the app cancelled it: ${CHECK}` };
    default:
      return { ran: 'maybe', done: false, sentence: `the add-on failed while handling it: ${CHECK}` };
  }
}

/** What came of each of the person's allowed calls, by call id. */
export async function cameOfCalls(svc: Services, userId: string, callIds: string[]): Promise<Map<string, CameOfIt>> {
  const found = new Map<string, CameOfIt>();
  if (!callIds.length) return found;
  await svc.logs.flushed();
  const rows = await svc.db
    .select({ id: calls.id, outcome: calls.outcome, detail: calls.detail, sent: calls.sent })
    .from(calls)
    .where(and(eq(calls.userId, userId), inArray(calls.id, callIds)));
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const id of callIds) found.set(id, cameOfIt(byId.get(id)));
  return found;
}
