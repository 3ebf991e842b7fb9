import { Hono } from 'hono';
import type { AppEnv } from '../http/env';

export const healthRoutes = new Hono<AppEnv>()
  .get('/healthz', (c) => c.json({ status: 'ok' }))
  .get('/readyz', async (c) => {
    const svc = c.get('svc');
    const checks: Record<string, string> = {};
    let ready = true;
    try {
      await svc.database.ping();
      checks.database = 'ok';
    } catch {
      checks.database = 'unavailable';
      ready = false;
    }
    // Checks the services registered, e.g. `queue` (Redis) when Redis is configured.
    for (const [name, check] of Object.entries(svc.readiness)) {
      try {
        await check();
        checks[name] = 'ok';
      } catch {
        checks[name] = 'unavailable';
        ready = false;
      }
    }
    return c.json({ status: ready ? 'ready' : 'not ready', checks }, ready ? 200 : 503);
  });
