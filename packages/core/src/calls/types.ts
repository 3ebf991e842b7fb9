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
}

export type ApprovalStatus = 'allowed' | 'denied' | 'dismissed' | 'expired' | 'cancelled' | 'revoked' | 'skipped';

export interface ApprovalDecision {
  status: ApprovalStatus;
  approvalId?: string;
  decidedBy?: string;
  /** When the decision was recorded (for the receipt an allowed call carries). */
  decidedAt?: Date;
}

/** Asks the person before a destructive call; resolves with the one recorded decision. */
export interface Approvals {
  request(req: ApprovalRequest): Promise<ApprovalDecision>;
}
