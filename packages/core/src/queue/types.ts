import type { ConfirmDescriptor, ContentBlock } from '../outbound/types';
import type { CancelSignal } from '../cancel';

/** One delivery to an add-on's webhook. Carries ids and the call's own data, never secrets. */
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
  /** Epoch ms after which nothing is delivered. */
  deadline: number;
  /**
   * W3C Trace Context of the dispatching span, set by the BullMQ dispatcher when a trace is being
   * recorded, so the worker's spans (another process) are its children. Never sent to the add-on.
   */
  traceparent?: string;
  tracestate?: string;
  /**
   * The bus channel of the API process waiting for the outcome (BullMQ only). Without it, the
   * outcome goes to the call's own channel (`result:{callId}`), as jobs of older processes expect.
   */
  replyTo?: string;
}

/** What the waiting caller learns. `failure.message` is a short, safe sentence for the app. */
export type CallOutcome =
  | { kind: 'result'; content: ContentBlock[]; structuredContent?: Record<string, unknown> }
  | { kind: 'refusal'; message: string }
  | { kind: 'confirm'; confirm: ConfirmDescriptor | null }
  | { kind: 'failure'; errorClass: string; message: string };

/** Hands a job to a worker and resolves with its outcome, whichever process ran it. */
export interface Dispatcher {
  dispatch(job: CallJob, signal?: CancelSignal): Promise<CallOutcome>;
  close(): Promise<void>;
}
