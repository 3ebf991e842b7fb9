export { createApprovals } from './request';
export type { ApprovalsOptions, ApprovalsService } from './request';
export { answerApprovalElicitation, decideApproval, decideApprovalWithToken, getApproval, listApprovals } from './decide';
export type { ElicitationAnswer, ListedApproval } from './decide';
export { openApprovalEvents, MAX_STREAMS_PER_PERSON } from './events';
export type { ApprovalEvents } from './events';
export { getPushKey, subscribePush, unsubscribePush } from './push';
export type { ApprovalPush } from './push';
export type { ApprovalView, RecordedDecision, UserEvent } from './records';
