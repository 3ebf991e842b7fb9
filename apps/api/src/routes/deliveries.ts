import { Hono } from 'hono';
import { listDeliveries, openLiveDeliveries, type LiveDeliveries, type LiveDelivery } from '@toolport/core';
import { requireDeveloper } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

const HEARTBEAT_MS = 15_000;
/** Events queued for a client that stopped reading; past this it is cut off rather than buffered. */
const MAX_QUEUED = 256;
const encoder = new TextEncoder();

const frame = (d: LiveDelivery) => encoder.encode(`event: delivery\nid: ${d.callId}.${d.attempt}\ndata: ${JSON.stringify(d)}\n\n`);

export const deliveryRoutes = new Hono<AppEnv>()
  .use('/addons/:id/deliveries', requireDeveloper)
  .get('/addons/:id/deliveries', async (c) =>
    c.json(await listDeliveries({ ctx: ctxOf(c), addonId: c.req.param('id'), cursor: c.req.query('cursor') || undefined })),
  )
  /**
   * The add-on's deliveries as they happen (Server-Sent Events, `toolport dev`): `event: delivery`
   * for each finished attempt made by any process, and a comment every 15 s.
   */
  .get('/addons/:id/deliveries/live', requireDeveloper, async (c) => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let live: LiveDeliveries | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      void live?.close();
      try {
        controller.close();
      } catch {
        /* already closed by the client */
      }
    };
    const write = (bytes: Uint8Array) => {
      if (closed) return;
      if ((controller.desiredSize ?? 0) < -MAX_QUEUED) return close();
      controller.enqueue(bytes);
    };
    const stream = new ReadableStream<Uint8Array>({
      start: (ctl) => {
        controller = ctl;
      },
      cancel: close,
    });

    live = await openLiveDeliveries({ ctx: ctxOf(c), addonId: c.req.param('id'), send: (d) => write(frame(d)) });
    write(encoder.encode('retry: 3000\n\n'));
    if (c.req.raw.signal.aborted) close();
    c.req.raw.signal.addEventListener('abort', close, { once: true });
    heartbeat = setInterval(() => write(encoder.encode(': ping\n\n')), HEARTBEAT_MS);
    heartbeat.unref();
    return new Response(stream, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      },
    });
  });
