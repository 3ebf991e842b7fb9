import { createHash } from 'node:crypto';
import type { ConfirmDescriptor, ResultAnswer } from '../outbound/types';
import type { CancelSignal } from '../cancel';

/** Never a secret in clear: settings and account tokens travel sealed; only the worker opens them. */
export interface CallJob {
  /** `call_...`: the webhook-id on every attempt, the idempotency key. */
  callId: string;
  type: 'tool.call' | 'tool.confirm';
  addonId: string;
  tool: string;
  /** The arguments' exact JSON text, sent byte for byte. */
  arguments: string;
  /** The person's pseudonymous id for this add-on. */
  subject: string;
  app: { name: string; clientId: string };
  /** The app's session or conversation, pseudonymous per add-on (`call.session`); absent when the app sent none. */
  session?: string;
  /** Whose the answer's files are (calls/artifacts.ts): the person and the app that made the call. */
  owner?: { userId: string; grantId: string };
  /** Epoch ms after which nothing is delivered: each attempt is cut to it. */
  deadline: number;
  /** A task's call (calls/tasks.ts): the add-on may accept it (HTTP 202) and answer at `answerUrl` until `answerBy` (epoch ms). */
  answerBy?: number;
  answerUrl?: string;
  /** The person's approval of this call, sent in the signed body (allowed destructive calls only). */
  approval?: ApprovalReceipt;
  /** Sealed: opened only by the worker, never in Redis or a log in clear. */
  settings?: string;
  /** Sealed, like `settings`. */
  accounts?: string;
  /** W3C Trace Context, so the worker's spans are children of the dispatch. Never sent to the add-on. */
  traceparent?: string;
  tracestate?: string;
  /** Without it the outcome goes to `result:{callId}`, as jobs of older processes expect. */
  replyTo?: string;
}

/** What an add-on receives as proof that a person allowed this exact call. */
export interface ApprovalReceipt {
  /** `apr_...`: the approval the person answered. */
  id: string;
  /** ISO 8601, when the allow was recorded. */
  decidedAt: string;
  /** Where the person decided: `dashboard` or `push`. */
  channel: string;
  /** `sha256:` and the hex SHA-256 of the call's `arguments` JSON text, as shown to the person and sent. */
  argumentsHash: string;
}

export const argumentsHash = (argumentsText: string) => `sha256:${createHash('sha256').update(argumentsText, 'utf8').digest('hex')}`;

/** What the waiting caller learns. `failure.message` is a short, safe sentence for the app. */
export type CallOutcome =
  | ResultAnswer
  | { kind: 'refusal'; message: string }
  | { kind: 'confirm'; confirm: ConfirmDescriptor | null }
  /**
   * `sent`: whether some attempt may have reached the add-on (false only when none can have);
   * absent where nobody knows (a worker of an older release, a failure before delivery).
   */
  | { kind: 'failure'; errorClass: string; message: string; sent?: boolean }
  /** A task's add-on took the call and answers later at its answer URL. */
  | { kind: 'accepted' };

/** Hands a job to a worker and resolves with its outcome, whichever process ran it. */
export interface Dispatcher {
  dispatch(job: CallJob, signal?: CancelSignal): Promise<CallOutcome>;
  close(): Promise<void>;
}
