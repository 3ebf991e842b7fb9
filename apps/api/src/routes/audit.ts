import { Hono, type Context } from 'hono';
import { exportAudit, type AuditExport } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

const encoder = new TextEncoder();

/**
 * An export as a download, a page at a time as the client reads (the stream pulls the next page only
 * when the socket drains). The first page is read before answering, so a database that is down is a
 * 503, not a 200 cut short.
 */
export async function download(c: Context<AppEnv>, { filename, pages }: AuditExport): Promise<Response> {
  const it = pages[Symbol.asyncIterator]();
  let next = await it.next();
  const body = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      try {
        if (next.done) return ctl.close();
        ctl.enqueue(encoder.encode(next.value));
        next = await it.next();
      } catch (err) {
        // Headers are gone: the client sees the body end early, never a complete-looking file.
        c.get('svc').log.error('audit export failed mid-stream', { err });
        ctl.error(err);
      }
    },
    async cancel() {
      await it.return?.(undefined);
    },
  });
  return new Response(body, {
    headers: {
      'content-type': 'application/x-ndjson; charset=utf-8',
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
    },
  });
}

/** The person's audit trail (the operators' export of every chain is in operator.ts). */
export const auditRoutes = new Hono<AppEnv>().get('/audit/export', requirePerson, (c) => download(c, exportAudit({ ctx: ctxOf(c) })));
