import { Hono } from 'hono';
import { openApprovalEvents } from '@toolport/core';
import { credentialCheck, requirePerson } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';
import { eventStream, sseFrame } from '../http/event-stream';

/**
 * The dashboard's live feed (Server-Sent Events): the pending approvals on connect, then
 * `approval`, `approval.decided` and `call.changed` as they happen anywhere, and a comment every 15 s. It ends
 * within 15 s of the person signing out (that session) or the session expiring.
 */
export const eventRoutes = new Hono<AppEnv>().get('/events', requirePerson, (c) =>
  eventStream(c.req.raw, (send) =>
    openApprovalEvents({
      ctx: ctxOf(c),
      lastEventId: c.req.header('last-event-id')?.slice(0, 100),
      send: (e) => send(sseFrame(e.event, e.id, e.data)),
    }),
    credentialCheck(c),
    c.get('svc').config.streamHeartbeatSeconds * 1000,
  ),
);
