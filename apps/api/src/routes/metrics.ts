import { Hono } from 'hono';
import type { AppEnv } from '../http/env';

/** A proxied request gets 404, so the public load balancer never exposes metrics even if it forgets to block the path. */
export const metricsRoutes = new Hono<AppEnv>().get('/metrics', async (c) => {
  if (c.req.header('x-forwarded-for') || c.req.header('forwarded')) return c.text('Not found.\n', 404);
  const metrics = c.get('svc').metrics;
  const body = await metrics.render();
  return c.body(body, 200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
});
