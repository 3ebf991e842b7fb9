import { Hono } from 'hono';
import type { Services } from '@toolport/core';
import type { AppEnv } from './http/env';
import { requestEdge, type RequestsInFlight } from './http/edge';
import { errorToProblem, problem } from './http/problem';
import { accountRoutes } from './routes/accounts';
import { addonRoutes } from './routes/addons';
import { dashboardRoutes } from './routes/dashboard';
import { installRoutes } from './routes/installs';
import { createMcpRoutes } from './routes/mcp/index';
import { callRoutes } from './routes/calls';
import { answerRoutes } from './routes/answers';
import { deliveryRoutes } from './routes/deliveries';
import { healthRoutes } from './routes/health';
import { iconRoutes } from './routes/icons';
import { metricsRoutes } from './routes/metrics';
import { keyRoutes } from './routes/keys';
import { connectionRoutes } from './routes/connections';
import { oauthRoutes } from './routes/oauth';
import { wellKnownRoutes } from './routes/well-known';
import { sessionRoutes } from './routes/session';
import { settingsRoutes } from './routes/settings';
import { approvalRoutes } from './routes/approvals';
import { eventRoutes } from './routes/events';
import { pushRoutes } from './routes/push';
import { operatorRoutes } from './routes/operator';
import { registryRoutes } from './routes/registry';
import { serverCardRoutes } from './routes/server-cards';
import { ruleRoutes } from './routes/rules';
import { auditRoutes } from './routes/audit';

const apiPath = /^\/api(\/|$)/;

/** The whole public HTTP surface, as one Hono app over the given services; `inFlight` counts its requests. */
export function createApp(svc: Services, inFlight?: RequestsInFlight) {
  const app = new Hono<AppEnv>();
  // First, so every request is timed, logged and Host-checked.
  app.use('*', requestEdge(svc, inFlight));

  const api = new Hono<AppEnv>()
    .route('/', sessionRoutes)
    .route('/', keyRoutes)
    .route('/', connectionRoutes)
    .route('/', deliveryRoutes)
    .route('/', settingsRoutes)
    .route('/', addonRoutes)
    .route('/', registryRoutes)
    .route('/', installRoutes)
    .route('/', callRoutes)
    .route('/', answerRoutes)
    .route('/', approvalRoutes)
    .route('/', ruleRoutes)
    .route('/', eventRoutes)
    .route('/', pushRoutes)
    .route('/', operatorRoutes)
    .route('/', auditRoutes);
  app.route('/api', api);
  app.route('/', healthRoutes);
  app.route('/', metricsRoutes);
  app.route('/', serverCardRoutes);
  app.route('/', wellKnownRoutes);
  app.route('/oauth', oauthRoutes);
  app.route('/', accountRoutes);
  app.route('/', createMcpRoutes(svc));
  app.route('/', iconRoutes);
  // The dashboard answers only what nothing above did (static files, SPA paths); keep it last.
  app.route('/', dashboardRoutes);

  app.onError((err, c) => errorToProblem(err, c));
  // Hono runs only the top app's notFound (a sub-app's is never called), so the API's sentence is
  // chosen here; the dashboard reads it as "this server has no such route", not "that object is gone".
  app.notFound((c) => problem(c, 404, apiPath.test(c.req.path) ? 'No such API route.' : 'Nothing here.'));
  return app;
}
