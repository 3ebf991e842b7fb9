import type { AddressInfo } from 'node:net';
import { closeServices, createServices, ensureSigningKeys, type ApprovalsService, type Config, type ServiceOverrides, type Services } from '@toolport/core';
import { createApp } from './app';
import type { RequestsInFlight } from './http/edge';
import { listen } from './listen';

export interface RunningServer {
  svc: Services;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Held calls are answered cancelled on their own connections, which must still be open then. */
const ANSWER_HELD_MS = 4_000;

/** Builds the services, migrates, and listens. Used by `main.ts` and by the tests. */
export async function startServer(config: Config, overrides: ServiceOverrides = {}): Promise<RunningServer> {
  // How long a stopping server lets requests in flight finish: within Kubernetes' 40 s grace, after a 10 s preStop.
  const graceMs = config.shutdownGraceSeconds * 1000;
  const svc = await createServices(config, overrides);
  // The first start makes the access-token signing key, not the first sign-in.
  await ensureSigningKeys(svc);
  // Requests in flight (counted by the app's edge, a held call's until its response closes), so a
  // SIGTERM lets them finish (or hand back) before the process goes.
  const inFlight: RequestsInFlight = { count: 0 };
  const app = createApp(svc, inFlight);
  let draining = false;
  const fetch = (req: Request, env: unknown): Response | Promise<Response> => {
    if (draining) {
      return new Response(JSON.stringify({ title: 'Service unavailable', status: 503, detail: 'This server is shutting down; retry.' }), {
        status: 503,
        headers: { 'content-type': 'application/problem+json', 'retry-after': '1', connection: 'close' },
      });
    }
    return app.fetch(req, env as never);
  };
  const server = await listen(fetch, config).catch(async (err) => {
    await closeServices(svc);
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    svc,
    port,
    url: config.publicUrl,
    close: () =>
      (closing ??= (async () => {
        // New requests get 503; in-flight calls finish within the grace; waiting approvals are then
        // recorded cancelled (a task's are handed over to another process), so nothing else runs after we go.
        draining = true;
        svc.draining = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        const http = server as unknown as { closeIdleConnections?: () => void; closeAllConnections?: () => void };
        const until = Date.now() + graceMs;
        const approvals = svc.approvals as Partial<ApprovalsService> | undefined;
        const settled = async (by: number, held: boolean) => {
          while (Date.now() < by && (inFlight.count > 0 || (held && (approvals?.waiting ?? 0) > 0))) {
            http.closeIdleConnections?.();
            await new Promise((r) => setTimeout(r, 50));
          }
        };
        // The person may still decide; then what waits is cancelled and answered, then the rest ends.
        await settled(until - Math.min(ANSWER_HELD_MS, graceMs / 2), true);
        await approvals?.stopHolding?.();
        await settled(until, false);
        http.closeAllConnections?.();
        await closed;
        await closeServices(svc);
      })()),
  };
}
