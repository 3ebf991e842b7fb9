import { Hono, type MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Services } from '@toolport/core';
import type { AppEnv } from '../http/env';

/**
 * `GET /metrics`: Prometheus text format, for a scraper on the internal network. A request that
 * came through a proxy (it carries `X-Forwarded-For` or `Forwarded`) gets 404, so the public load
 * balancer never exposes add-on ids and traffic figures even if it forgets to block the path.
 */
export const metricsRoutes = new Hono<AppEnv>().get('/metrics', async (c) => {
  if (c.req.header('x-forwarded-for') || c.req.header('forwarded')) return c.text('Not found.\n', 404);
  const metrics = c.get('svc').metrics;
  const body = await metrics.render();
  return c.body(body, 200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
});

/**
 * Times every request and records it by route pattern (`/u/:userKey/mcp`, never the raw path with
 * its keys and ids). Unmatched paths fall to a wildcard pattern, so the label set stays bounded.
 * Streaming responses are timed until their headers, not to the end of the stream.
 */
export function measureRequests(svc: Services): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = routePath(c) || 'unmatched';
      svc.metrics.httpRequest(route, c.req.method, c.res.status, (performance.now() - started) / 1000);
    }
  };
}
