import { Hono } from 'hono';
import { listDeliveries, openLiveDeliveries } from '@toolport/core';
import { credentialCheck, requireDeveloper } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';
import { eventStream, sseFrame } from '../http/event-stream';

export const deliveryRoutes = new Hono<AppEnv>()
  .use('/addons/:id/deliveries', requireDeveloper)
  .get('/addons/:id/deliveries', async (c) =>
    c.json(await listDeliveries({ ctx: ctxOf(c), addonId: c.req.param('id'), cursor: c.req.query('cursor') || undefined })),
  )
  /**
   * The add-on's deliveries as they happen (Server-Sent Events, `toolport dev`): `event: delivery`
   * for each finished attempt made by any process, and for each call of the developer's own that
   * Toolport answered without sending (`outcome: not_sent`), and a comment every 15 s; it ends within 15 s
   * of the key (or session) it was opened with being revoked (signed out).
   */
  .get('/addons/:id/deliveries/live', requireDeveloper, (c) =>
    eventStream(c.req.raw, (send) =>
      openLiveDeliveries({ ctx: ctxOf(c), addonId: c.req.param('id'), send: (d) => send(sseFrame('delivery', `${d.callId}.${d.attempt}`, d)) }),
      credentialCheck(c),
      c.get('svc').config.streamHeartbeatSeconds * 1000,
    ),
  );
