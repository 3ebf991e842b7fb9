import { Hono } from 'hono';
import { randomUUID } from 'node:crypto';
import type { Services } from '@toolport/core';
import { nodeResponse, type AppEnv } from './http/env';
import { errorToProblem, problem } from './http/problem';
import { logRequests } from './http/request-log';
import { checkHost } from './http/host-check';
import { addonRoutes } from './routes/addons';
import { dashboardRoutes } from './routes/dashboard';
import { installRoutes } from './routes/installs';
import { createMcpRoutes } from './routes/mcp';
import { callRoutes } from './routes/calls';
import { deliveryRoutes } from './routes/deliveries';
import { healthRoutes } from './routes/health';
import { measureRequests, metricsRoutes } from './routes/metrics';
import { keyRoutes } from './routes/keys';
import { connectionRoutes } from './routes/connections';
import { oauthRoutes } from './routes/oauth';
import { wellKnownRoutes } from './routes/well-known';
import { sessionRoutes } from './routes/session';
import { settingsRoutes } from './routes/settings';
import { approvalRoutes } from './routes/approvals';
import { eventRoutes } from './routes/events';
import { pushRoutes } from './routes/push';

const SECURITY_HEADERS = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
] as const;

/** The whole public HTTP surface, as one Hono app over the given services. */
export function createApp(svc: Services) {
  const app = new Hono<AppEnv>();
  // First, so it times everything below and labels by the route pattern that answered.
  app.use('*', measureRequests(svc));

  app.use('*', async (c, next) => {
    c.set('svc', svc);
    c.set('requestId', c.req.header('x-request-id')?.slice(0, 64) || randomUUID());
    // On Node they go straight onto the outgoing response (a route's own value still wins): set
    // on c.res after the handler, they made Hono rebuild every response, a third of a request's CPU.
    const outgoing = nodeResponse(c);
    if (outgoing && !outgoing.headersSent) {
      for (const [name, value] of SECURITY_HEADERS) outgoing.setHeader(name, value);
      return next();
    }
    await next();
    for (const [name, value] of SECURITY_HEADERS) c.header(name, value);
  });
  // After the request id is set; a server span around everything below, and one log line per request.
  app.use('*', logRequests(svc));
  // Before any route: a foreign Host header (DNS rebinding) reaches nothing but the probes.
  app.use('*', checkHost(svc.config));

  const api = new Hono<AppEnv>()
    .route('/', sessionRoutes)
    .route('/', keyRoutes)
    .route('/', connectionRoutes)
    .route('/', deliveryRoutes)
    .route('/', settingsRoutes)
    .route('/', addonRoutes)
    .route('/', installRoutes)
    .route('/', callRoutes)
    .route('/', approvalRoutes)
    .route('/', eventRoutes)
    .route('/', pushRoutes);
  api.notFound((c) => problem(c, 404, 'No such API route.'));
  app.route('/api', api);
  app.route('/', healthRoutes);
  app.route('/', metricsRoutes);
  app.route('/', wellKnownRoutes);
  app.route('/oauth', oauthRoutes);
  app.route('/', createMcpRoutes(svc));
  // The dashboard answers only what nothing above did (static files, SPA paths); keep it last.
  app.route('/', dashboardRoutes);

  app.onError((err, c) => errorToProblem(err, c));
  app.notFound((c) => problem(c, 404, 'Nothing here.'));
  return app;
}
