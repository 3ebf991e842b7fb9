import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId, requireOperator } from '../context';
import { auditEvents } from '../db/schema/index';
import type { Services } from '../services';

/** Events per query: a page's lines are all an export holds in memory, however long the chains. */
const PAGE = 1_000;

export interface AuditExport {
  filename: string;
  /** The NDJSON text, a page of lines at a time, read only as the client takes them. */
  pages: AsyncIterable<string>;
}

/**
 * `GET /api/audit/export`: the person's own chain, always: nothing in the request names a chain.
 * Arguments are there only as their keyed digest, as in the call log: a call's arguments are never
 * stored, so there is nothing else to give.
 */
export function exportAudit({ ctx }: { ctx: Ctx }): AuditExport {
  return { filename: 'toolport-audit.ndjson', pages: pagesOf(ctx.svc, personId(ctx)) };
}

/** `GET /api/operator/audit/export`: every chain of the deployment (each person's, and the operators'), one after another. */
export function exportDeploymentAudit({ ctx }: { ctx: Ctx }): AuditExport {
  requireOperator(ctx, 'Only Toolport’s operators export the whole deployment’s audit trail.');
  return { filename: 'toolport-audit-deployment.ndjson', pages: pagesOf(ctx.svc) };
}

/** Keyset pages in (chain, seq) order, the primary key's: each query an index range, at any depth. */
async function* pagesOf(svc: Services, chain?: string): AsyncGenerator<string> {
  // This process's own events are in before the first page is read.
  await svc.audit.flushed();
  let after = { chain: chain ?? '', seq: 0 };
  for (;;) {
    const rows = await svc.db
      .select({ chain: auditEvents.chain, seq: auditEvents.seq, event: auditEvents.event })
      .from(auditEvents)
      .where(chain ? and(eq(auditEvents.chain, chain), gt(auditEvents.seq, after.seq)) : sql`(${auditEvents.chain}, ${auditEvents.seq}) > (${after.chain}, ${after.seq})`)
      .orderBy(asc(auditEvents.chain), asc(auditEvents.seq))
      .limit(PAGE);
    if (rows.length) yield rows.map((r) => `${r.event}\n`).join('');
    if (rows.length < PAGE) return;
    const last = rows[rows.length - 1]!;
    after = { chain: last.chain, seq: last.seq };
  }
}
