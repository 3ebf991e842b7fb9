import { Hono } from 'hono';
import { listDeliveries } from '@toolport/core';
import { requireDeveloper } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const deliveryRoutes = new Hono<AppEnv>()
  .use('/addons/:id/deliveries', requireDeveloper)
  .get('/addons/:id/deliveries', async (c) =>
    c.json(await listDeliveries({ ctx: ctxOf(c), addonId: c.req.param('id'), cursor: c.req.query('cursor') || undefined })),
  );
