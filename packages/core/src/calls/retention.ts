import { sql, type SQL } from 'drizzle-orm';
import { forgetOldAuditEvents } from '../audit/retention';
import { executedRows } from '../db/client';
import type { Services } from '../services';
import { personId, type Ctx } from '../context';

/**
 * Rows per statement: on the embedded default a statement holds the one thread the calls share,
 * so each stays short and the calls run between them.
 */
const BATCH = 1_000;
/** At most this many per table per sweep; what is left waits for the next one. */
const MAX_PER_SWEEP = 100_000;

export interface Forgotten {
  calls: number;
  deliveries: number;
  /** Audit events, each chain's removed stretch now one checkpoint (audit/retention.ts). */
  audit: number;
}

/** One bounded delete, `with gone as (delete … returning …) select count(*)::int as n from gone`: how many it removed. */
async function deleteSome(svc: Services, statement: SQL): Promise<number> {
  const rows = executedRows<{ n: number }>(await svc.db.execute(statement));
  return Number(rows[0]?.n ?? 0);
}

async function deleteOlder(svc: Services, table: 'calls' | 'deliveries', days: number): Promise<number> {
  const name = sql.identifier(table);
  const before = new Date(svc.clock.now().getTime() - days * 86_400_000).toISOString();
  let removed = 0;
  while (removed < MAX_PER_SWEEP) {
    const n = await deleteSome(
      svc,
      sql`with gone as (delete from ${name} where id in (select id from ${name} where created_at < ${before}::timestamptz limit ${BATCH}) returning 1) select count(*)::int as n from gone`,
    );
    removed += n;
    if (n < BATCH) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return removed;
}

/**
 * Removes calls, deliveries and audit events older than the operator keeps them (config.retention),
 * a batch at a time so calls go on meanwhile. Every process may run it: two at once delete disjoint
 * or no rows, and the audit's removals take turns.
 */
export async function forgetOldLogs(svc: Services): Promise<Forgotten> {
  const { callsDays, deliveriesDays, auditDays } = svc.config.retention;
  const forgotten = {
    calls: await deleteOlder(svc, 'calls', callsDays),
    deliveries: await deleteOlder(svc, 'deliveries', deliveriesDays),
    audit: await forgetOldAuditEvents(svc),
  };
  if (forgotten.calls || forgotten.deliveries || forgotten.audit) svc.log.info('old log rows removed', { ...forgotten, callsDays, deliveriesDays, auditDays });
  return forgotten;
}

/**
 * The person clears their call history: every call that ended, and its deliveries (the attempts
 * carry the add-on's pseudonym for them). Calls still running keep their rows until they end. Their
 * audit chain keeps its events and notes that they cleared it (`calls.cleared`).
 */
export async function clearCallHistory({ ctx }: { ctx: Ctx }): Promise<{ removed: number }> {
  const userId = personId(ctx);
  const { svc } = ctx;
  // Rows still being written behind the calls are part of the history being cleared.
  await svc.logs.flushed();
  let removed = 0;
  for (;;) {
    const n = await deleteSome(
      svc,
      sql`with gone as (delete from calls where id in (select id from calls where user_id = ${userId} and outcome <> 'running' limit ${BATCH}) returning id),
        attempts as (delete from deliveries where call_id in (select id from gone))
        select count(*)::int as n from gone`,
    );
    removed += n;
    if (n < BATCH) break;
  }
  svc.audit.record(userId, 'calls.cleared', { removed });
  return { removed };
}
