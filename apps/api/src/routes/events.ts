import { Hono } from 'hono';
import { openApprovalEvents, type ApprovalEvents, type UserEvent } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

const HEARTBEAT_MS = 15_000;
/** Events queued for a client that stopped reading; past this it is cut off rather than buffered. */
const MAX_QUEUED = 256;
const encoder = new TextEncoder();

const frame = (e: UserEvent) => encoder.encode(`event: ${e.event}\nid: ${e.id}\ndata: ${JSON.stringify(e.data)}\n\n`);

/**
 * The dashboard's live feed (Server-Sent Events): the pending approvals on connect, then
 * `approval` and `approval.decided` as they happen anywhere, and a comment every 15 s.
 * A raw stream keeps each open connection to a few small objects and one timer.
 */
export const eventRoutes = new Hono<AppEnv>().get('/events', requirePerson, async (c) => {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let events: ApprovalEvents | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    void events?.close();
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

  write(encoder.encode('retry: 3000\n\n'));
  events = await openApprovalEvents({
    ctx: ctxOf(c),
    lastEventId: c.req.header('last-event-id')?.slice(0, 100),
    send: (e) => write(frame(e)),
  });
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
