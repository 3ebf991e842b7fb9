export { parseConfig, ConfigError, StartupError, productionSecretProblems, normalHost, isLoopbackHostname } from './config';
export type { Config } from './config';
export { checkDependencies } from './startup';
export { createDatabase } from './db/client';
export { loadMasterKeys, secretBoxes, resealSecrets, STABLE_KEYS_SECRET } from './secrets';
export type { ResealReport } from './secrets';
export { createServices, closeServices } from './services';
export type { Services, ServiceOverrides } from './services';
export type { Actor, Ctx } from './context';
export { HTTP_STATUS, ToolportError, isToolportError, isDependencyDown, unavailable } from './errors';
export type { ErrorCode, FieldError } from './errors';
export { createLogger } from './log';
export { flatUuid } from './ids';
export { CallCancel } from './cancel';
export { startTracing } from './tracing';
export type { Logger } from './log';
export {
  signup,
  login,
  getMe,
  getSessionState,
  getSettings,
  updateSettings,
  rotateUserKey,
  requestPasswordReset,
  resetPassword,
  verifyEmail,
  resendVerification,
  changePassword,
  signOutOthers,
} from './accounts/accounts';
export { endSession, listSessions, logout, readSession } from './accounts/sessions';
export { DEVICE_COOKIE_MAX_AGE_SECONDS } from './accounts/devices';
export { addPasskey, listPasskeys, passkeyRegistrationOptions, passkeySignInOptions, removePasskey, signInWithPasskey } from './accounts/passkeys';
export { deleteAccount, exportAccount } from './accounts/leaving';
export { apiKeyActive, createApiKey, listApiKeys, revokeApiKey, verifyApiKey } from './keys/keys';
export type * from './addons/types';
export type * from './outbound/types';
export type * from './queue/types';
export { OutboundError } from './outbound/http-client';
export {
  CALLS_QUEUE,
  checkEvictionPolicy,
  createInProcessDispatcher,
} from './queue/index';
export { createRedisBus } from './events/redis-bus';
export { createInProcessBus } from './events/bus';
export type { BusTransport } from './events/bus';
export { ADDONS_CHANNEL, GATES_CHANNEL, REQUEST_CANCEL_CHANNEL, TASKS_CHANNEL, TOOLS_CHANNEL } from './events/channels';
export { listDeliveries } from './addons/deliveries';
export { openLiveDeliveries } from './addons/live-deliveries';
export type { LiveDeliveries } from './addons/live-deliveries';
export type { LiveDelivery } from './events/channels';
export {
  authorizationServerMetadata,
  protectedResourceMetadata,
  signInFor,
  wwwAuthenticate,
  TOOLS_SCOPE,
} from './oauth/metadata';
export { oauthError, oauthCodeOf } from './oauth/errors';
export { registerClient } from './oauth/clients';
export { prepareAuthorization, decideAuthorization } from './oauth/authorize';
export type { AuthorizeOutcome, ConsentView, PersonSession } from './oauth/authorize';
export { exchangeToken, REFRESH_GRACE_MS, revokeToken } from './oauth/tokens';
export { rotateSigningKey, publicJwks, signAccessToken, ensureSigningKeys, settingsKey, ACCESS_TOKEN_TTL_S } from './oauth/keys';
export { verifyAccessToken, AI_APPS_OFF, GATE_CACHE_MS } from './oauth/verify';
export type { AppIdentity, VerifiedAccess } from './oauth/verify';
export { listConnections, revokeConnection } from './oauth/grants';
export { setConnectionAsk, setConnectionTools } from './oauth/tool-choices';
export { declaresUrlElicitation, recordUrlElicitation } from './oauth/elicitation';
export { checkManifest } from './addons/manifest';
export { getIcon } from './addons/icons';
export { lintManifest } from './addons/lint';
export { compileArguments, SCHEMA_LIMITS } from './addons/schema';
export { checkArguments, validatorFor, ARGUMENT_LIMITS } from './addons/arguments';
export { createMetrics, dispatcherDepth } from './metrics';
export {
  answerApprovalElicitation,
  createApprovals,
  decideApproval,
  getApproval,
  decideApprovalWithToken,
  listApprovals,
  openApprovalEvents,
  MAX_STREAMS_PER_PERSON,
  getPushKey,
  subscribePush,
  unsubscribePush,
  awaitHeldResult,
  issueRequestState,
  keepHeldResult,
  readRequestState,
  RESULT_KEPT_MINUTES,
} from './approvals/index';
export type { ApprovalsService, ApprovalEvents, ElicitationAnswer, UserEvent } from './approvals/index';
export {
  createAddon,
  updateAddon,
  getAddon,
  listAddons,
  listAddonVersions,
  deleteAddon,
  rotateAddonSecret,
} from './addons/registry';
export { endDevSession, renewDevSession, startDevSession } from './addons/dev-sessions';
export { liveSecrets } from './addons/signing-secrets';
export { deleteAddonOauthClient, listAddonOauthClients, setAddonOauthClient } from './addons/oauth-clients';
export { getCatalogEntry, listCatalog, listInstalls, installAddon, uninstallAddon, setToolSwitches } from './installs/installs';
export { acceptUpdate } from './installs/releases';
export { getInstallSettings, setInstallSettings } from './installs/settings';
export { disconnectAccount, finishAccountLink, listConnectedAccounts, listInstallAccounts, startAccountLink } from './installs/connected-accounts';
export { decideListing, listListings } from './addons/listings';
export { getRegistryEntry, listRegistryEntries, registryNamespace } from './addons/registry-entries';
export { callTool } from './calls/call-tool';
export { readArtifact } from './calls/artifacts';
export { toolListsChanged } from './installs/tool-lists';
export { listCalls, recordCall } from './calls/call-log';
export { callActivity } from './calls/activity';
export { clearCallHistory, forgetOldLogs } from './calls/retention';
export { exportAudit, exportDeploymentAudit } from './audit/export';
export type { AuditExport } from './audit/export';
export { callLife } from './calls/life';
export { awaitTask, cancelRunningCall, cancelTask, getTask, isLongTool, runningCalls, runsAsTask, type TaskView } from './calls/tasks';
export { answerLater, MAX_ANSWER_BODY } from './calls/answer-later';
export type { SignedMessage } from './outbound/signing';
export type { EnabledToolSet } from './calls/enabled-tools';
export type { CallEvent, CallWatcher, ElicitationLink, ToolResult, Approvals } from './calls/types';
export { runCheckScript } from './addons/check';
export { listRules, setRule, removeRule } from './approvals/rules';
export { getConfirmImage } from './approvals/confirm-images';
export type { RuleMode, RuleView } from './approvals/rules';
