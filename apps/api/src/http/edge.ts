import { performance } from 'node:perf_hooks';
import { isSpanContextValid, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { routePath } from 'hono/route';
import { flatUuid, type Services } from '@toolport/core';
import { isParked, nodeResponse, type AppEnv } from './env';
import { hostAllowed, misdirected } from './host-check';

/**
 * Probes and scrapes: answered whatever the Host (kubelet sends `Host: 10.x.y.z:8080`; they carry
 * no person's data), and neither logged nor traced (frequent, uninteresting, they would drown both).
 */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

const SECURITY_HEADERS = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
] as const;

/**
 * One middleware, since a held MCP call keeps every middleware's frame alive for up to 30 s.
 * - Metrics by route pattern, never the raw path (it holds keys).
 * - Headers go straight onto Node's response: setting `c.res` makes Hono rebuild it.
 * - Logs and spans carry no header, cookie, body or query; a client's trace context is not joined.
 */
export function requestEdge(svc: Services, inFlight: RequestsInFlight = { count: 0 }): MiddlewareHandler<AppEnv> {
  const tracer = trace.getTracer('toolport');
  const edge = { svc, inFlight };
  return (c, next) => {
    const started = performance.now();
    if (PROBES.has(c.req.path)) return passThrough(edge, c, next, started);
    const method = c.req.method;
    return tracer.startActiveSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, (span) =>
      passThrough(edge, c, next, started, span),
    );
  };
}

/** A parked request counts until its response closes; a stopping server waits for them (server.ts). */
export interface RequestsInFlight {
  count: number;
}

interface Edge {
  svc: Services;
  inFlight: RequestsInFlight;
}

/** A module function, not a closure per request (see InFlight in routes/mcp/cancellation.ts). */
async function passThrough(edge: Edge, c: Context<AppEnv>, next: Next, started: number, span?: Span) {
  const { svc } = edge;
  const method = c.req.method;
  c.set('svc', svc);
  c.set('inFlight', edge.inFlight);
  c.set('requestId', c.req.header('x-request-id')?.slice(0, 64) || flatUuid());
  const outgoing = nodeResponse(c);
  const early = !!outgoing && !outgoing.headersSent;
  if (early) for (const [name, value] of SECURITY_HEADERS) outgoing.setHeader(name, value);
  // Counted from here: the `finally` below ends every request counted (endRequest).
  edge.inFlight.count++;
  try {
    if (!span || hostAllowed(svc.config, c.req.header('host'))) await next();
    else c.res = misdirected(c);
  } finally {
    if (!early) for (const [name, value] of SECURITY_HEADERS) if (!c.res.headers.has(name)) c.header(name, value);
    const route = routePath(c) || 'unmatched';
    const requestId = c.get('requestId');
    // A parked request (a call held for approval) answers later on Node's response: it ends then.
    if (outgoing && isParked(c.res)) {
      const end = () => endRequest(edge, method, route, outgoing.statusCode, started, requestId, span);
      // The app may have gone while its request was being parked: then its 'close' came already.
      if (outgoing.closed) end();
      else outgoing.on('close', end);
    } else endRequest(edge, method, route, c.res.status, started, requestId, span);
  }
}

/** The request's end: out of the in-flight count, its metric, and for all but the probes its span and log line. */
function endRequest({ svc, inFlight }: Edge, method: string, route: string, status: number, started: number, requestId: string, span?: Span) {
  inFlight.count--;
  const seconds = (performance.now() - started) / 1000;
  svc.metrics.httpRequest(route, method, status, seconds);
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  const spanContext = span.spanContext();
  svc.log.info('request', {
    method,
    route,
    status,
    durationMs: Math.round(seconds * 10_000) / 10,
    requestId,
    ...(isSpanContextValid(spanContext) ? { traceId: spanContext.traceId } : {}),
  });
  span.end();
}
