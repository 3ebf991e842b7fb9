/**
 * The one error family of Toolport, and the HTTP status of each code: the closed map every adapter
 * answers by (problem+json and the OAuth error format), with no per-error override.
 */
export const HTTP_STATUS = {
  /** A body that cannot be parsed: not valid JSON. */
  MALFORMED: 400,
  /** A request a protocol refuses with 400 by its own rules: OAuth's errors (RFC 6749 §5.2). */
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** Readable input that breaks a rule; `details.errors` lists every problem. */
  VALIDATION: 422,
  LIMIT_EXCEEDED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof HTTP_STATUS;

export interface FieldError {
  path: string;
  message: string;
}

export interface ErrorDetails {
  errors?: FieldError[];
  retryAfterSeconds?: number;
  /** The status comes from the code (HTTP_STATUS), never from an error's details. */
  status?: never;
  [key: string]: unknown;
}

export class ToolportError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  /** Whether `message` is safe to show to the caller. Unexpected errors never are. */
  readonly expose: boolean;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, expose = true) {
    super(message);
    this.name = 'ToolportError';
    this.code = code;
    this.details = details;
    this.expose = expose;
  }
}

export const validation = (message: string, errors?: FieldError[]) =>
  new ToolportError('VALIDATION', message, errors ? { errors } : {});
export const unauthorized = (message = 'Sign in first.') => new ToolportError('UNAUTHORIZED', message);
export const notFound = (what = 'That') => new ToolportError('NOT_FOUND', `${what} does not exist.`);
export const conflict = (message: string, details: ErrorDetails = {}) =>
  new ToolportError('CONFLICT', message, details);
export const limitExceeded = (message: string, retryAfterSeconds?: number) =>
  new ToolportError('LIMIT_EXCEEDED', message, retryAfterSeconds ? { retryAfterSeconds } : {});

export const isToolportError = (err: unknown): err is ToolportError => err instanceof ToolportError;

// Socket-level failures of the Postgres and Redis clients (postgres.js codes and Node's).
const DOWN_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
]);
// SQLSTATEs of a server that is going away, starting up, recovering or full: 08xxx (connection
// exception), 57P01-57P03 (shutdown, crash shutdown, cannot connect now), 53300 (too many connections).
const DOWN_SQLSTATE = /^(08...|57P0[123]|53300)$/;

/** Follows `cause` (drizzle wraps driver errors). Adapters answer these as 503, not an internal error. */
export function isDependencyDown(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string' && (DOWN_CODES.has(code) || DOWN_SQLSTATE.test(code))) return true;
    // ioredis: a command failed after its retries, or was sent on a connection that is gone.
    if (name === 'MaxRetriesPerRequestError') return true;
    if (typeof message === 'string' && /^(Connection is closed\.|Stream isn't writeable)/.test(message)) return true;
  }
  return false;
}

/** A request that failed because a dependency is down: retry shortly (what it changed, if anything, stands). */
export const unavailable = () =>
  new ToolportError('UNAVAILABLE', 'Toolport cannot reach its database or queue right now. Try again in a few seconds.', { retryAfterSeconds: 2 });
