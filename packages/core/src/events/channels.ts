import type { UserEvent } from '../approvals/records';
import type { CallOutcome } from '../queue/types';

/** Messages cross processes (and releases, during a deploy): followers still check what they read. */

/** `{userId, grantId?}` (or `{}`: everyone's): a person's gates changed (AI apps, MCP URL, an app revoked, its tools). */
export const GATES_CHANNEL = 'gates';
/** `{addonId}`: an add-on's manifest, webhook, secrets or disabled flag changed. */
export const ADDONS_CHANNEL = 'addons';
/** `{userId}`: a person's installs or tool switches changed. */
export const TOOLS_CHANNEL = 'tools';
/** `{userId}` (or `{}`: everyone's): a person's approval rules changed (docs/approvals.md "Rules you set"). */
export const RULES_CHANNEL = 'approval-rules';
/** `{kid}`: the signing keys were rotated; every process reloads them. */
export const KEYS_CHANNEL = 'signing-keys';
/** `{taskId, cancel?}`: a task changed (its app may be listening), or its app cancelled it (calls/tasks.ts). */
export const TASKS_CHANNEL = 'tasks';
/** One channel for all approvals: a SUBSCRIBE per waiting call costs two Redis round trips. */
export const APPROVALS_CHANNEL = 'approvals:decided';
/** `{id}` (an approval's): its held call's answer is kept (approvals/held.ts), for a retry waiting anywhere. */
export const HELD_RESULTS_CHANNEL = 'approvals:result';

/**
 * Cancellation travels in two steps, each on its channel. An app's `notifications/cancelled` may
 * reach any API process: `{key}` (grant and request id) on this one reaches the process holding
 * the call, which aborts it (apps/api/src/routes/mcp/cancellation.ts)...
 */
export const REQUEST_CANCEL_CHANNEL = 'mcp-cancel';
/** ...and that process's dispatcher says `{callId, deadline}` here: workers stop retrying it, send nothing more. */
export const CANCEL_CHANNEL = 'calls:cancel';

/**
 * Live delivery streams (`toolport dev`): an API process holding a stream of an add-on says
 * `{addonId, ttlMs}` here on open and every 20 s; workers publish that add-on's attempts for the
 * next `ttlMs` as heard (a duration, not a time: the processes' clocks need not agree)...
 */
export const DELIVERY_WATCH_CHANNEL = 'deliveries:watch';
/** ...and a process that starts following, or whose bus reconnected, asks `{}` here: holders say it again. */
export const DELIVERY_WATCH_ASK_CHANNEL = 'deliveries:watch-ask';
/** One add-on's finished delivery attempts, published only while a stream of it is announced. */
export const liveDeliveryChannel = (addonId: string) => `live-deliveries:${addonId}` as const;

/** One finished attempt as a live stream shows it: the log row plus the tool and its (cut) arguments. */
export interface LiveDelivery {
  /** ISO 8601, when the attempt ended. */
  at: string;
  callId: string;
  type: string;
  tool: string;
  /** The arguments' JSON text as the webhook received it, cut to 2,048 characters ("…" when cut). */
  arguments: string;
  attempt: number;
  /**
   * `result`, `tool_error`, `refusal`, `confirm`, `addon_failed`, `late` or `failure` (then see
   * errorClass); `not_sent`: Toolport answered the call itself (attempt 0, errorClass the call log's
   * outcome such as `invalid_arguments`, detail the sentence the app was told).
   */
  outcome: string;
  status: number | null;
  errorClass: string | null;
  detail: string | null;
  latencyMs: number;
  /** The add-on's pseudonymous id for the person (`user.id`). */
  subject: string;
}

/** The person's live dashboard streams (`approval`, `approval.decided`). */
export const userChannel = (userId: string) => `user:${userId}` as const;
/** A call's outcome, to whichever process waits for it. */
export const resultChannel = (callId: string) => `result:${callId}` as const;
/** One API process's replies channel (BullMQ): `{callId, outcome}` for each of its calls. */
export const repliesChannel = (processId: string) => `replies:${processId}` as const;

/** Which process's change feed published a change (events/changes.ts): it heard it already. */
interface FromFeed {
  origin?: string;
}

export interface BusMessages {
  /** No userId: every grant of everyone (a release took tools from many apps' choices). */
  [GATES_CHANNEL]: { userId?: string; grantId?: string } & FromFeed;
  [ADDONS_CHANNEL]: { addonId: string } & FromFeed;
  [TOOLS_CHANNEL]: { userId: string } & FromFeed;
  /** No userId: every person's rules (a release removed tools). */
  [RULES_CHANNEL]: { userId?: string } & FromFeed;
  [KEYS_CHANNEL]: { kid: string };
  [APPROVALS_CHANNEL]: { id: string };
  [HELD_RESULTS_CHANNEL]: { id: string };
  [TASKS_CHANNEL]: { taskId: string; cancel?: boolean };
  [REQUEST_CANCEL_CHANNEL]: { key: string };
  [CANCEL_CHANNEL]: { callId: string; deadline: number };
  [channel: `user:${string}`]: UserEvent;
  [channel: `result:${string}`]: CallOutcome;
  [channel: `replies:${string}`]: { callId: string; outcome: CallOutcome };
  [DELIVERY_WATCH_CHANNEL]: { addonId: string; ttlMs: number };
  [DELIVERY_WATCH_ASK_CHANNEL]: Record<string, never>;
  [channel: `live-deliveries:${string}`]: LiveDelivery;
}

export type BusChannel = keyof BusMessages;
