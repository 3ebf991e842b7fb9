import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { closeServices, createServices, type Config, type ServiceOverrides, type Services } from '@toolport/core';
import type { AppEnv } from './http/env';
import { listen } from './listen';
import { healthRoutes } from './routes/health';
import { metricsRoutes } from './routes/metrics';

export interface RunningWorker {
  svc: Services;
  port: number;
  close(): Promise<void>;
}

/** No public API here: only `/healthz` and `/readyz` for the orchestrator. */
export async function startWorker(config: Config, overrides: ServiceOverrides = {}): Promise<RunningWorker> {
  const svc = await createServices(config, overrides);
  const app = new Hono<AppEnv>();
  app.use('*', async (c, next) => {
    c.set('svc', svc);
    await next();
  });
  app.route('/', healthRoutes);
  // Webhook failures and queue depth are recorded here: Prometheus scrapes workers too.
  app.route('/', metricsRoutes);
  const server = await listen(app.fetch, config).catch(async (err) => {
    await closeServices(svc);
    throw err;
  });
  let closing: Promise<void> | undefined;
  return {
    svc,
    port: (server.address() as AddressInfo).port,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await closeServices(svc);
      })()),
  };
}
