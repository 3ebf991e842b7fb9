export { parseConfig, ConfigError, StartupError, productionSecretProblems, normalHost, isLoopbackHostname } from './config';
export type { Config, Role, TracingConfig, VapidConfig } from './config';
export { checkDependencies } from './startup';
export { createDatabase } from './db/client';
export { loadMasterKeys, secretBoxes, resealSecrets, STABLE_KEYS_SECRET } from './secrets';
export type { Secrets, SecretBoxes, ResealReport } from './secrets';
export { createServices, closeServices } from './services';
export type { Services, ServiceOverrides } from './services';
export type { Actor, Ctx } from './context';
export { HTTP_STATUS, ToolportError, isToolportError, isDependencyDown, unavailable } from './errors';
export type { ErrorCode, FieldError } from './errors';
export { createLogger } from './log';
export { flatUuid } from './ids';
export { CallCancel } from './cancel';
export type { CancelSignal } from './cancel';
export { startTracing } from './tracing';
export type { Logger } from './log';
export {
  signup,
  login,
  logout,
  readSession,
  getMe,
  getSettings,
  updateSettings,
  rotateUserKey,
  mcpUrlFor,
  SESSION_TTL_MS,
} from './accounts/accounts';
export { createApiKey, listApiKeys, revokeApiKey, verifyApiKey } from './keys/keys';
export type * from './addons/types';
export type * from './outbound/types';
export type * from './queue/types';
export { createOutboundClient, OutboundError } from './outbound/http-client';
export type { OutboundClientOptions, Resolver } from './outbound/http-client';
export { addressRange, isGlobalUnicast } from './outbound/address';
export { newSigningSecret, signatureHeaders } from './outbound/signing';
export type { SignatureInput } from './outbound/signing';
export { postWebhook, pingWebhook, safeSentence, MAX_RESULT_BYTES } from './outbound/webhook';
export type { PostWebhookInput, PingWebhookInput, WebhookDelivery, WebhookKind } from './outbound/webhook';
export {
  CALLS_QUEUE,
  checkEvictionPolicy,
  createBullDispatcher,
  createInProcessDispatcher,
  deliverCall,
  runDelivery,
  startCallWorker,
  startQueue,
  webhookBody,
} from './queue/index';
export type { AttemptResult, CallWorker, CallWorkerOptions, RedisSettings } from './queue/index';
export { createRedisBus } from './events/redis-bus';
export type { RedisBus } from './events/redis-bus';
export { createInProcessBus } from './events/bus';
export type { BusTransport } from './events/bus';
export { ADDONS_CHANNEL, GATES_CHANNEL, REQUEST_CANCEL_CHANNEL } from './events/channels';
export { listDeliveries } from './addons/deliveries';
export type { DeliveryEntry } from './addons/deliveries';
export {
  authorizationServerMetadata,
  protectedResourceMetadata,
  resourceMetadataUrl,
  wwwAuthenticate,
  issuerOf,
  TOOLS_SCOPE,
} from './oauth/metadata';
export type { TokenAuthMethod } from './oauth/metadata';
export { oauthError, oauthCodeOf } from './oauth/errors';
export type { OAuthErrorCode } from './oauth/errors';
export { registerClient, findClient, sanitizeClientName, REGISTRATION_LIMIT } from './oauth/clients';
export type { OAuthClient, ClientMetadata } from './oauth/clients';
export { redirectUriProblem, matchRedirectUri } from './oauth/redirect-uris';
export { prepareAuthorization, decideAuthorization, AUTHORIZE_PARAMS } from './oauth/authorize';
export type { AuthorizeOutcome, ConsentView, PersonSession } from './oauth/authorize';
export { exchangeToken, REFRESH_GRACE_MS, revokeToken } from './oauth/tokens';
export type { TokenResponse, TokenRequest } from './oauth/tokens';
export { rotateSigningKey, publicJwks, signAccessToken, ensureSigningKeys, settingsKey, ACCESS_TOKEN_TTL_S } from './oauth/keys';
export type { AccessTokenInput } from './oauth/keys';
export { verifyAccessToken, AI_APPS_OFF, GATE_CACHE_MS } from './oauth/verify';
export type { AppIdentity, VerifiedAccess } from './oauth/verify';
export { listConnections, revokeConnection, revokeGrant } from './oauth/grants';
export type { Connection } from './oauth/grants';
export { checkManifest, MANIFEST_LIMITS } from './addons/manifest';
export { lintManifest } from './addons/lint';
export { compileArguments, checkInputSchema, SCHEMA_LIMITS } from './addons/schema';
export { checkArguments, validatorFor, ARGUMENT_LIMITS } from './addons/arguments';
export { createMetrics, countPendingApprovals, dispatcherDepth } from './metrics';
export type { Metrics, MetricSources, ToolCallOutcome, ApprovalOutcome } from './metrics';
export {
  createApprovals,
  APPROVAL_TTL_SECONDS,
  decideApproval,
  decideApprovalWithToken,
  listApprovals,
  openApprovalEvents,
  MAX_STREAMS_PER_PERSON,
  getPushKey,
  subscribePush,
  unsubscribePush,
  sendApprovalPush,
  approvalPushPayload,
  approvalActionToken,
  expireOverdue,
} from './approvals/index';
export type { ApprovalsOptions, ApprovalsService, ListedApproval, ApprovalEvents, ApprovalPush, ApprovalView, RecordedDecision, UserEvent } from './approvals/index';
export {
  createAddon,
  updateAddon,
  getAddon,
  listAddons,
  listAddonVersions,
  deleteAddon,
  rotateAddonSecret,
  liveSecrets,
  SECRET_OVERLAP_MS,
} from './addons/registry';
export { listCatalog, listInstalls, installAddon, uninstallAddon, setToolSwitches } from './installs/installs';
export { acceptUpdate, acceptedCounts, diffTool, toolDigest } from './installs/releases';
export { decideListing, isOperator, listListings, visibleTo } from './addons/listings';
export type { ListingStatus } from './addons/listings';
export type { PendingUpdate, ToolChange } from './installs/releases';
export { callTool, CALL_DEADLINE_MS } from './calls/call-tool';
export { listCalls, recordCall } from './calls/call-log';
export type { CallRecord, CallOutcomeName } from './calls/call-log';
export { EnabledToolsCache, loadEnabledTools } from './calls/enabled-tools';
export type { EnabledTool, EnabledToolSet } from './calls/enabled-tools';
export type { ToolResult, Approvals, ApprovalRequest, ApprovalDecision, ApprovalStatus } from './calls/types';
export { runCheckScript } from './addons/check';
export type { CheckReport } from './addons/check';
export type { CallToolOptions } from './calls/call-tool';
