import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isToolportError, oauthCodeOf, type ErrorCode } from '@toolport/core';
import type { AppEnv } from './env';
import { unavailableIfDown } from './problem';

const fallback: Partial<Record<ErrorCode, [string, ContentfulStatusCode]>> = {
  VALIDATION: ['invalid_request', 400],
  PAYLOAD_TOO_LARGE: ['invalid_request', 413],
  UNAUTHORIZED: ['invalid_client', 401],
  NOT_FOUND: ['not_found', 404],
  LIMIT_EXCEEDED: ['too_many_requests', 429],
  UNAVAILABLE: ['temporarily_unavailable', 503],
};

/** An RFC 6749 §5.2 error body, never cached. */
export function oauthJsonError(c: Context<AppEnv>, status: ContentfulStatusCode, error: string, description: string) {
  c.header('Cache-Control', 'no-store');
  c.header('Pragma', 'no-cache');
  return c.json({ error, error_description: description }, status);
}

/**
 * The one mapping from the error family to the OAuth error format for the JSON endpoints
 * (token, revoke, register, metadata). Unexpected errors are logged and answered `server_error`.
 */
export function oauthErrorResponse(err: unknown, c: Context<AppEnv>) {
  // RFC 6749's temporarily_unavailable (503): the app retries rather than reporting a server bug.
  err = unavailableIfDown(err, c);
  if (isToolportError(err) && err.expose) {
    const explicit = oauthCodeOf(err);
    const [mapped, mappedStatus] = fallback[err.code] ?? ['invalid_request', 400];
    const override = err.details.status;
    const status = (typeof override === 'number' ? override : mappedStatus) as ContentfulStatusCode;
    const error = explicit ?? (err.code === 'VALIDATION' && c.req.path.endsWith('/register') ? 'invalid_client_metadata' : mapped);
    if (err.details.retryAfterSeconds) c.header('Retry-After', String(err.details.retryAfterSeconds));
    // RFC 6749 §5.2: a 401 from client authentication names the scheme clients may use.
    if (status === 401) c.header('WWW-Authenticate', 'Basic realm="toolport", charset="UTF-8"');
    return oauthJsonError(c, status, error, err.message);
  }
  c.get('svc')?.log.error('unexpected error', { err, requestId: c.get('requestId'), path: c.req.path });
  return oauthJsonError(c, 500, 'server_error', 'Something went wrong on our side. Try again in a moment.');
}
