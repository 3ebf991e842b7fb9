import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { notFound, validation } from '../errors';
import { addons, calls, deliveries } from '../db/schema/index';
import { toolTitlesOf } from '../approvals/names';
import type { Json } from '../json';

const PAGE = 50;

export interface DeliveryEntry {
  id: string;
  callId: string;
  type: string;
  attempt: number;
  status: number | null;
  latencyMs: number;
  errorClass: string | null;
  detail: string | null;
  /** `result`, `tool_error`, `refusal`, `confirm`, `addon_failed`, `late` or `failure`: a 200 is not always a success. */
  outcome: string | null;
  /** The add-on's pseudonymous id for the person. */
  subject: string | null;
  createdAt: Date;
  /** The tool called (null: a delivery of no one tool, `tools.list`). */
  tool: string | null;
}

/** `GET /api/addons/{id}/deliveries`: a page of the log, and the cursor of the next one (null: the last page). */
export type DeliveryPage = Json<Awaited<ReturnType<typeof listDeliveries>>>;

const encodeCursor = (row: DeliveryEntry) => Buffer.from(`${row.createdAt.toISOString()}|${row.id}`).toString('base64url');

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(at ?? '');
  if (!id || Number.isNaN(createdAt.getTime())) {
    throw validation('The cursor is not one this API gave out.', [{ path: '/cursor', message: 'Use the nextCursor of the previous page.' }]);
  }
  return { createdAt, id };
}

/** The developer's delivery log of one of their add-ons: newest first, a page at a time. */
export async function listDeliveries({ ctx, addonId, cursor }: { ctx: Ctx; addonId: string; cursor?: string }) {
  const [addon] = await ctx.svc.db
    .select({ id: addons.id })
    .from(addons)
    .where(and(eq(addons.id, addonId), eq(addons.ownerId, personId(ctx)), isNull(addons.deletedAt)));
  if (!addon) throw notFound('That add-on');

  const after = cursor ? decodeCursor(cursor) : undefined;
  // Deliveries this process made are in the log before the page is read.
  await ctx.svc.logs.flushed();
  const rows: DeliveryEntry[] = await ctx.svc.db
    .select({
      id: deliveries.id,
      callId: deliveries.callId,
      type: deliveries.type,
      attempt: deliveries.attempt,
      status: deliveries.status,
      latencyMs: deliveries.latencyMs,
      errorClass: deliveries.errorClass,
      detail: deliveries.detail,
      outcome: sql<string | null>`${deliveries.meta}->>'outcome'`,
      subject: deliveries.subject,
      createdAt: deliveries.createdAt,
      // Recorded with the delivery; an older row's from its call (a describe step's call is `{call}_confirm`).
      tool: sql<string | null>`coalesce(${deliveries.meta}->>'tool', ${calls.toolName})`,
    })
    .from(deliveries)
    .leftJoin(calls, and(eq(calls.id, sql`regexp_replace(${deliveries.callId}, '_confirm$', '')`), eq(calls.addonId, deliveries.addonId)))
    .where(
      and(
        eq(deliveries.addonId, addonId),
        after
          ? sql`(${deliveries.createdAt}, ${deliveries.id}) < (${after.createdAt.toISOString()}::timestamptz, ${after.id})`
          : undefined,
      ),
    )
    // A row comparison and NULLS LAST: what the (addon_id, created_at DESC NULLS LAST) index can serve.
    .orderBy(sql`${deliveries.createdAt} desc nulls last`, desc(deliveries.id))
    .limit(PAGE + 1);
  const more = rows.length > PAGE;
  const items = more ? rows.slice(0, PAGE) : rows;
  // The developer reads tools by title too; one since removed or renamed by the title it last had.
  const titles = await toolTitlesOf(ctx.svc, addonId, items.flatMap((d) => (d.tool ? [d.tool] : [])));
  return {
    deliveries: items.map((d) => ({ ...d, toolTitle: d.tool ? titles.get(d.tool)! : null })),
    nextCursor: more ? encodeCursor(items[items.length - 1]!) : null,
  };
}
