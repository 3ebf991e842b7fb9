import { sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { personId } from '../context';
import { parseInput } from '../input';
import { addonNamesOf } from '../approvals/names';
import { executedRows } from '../db/client';

/** Each period and the width of its buckets: about two dozen bars whatever the period. */
const PERIODS = {
  '1h': { ms: 3600e3, step: 5 * 60e3 },
  '24h': { ms: 86400e3, step: 3600e3 },
  '7d': { ms: 7 * 86400e3, step: 6 * 3600e3 },
  '30d': { ms: 30 * 86400e3, step: 86400e3 },
} as const;
type Period = keyof typeof PERIODS;

const activityQuery = z.object({
  period: z.enum(Object.keys(PERIODS) as [Period, ...Period[]], { message: 'Use 1h, 24h, 7d or 30d.' }).default('24h'),
  app: z.string().max(200).optional(),
  addon: z.string().max(200).optional(),
  outcome: z.string().max(64).optional(),
});

/** Outcomes where the person (their answer, its lack, or their rule) stopped the call: it never reached the add-on. */
const STOPPED = ['denied', 'dismissed', 'expired', 'cancelled', 'revoked', 'blocked'];

const num = (v: unknown) => (v === null || v === undefined ? null : Math.round(Number(v)));

/** `GET /api/calls/activity`. */
export type Activity = Awaited<ReturnType<typeof callActivity>>;

/** Per add-on latency is split into the person's wait (approval) and the add-on's own time. */
export async function callActivity({ ctx, query }: { ctx: Ctx; query: { period?: string; app?: string; addon?: string; outcome?: string } }) {
  const userId = personId(ctx);
  const q = parseInput(activityQuery, { ...query, app: query.app || undefined, addon: query.addon || undefined, outcome: query.outcome || undefined }, 'The activity query is not valid.');
  const { ms, step } = PERIODS[q.period];
  const now = ctx.svc.clock.now().getTime();
  const to = Math.floor(now / step) * step + step;
  const from = to - ms;
  const buckets = Math.round(ms / step);
  await ctx.svc.logs.flushed();
  // A call still running has no outcome yet: it counts once it ends.
  const where = sql`c.user_id = ${userId} and c.outcome <> 'running' and c.created_at >= ${new Date(from).toISOString()}::timestamptz and c.created_at < ${new Date(to).toISOString()}::timestamptz
    ${q.app ? sql`and c.app_name = ${q.app}` : sql``}
    ${q.addon ? sql`and c.addon_id = ${q.addon}` : sql``}
    ${q.outcome ? sql`and c.outcome = ${q.outcome}` : sql``}`;
  const kind = sql`case when c.outcome = 'ok' then 'ok' when c.outcome in (${sql.join(STOPPED.map((s) => sql`${s}`), sql`, `)}) then 'stopped' else 'failed' end`;
  const perBucket = await ctx.svc.db.execute(sql`
    select floor((extract(epoch from c.created_at) * 1000 - ${from}::float8) / ${step}::float8)::int as bucket, ${kind} as kind, count(*)::int as n
    from calls c where ${where} group by 1, 2`);
  // The wait is the approval's, from its asking to its answer, and never more than the whole call.
  const perAddon = await ctx.svc.db.execute(sql`
    with timed as (
      select c.addon_id, c.outcome, c.latency_ms,
        case when a.decided_at is null then null
          else least(c.latency_ms, greatest(0, extract(epoch from (a.decided_at - a.created_at)) * 1000)) end as wait_ms
      from calls c left join approvals a on a.call_id = c.id and a.user_id = c.user_id
      where ${where}
    )
    select addon_id, count(*)::int as calls,
      percentile_cont(0.5) within group (order by latency_ms) as p50,
      percentile_cont(0.5) within group (order by wait_ms) filter (where wait_ms is not null) as wait_p50,
      count(wait_ms)::int as asked,
      percentile_cont(0.5) within group (order by latency_ms - coalesce(wait_ms, 0))
        filter (where outcome not in (${sql.join(STOPPED.map((s) => sql`${s}`), sql`, `)})) as addon_p50
    from timed group by addon_id order by p50 desc limit 20`);
  const rowsOf = (r: unknown) => executedRows<Record<string, unknown>>(r);
  const series = Array.from({ length: buckets }, (_, i) => ({ start: new Date(from + i * step).toISOString(), ok: 0, stopped: 0, failed: 0 }));
  const totals = { calls: 0, ok: 0, stopped: 0, failed: 0 };
  for (const r of rowsOf(perBucket)) {
    const b = series[Number(r.bucket)];
    const k = r.kind as 'ok' | 'stopped' | 'failed';
    if (!b) continue;
    b[k] += Number(r.n);
    totals[k] += Number(r.n);
    totals.calls += Number(r.n);
  }
  const latency = rowsOf(perAddon);
  const addonNames = await addonNamesOf(ctx.svc, latency.map((r) => String(r.addon_id)));
  return {
    period: q.period,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    stepMs: step,
    /** How long calls are kept (the operator's retention): the person is told on the page. */
    keptDays: ctx.svc.config.retention.callsDays,
    buckets: series,
    totals,
    latency: latency.map((r) => ({
      addon: String(r.addon_id),
      addonName: addonNames.get(String(r.addon_id))!,
      calls: Number(r.calls),
      p50Ms: num(r.p50),
      /** Calls that waited for the person, and the median of that wait. */
      asked: Number(r.asked),
      waitP50Ms: num(r.wait_p50),
      addonP50Ms: num(r.addon_p50),
    })),
  };
}
