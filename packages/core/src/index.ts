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
