import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { closeServices, createServices, type Config, type ServiceOverrides, type Services } from '@toolport/core';
import { createApp } from './app';

export interface RunningServer {
  svc: Services;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Builds the services, migrates, and listens. Used by `main.ts` and by the tests. */
export async function startServer(config: Config, overrides: ServiceOverrides = {}): Promise<RunningServer> {
  const svc = await createServices(config, overrides);
  const app = createApp(svc);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: '0.0.0.0' }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    svc,
    port,
    url: config.publicUrl,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        });
        await closeServices(svc);
      })()),
  };
}
