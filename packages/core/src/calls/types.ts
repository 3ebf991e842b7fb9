import type { ContentBlock } from '../outbound/types';
import type { EnabledTool } from './enabled-tools';
import type { CancelSignal } from '../cancel';
import type { TaskView } from './tasks';

/** An MCP CallToolResult as Toolport produces it. */
export interface ToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ApprovalRequest {
  callId: string;
  userId: string;
  grantId?: string;
  clientId: string;
  appName: string;
  tool: EnabledTool;
  /** The exact JSON text that will be sent if the person allows. */
  argumentsText: string;
  /** The person's pseudonym for this add-on (for the tool.confirm delivery). */
  subject: string;
  /** The app's session as this add-on sees it (for the tool.confirm delivery). */
  session?: string;
  signal?: CancelSignal;
  /** The app's exchange watching this call. */
  watcher?: CallWatcher;
  /** A `confirm` add-on answering null then gives no description, and the person is still asked. */
  mustAsk?: boolean;
  /** A task's call, which its app polls: a process that stops hands it over rather than cancelling it. */
  durable?: boolean;
}

/**
 * What the app's exchange may show of its call while it runs. The core says what happened; each
 * adapter (2025-11-25 JSON or SSE, 2026-07-28, tasks) renders it as its revision does.
 */
export type CallEvent =
  /** Still waiting for the person (sent only to a watcher that asked for progress). */
  | { kind: 'progress'; message: string }
  /** A page the app may open for the person (URL elicitation); only to a watcher that can offer one. */
  | { kind: 'offer'; link: ElicitationLink }
  /** The call is recorded as waiting for the person: the exchange need keep nothing else of it. */
  | { kind: 'held' }
  /** The call runs as this task (only for a watcher that took one), before the add-on hears of it. */
  | { kind: 'task'; task: TaskView };

/** The app's exchange watching its call: what it can show, and where the call's events go. */
export interface CallWatcher {
  /** The app asked to hear how the call goes (a progress token). */
  readonly progress?: boolean;
  /** URL elicitation: declared by this request (2026-07-28), or as its grant recorded at initialize; absent: never offered. */
  readonly elicitation?: 'declared' | 'grant';
  /** The app takes a task handle for a tool that may outlast one request (MCP Tasks). */
  readonly task?: boolean;
  /** Must not throw, and must not keep the request's frames alive: a held call lives up to 30 s. */
  on(event: CallEvent): void;
}

/** An approval's page, or an account's connect page; the app's answer means nothing either way. */
export interface ElicitationLink {
  kind: 'approval' | 'account';
  /** The approval's id (`apr_...`) for an approval; a fresh one (`con_...`) for a connect link. */
  elicitationId: string;
  url: string;
  /** One sentence naming the tool (or the account) and the add-on. */
  message: string;
}

export type ApprovalStatus = 'allowed' | 'denied' | 'dismissed' | 'expired' | 'cancelled' | 'revoked' | 'skipped';

export interface ApprovalDecision {
  status: ApprovalStatus;
  approvalId?: string;
  decidedBy?: string;
  /** When the decision was recorded (for the receipt an allowed call carries). */
  decidedAt?: Date;
  /** The person's reason for a deny (plain text, at most 500 characters), passed on to the model. */
  reason?: string;
  /** Another process took the decided call over while this one looked gone: it finishes the call, not this one. */
  finishedElsewhere?: boolean;
}

/** Asks the person before a destructive call; resolves with the one recorded decision. */
export interface Approvals {
  request(req: ApprovalRequest): Promise<ApprovalDecision>;
}
