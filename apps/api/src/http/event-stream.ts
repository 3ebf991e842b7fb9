/** Events queued for a client that stopped reading; past this it is cut off rather than buffered. */
const MAX_QUEUED = 256;
const encoder = new TextEncoder();

/** One Server-Sent Event: its name, id and JSON data. */
export const sseFrame = (event: string, id: string, data: unknown) => `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The heartbeat (15 s) stays within proxies' idle cut-offs. With `stillAllowed`, the stream closes
 * at the first heartbeat after its credential stopped holding (signed out, key revoked).
 */
export async function eventStream(
  request: Request,
  open: (send: (frame: string) => void) => Promise<{ close(): unknown }>,
  stillAllowed: (() => Promise<boolean>) | undefined,
  heartbeatMs: number,
): Promise<Response> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let source: { close(): unknown } | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    void source?.close();
    try {
      controller.close();
    } catch {
      /* already closed by the client */
    }
  };
  const write = (text: string) => {
    if (closed) return;
    if ((controller.desiredSize ?? 0) < -MAX_QUEUED) return close();
    controller.enqueue(encoder.encode(text));
  };
  const stream = new ReadableStream<Uint8Array>({
    start: (ctl) => {
      controller = ctl;
    },
    cancel: close,
  });

  write('retry: 3000\n\n');
  source = await open(write);
  if (request.signal.aborted) close();
  request.signal.addEventListener('abort', close, { once: true });
  // A check that cannot be answered (the database is down) keeps the stream: the next one decides.
  const check = () =>
    stillAllowed?.().then(
      (ok) => ok || close(),
      () => {},
    );
  heartbeat = setInterval(() => {
    write(': ping\n\n');
    void check();
  }, heartbeatMs);
  heartbeat.unref();
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    },
  });
}
