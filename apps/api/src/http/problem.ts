import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { HTTP_STATUS, isDependencyDown, isToolportError, unavailable } from '@toolport/core';
import type { AppEnv } from './env';

const titles: Record<number, string> = {
  400: 'Bad request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not found', 409: 'Conflict', 410: 'Gone',
  413: 'Payload too large', 415: 'Unsupported media type', 422: 'Unprocessable content', 429: 'Too many requests',
  500: 'Internal error', 503: 'Service unavailable',
};

export function problem(c: Context<AppEnv>, status: ContentfulStatusCode, detail: string, extra: Record<string, unknown> = {}) {
  return c.body(
    JSON.stringify({ type: 'about:blank', title: titles[status] ?? 'Error', status, detail, ...extra }),
    status,
    { 'content-type': 'application/problem+json' },
  );
}

/** A restarting dependency is a retryable 503, not a 500 that reads like a bug. Logged once here. */
export function unavailableIfDown(err: unknown, c: Context<AppEnv>): unknown {
  if ((isToolportError(err) && err.expose) || !isDependencyDown(err)) return err;
  c.get('svc')?.log.warn('a dependency is unavailable', { err, requestId: c.get('requestId'), path: c.req.path });
  return unavailable();
}

/** The one mapping from the error family to problem+json. Unexpected errors are logged, never echoed. */
export function errorToProblem(err: unknown, c: Context<AppEnv>) {
  err = unavailableIfDown(err, c);
  if (isToolportError(err) && err.expose) {
    const { retryAfterSeconds, ...rest } = err.details;
    const status = HTTP_STATUS[err.code];
    if (retryAfterSeconds) c.header('Retry-After', String(retryAfterSeconds));
    if (status === 401 && !c.res.headers.get('WWW-Authenticate')) c.header('WWW-Authenticate', 'Bearer');
    return problem(c, status, err.message, { code: err.code, ...rest });
  }
  const svc = c.get('svc');
  svc?.log.error('unexpected error', { err, requestId: c.get('requestId'), path: c.req.path });
  return problem(c, 500, 'Something went wrong on our side. Try again in a moment.', { requestId: c.get('requestId') });
}
