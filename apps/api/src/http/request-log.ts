import { performance } from 'node:perf_hooks';
import { isSpanContextValid, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Services } from '@toolport/core';
import type { AppEnv } from './env';

/** Probes and scrapes: frequent, uninteresting, and they would drown the log and the traces. */
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One JSON line per request (`msg: "request"`): method, route pattern (never the raw path, which
 * holds user keys and ids; never the query, which may hold tokens), status, duration, request id,
 * and the trace id when traced. No header, cookie or body is logged. Each request is also a server
 * span named by its route pattern, the parent of `mcp tools/call`. A trace context sent by the
 * client is not joined: a public endpoint does not let callers pick trace ids.
 */
export function logRequests(svc: Services): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (QUIET.has(c.req.path)) return next();
    const method = c.req.method;
    const started = performance.now();
    await trace.getTracer('toolport').startActiveSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, async (span) => {
      try {
        await next();
      } finally {
        const route = routePath(c) || 'unmatched';
        const status = c.res.status;
        span.updateName(`${method} ${route}`);
        span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        const spanContext = span.spanContext();
        svc.log.info('request', {
          method,
          route,
          status,
          durationMs: Math.round((performance.now() - started) * 10) / 10,
          requestId: c.get('requestId'),
          ...(isSpanContextValid(spanContext) ? { traceId: spanContext.traceId } : {}),
        });
        span.end();
      }
    });
  };
}
