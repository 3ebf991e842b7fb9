import type { ConfirmDescriptor } from '../outbound/types';
import { and, desc, eq, inArray } from 'drizzle-orm';
import { currentTaskOf } from './tasks';
import { cameOfIt } from './came-of-it';
import { withNames } from '../approvals/names';
import type { Ctx } from '../context';
import { personId } from '../context';
import { approvals, calls, deliveries, tasks } from '../db/schema/index';
import { notFound } from '../errors';
import type { Json } from '../json';

/*
 * A call's own page: its life read from the records it left (the approval, the task, each attempt
 * at the add-on, the call log), so a call still waiting or running shows as far as it has come.
 */

/** At most this many attempts and progress reports are shown. */
const STEPS_SHOWN = 100;

export type CallStep =
  | { at: Date; kind: 'asked' }
  | { at: Date; kind: 'decided'; status: string; decidedBy: string | null; receipt: string | null; reason: string | null }
  | { at: Date; kind: 'task' }
  /** One attempt at the add-on's webhook; `describe` is the add-on describing the call for the person. */
  | { at: Date; kind: 'attempt'; describe: boolean; attempt: number; status: number | null; outcome: string | null; errorClass: string | null; latencyMs: number }
  | { at: Date; kind: 'progress'; message: string }
  | { at: Date; kind: 'answered-later' }
  | { at: Date; kind: 'ended'; outcome: string };

const phaseOf = (s: CallStep) => (s.kind === 'attempt' && s.describe ? 0 : s.kind === 'asked' ? 1 : s.kind === 'decided' ? 2 : s.kind === 'ended' ? 4 : 3);

/** `GET /api/calls/{id}`. */
export type CallLife = Json<Awaited<ReturnType<typeof callLife>>>;

/** The person's call, as far as it has come; "does not exist" for anyone else's. */
export async function callLife({ ctx, callId }: { ctx: Ctx; callId: string }) {
  const userId = personId(ctx);
  if (!/^call_[\w-]{1,64}$/.test(callId)) throw notFound('That call');
  const { db } = ctx.svc;
  await ctx.svc.logs.flushed();
  const [[row], [approval], [stored]] = await Promise.all([
    db.select().from(calls).where(and(eq(calls.id, callId), eq(calls.userId, userId))),
    db.select().from(approvals).where(and(eq(approvals.callId, callId), eq(approvals.userId, userId))),
    db.select().from(tasks).where(and(eq(tasks.callId, callId), eq(tasks.userId, userId))),
  ]);
  const base = row ?? approval ?? stored;
  // A call at its add-on for a while has a running row (call-tool.ts): not yet how it ended.
  const atAddon = row?.outcome === 'running';
  const logged = atAddon ? undefined : row;
  if (!base) throw notFound('That call');
  // A task past its add-on's time ends as it is read, as it does for its app and in Running now.
  const task = stored && (await currentTaskOf(ctx.svc, stored));
  const startedAt = new Date(
    Math.min(
      ...[row && row.createdAt.getTime() - row.latencyMs, approval?.createdAt.getTime(), task?.createdAt.getTime()].filter((t): t is number => typeof t === 'number'),
    ),
  );
  // The latest attempts and reports, so a chatty task still shows how it ended.
  const attempts = (
    await db
      .select()
      .from(deliveries)
      // The add-on's description of the call for the person is delivered as its own call.
      .where(and(inArray(deliveries.callId, [callId, `${callId}_confirm`]), eq(deliveries.addonId, base.addonId)))
      .orderBy(desc(deliveries.createdAt))
      .limit(STEPS_SHOWN)
  ).reverse();

  const steps: CallStep[] = [];
  if (approval) {
    steps.push({ at: approval.createdAt, kind: 'asked' });
    if (approval.status !== 'pending' && approval.decidedAt) {
      steps.push({ at: approval.decidedAt, kind: 'decided', status: approval.status, decidedBy: approval.decidedBy, receipt: approval.status === 'allowed' ? approval.id : null, reason: approval.reason });
    }
  }
  if (task) steps.push({ at: task.createdAt, kind: 'task' });
  for (const d of attempts) {
    const outcome = (d.meta as { outcome?: unknown } | null)?.outcome;
    // Progress is the person's to read (Running now shows it too); an attempt's own text and an
    // answer Toolport refused stay in the developer's delivery log.
    if (d.type === 'tool.progress') steps.push({ at: d.createdAt, kind: 'progress', message: d.detail ?? '' });
    else if (d.type === 'tool.answer') {
      if (outcome !== 'refused') steps.push({ at: d.createdAt, kind: 'answered-later' });
    } else {
      steps.push({
        at: d.createdAt,
        kind: 'attempt',
        describe: d.type === 'tool.confirm',
        attempt: d.attempt,
        status: d.status,
        outcome: typeof outcome === 'string' ? outcome : null,
        errorClass: d.errorClass,
        latencyMs: d.latencyMs,
      });
    }
  }
  if (logged) steps.push({ at: logged.createdAt, kind: 'ended', outcome: logged.outcome });
  // The phases come in this order whatever the clocks say (the log's times and the database's may
  // differ by a few ms); within a phase, by time.
  steps.sort((a, b) => phaseOf(a) - phaseOf(b) || a.at.getTime() - b.at.getTime());

  const [named] = await withNames(ctx.svc, userId, [{ addon: base.addonId, tool: base.toolName }]);
  // No log row yet (it is written behind the call): the records say how far it has come.
  const now = ctx.svc.clock.now().getTime();
  const waiting = approval?.status === 'pending' && approval.expiresAt.getTime() > now;
  const running = task ? task.status === 'working' : atAddon || approval?.status === 'allowed';
  const state = logged ? 'ended' : waiting ? 'waiting' : running ? 'running' : 'ended';
  return {
    id: callId,
    app: base.appName,
    addon: base.addonId,
    addonName: named!.addonName,
    tool: base.toolName,
    toolTitle: named!.toolTitle,
    /** waiting: for the person; running: at its add-on (or its log row is being written); ended. */
    state,
    outcome: logged?.outcome ?? (state === 'ended' && approval && approval.status !== 'allowed' ? (approval.status === 'pending' ? 'expired' : approval.status) : null),
    approvalId: approval?.id ?? null,
    /** What came of it, once the person allowed it. */
    came: approval?.status === 'allowed' ? cameOfIt(logged) : null,
    /** The add-on's picture of the call, shown with its approval (`GET /api/approvals/{approvalId}/image`). */
    image: pictureOf(approval?.confirm),
    taskId: task?.status === 'working' ? task.id : null,
    statusMessage: task?.status === 'working' ? task.statusMessage : null,
    startedAt,
    endedAt: logged?.createdAt ?? null,
    steps,
  };
}

function pictureOf(confirm: unknown): { width: number; height: number } | null {
  const image = (confirm as ConfirmDescriptor | null | undefined)?.image;
  return image ? { width: image.width, height: image.height } : null;
}
