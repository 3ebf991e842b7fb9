import type { UserEvent } from '../approvals/records';
import type { CallOutcome } from '../queue/types';

/**
 * Every bus channel, named once, and the message each carries (`BusMessages`): the bus's publish
 * and subscribe are typed by it, so a channel's publishers and followers agree on one shape.
 * Messages cross processes (and releases, during a deploy): followers still check what they read.
 */

/** `{userId, grantId?}`: a person's gates changed (AI apps, MCP URL, an app revoked). */
export const GATES_CHANNEL = 'gates';
/** `{addonId}`: an add-on's manifest, webhook, secrets or disabled flag changed. */
export const ADDONS_CHANNEL = 'addons';
/** `{userId}`: a person's installs or tool switches changed. */
export const TOOLS_CHANNEL = 'tools';
/** `{kid}`: the signing keys were rotated; every process reloads them. */
export const KEYS_CHANNEL = 'signing-keys';
/**
 * `{id}`: an approval was decided (or ended); the API process holding its call wakes it. One
 * channel for all approvals: a SUBSCRIBE per waiting call cost two Redis round trips and a channel.
 */
export const APPROVALS_CHANNEL = 'approvals:decided';

/**
 * Cancellation travels in two steps, each on its channel. An app's `notifications/cancelled` may
 * reach any API process: `{key}` (grant and request id) on this one reaches the process holding
 * the call, which aborts it (apps/api/src/routes/mcp/cancellation.ts)...
 */
export const REQUEST_CANCEL_CHANNEL = 'mcp-cancel';
/** ...and that process's dispatcher says `{callId, deadline}` here: workers stop retrying it, send nothing more. */
export const CANCEL_CHANNEL = 'calls:cancel';

/** The person's live dashboard streams (`approval`, `approval.decided`). */
export const userChannel = (userId: string) => `user:${userId}` as const;
/** A call's outcome, to whichever process waits for it. */
export const resultChannel = (callId: string) => `result:${callId}` as const;
/** One API process's replies channel (BullMQ): `{callId, outcome}` for each of its calls. */
export const repliesChannel = (processId: string) => `replies:${processId}` as const;

export interface BusMessages {
  [GATES_CHANNEL]: { userId: string; grantId?: string };
  [ADDONS_CHANNEL]: { addonId: string };
  [TOOLS_CHANNEL]: { userId: string };
  [KEYS_CHANNEL]: { kid: string };
  [APPROVALS_CHANNEL]: { id: string };
  [REQUEST_CANCEL_CHANNEL]: { key: string };
  [CANCEL_CHANNEL]: { callId: string; deadline: number };
  [channel: `user:${string}`]: UserEvent;
  [channel: `result:${string}`]: CallOutcome;
  [channel: `replies:${string}`]: { callId: string; outcome: CallOutcome };
}

export type BusChannel = keyof BusMessages;
