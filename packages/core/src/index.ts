export { parseConfig, ConfigError } from './config';
export type { Config, Role } from './config';
export { createServices, closeServices } from './services';
export type { Services, ServiceOverrides } from './services';
export type { Actor, Ctx } from './context';
export { ToolportError, isToolportError } from './errors';
export type { ErrorCode, FieldError } from './errors';
export { createLogger } from './log';
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
