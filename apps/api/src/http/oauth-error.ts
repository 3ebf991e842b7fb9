import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { HTTP_STATUS, isToolportError, oauthCodeOf, type ErrorCode } from '@toolport/core';
import type { AppEnv } from './env';
import { unavailableIfDown } from './problem';

/** The OAuth `error` of a Toolport error made without one (`oauthError` names its own). */
const oauthCodes: Partial<Record<ErrorCode, string>> = {
  UNAUTHORIZED: 'invalid_client',
  NOT_FOUND: 'not_found',
  LIMIT_EXCEEDED: 'too_many_requests',
  UNAVAILABLE: 'temporarily_unavailable',
};
/** At the registration endpoint, a body that is not JSON client metadata is invalid_client_metadata (RFC 7591 §3.2.2). */
const NOT_METADATA: ReadonlySet<ErrorCode> = new Set(['VALIDATION', 'MALFORMED', 'UNSUPPORTED_MEDIA_TYPE']);

/** An RFC 6749 §5.2 error body, never cached. */
function oauthJsonError(c: Context<AppEnv>, status: ContentfulStatusCode, error: string, description: string) {
  c.header('Cache-Control', 'no-store');
  c.header('Pragma', 'no-cache');
  return c.json({ error, error_description: description }, status);
}

/** Unexpected errors are logged and answered `server_error`, never echoed. */
export function oauthErrorResponse(err: unknown, c: Context<AppEnv>) {
  // RFC 6749's temporarily_unavailable (503): the app retries rather than reporting a server bug.
  err = unavailableIfDown(err, c);
  if (isToolportError(err) && err.expose) {
    const status = HTTP_STATUS[err.code];
    const error =
      oauthCodeOf(err) ??
      (NOT_METADATA.has(err.code) && c.req.path.endsWith('/register') ? 'invalid_client_metadata' : (oauthCodes[err.code] ?? 'invalid_request'));
    if (err.details.retryAfterSeconds) c.header('Retry-After', String(err.details.retryAfterSeconds));
    // RFC 6749 §5.2: a 401 from client authentication names the scheme clients may use.
    if (status === 401) c.header('WWW-Authenticate', 'Basic realm="toolport", charset="UTF-8"');
    return oauthJsonError(c, status, error, err.message);
  }
  c.get('svc')?.log.error('unexpected error', { err, requestId: c.get('requestId'), path: c.req.path });
  return oauthJsonError(c, 500, 'server_error', 'Something went wrong on our side. Try again in a moment.');
}
