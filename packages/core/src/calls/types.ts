import type { ContentBlock } from '../outbound/types';
import type { EnabledTool } from './enabled-tools';
import type { CancelSignal } from '../cancel';

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
  signal?: CancelSignal;
  /** Tells a waiting app where the person is being asked. */
  progress?: (message: string) => Promise<void>;
  /** Called once the call is recorded as waiting for the person (not when no one is asked). */
  onHold?: () => void;
  /** A `confirm` add-on answering null then gives no description, and the person is still asked. */
  mustAsk?: boolean;
  /** URL-mode elicitation: the app's answer never decides the call, only the person does. */
  elicit?: (link: ElicitationLink) => void;
  /** The request itself declared URL elicitation (2026-07-28 sends capabilities with each); else the grant's record from initialize. */
  elicitDeclared?: boolean;
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
}

/** Asks the person before a destructive call; resolves with the one recorded decision. */
export interface Approvals {
  request(req: ApprovalRequest): Promise<ApprovalDecision>;
}
