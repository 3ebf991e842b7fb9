import { and, desc, eq, gt, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { endTurn, exclusiveLine } from '../turns';
import { CallCancel } from '../cancel';
import { approvals, tasks } from '../db/schema/index';
import { TASKS_CHANNEL } from '../events/channels';
import { newToken } from '../ids';
import type { Services } from '../services';
import { personId, type Ctx } from '../context';
import { notFound } from '../errors';
import type { Json } from '../json';
import type { CallJob, CallOutcome } from '../queue/types';
import { recordCall, runningCallRows, type CallOutcomeName } from './call-log';
import { announceCallChange } from './watch';
import { shapeOutcome, text } from './outcome';
import type { ToolResult } from './types';
import { withNames } from '../approvals/names';
import { cancelPendingOfCall } from '../approvals/records';

/*
 * MCP Tasks: a tool that may take longer than one request lasts runs as a task. Its row is written
 * before the app hears of it, so any API process answers `tasks/get`; the add-on answers at once,
 * or accepts the call and answers later at its answer URL, to whichever process (calls/answer-later.ts).
 */

/** Above this a tool runs only as a task: one request lasts at most the call budget (55 s). */
export const MAX_REQUEST_TOOL_SECONDS = 30;
/** After a task ends its answer is kept this long for the app's next poll, then it is gone. */
const KEPT_AFTER_MS = 10 * 60_000;
/** What apps are asked to poll at; a task's notifications make faster polling needless. */
const TASK_POLL_MS = 2_000;
/** Rows removed per sweep, so a backlog drains without a long statement. */
const SWEEP_BATCH = 100;

export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** A task as both MCP revisions show it (each adapter renames what its revision calls differently). */
export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  /** ISO 8601 */
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** A completed or cancelled task's CallToolResult. */
  result?: ToolResult;
  /** A failed task's JSON-RPC error (Toolport's side failed; a tool's own failure is a completed isError). */
  error?: { code: number; message: string };
  /** Waiting for the person: the approval's own page, which an app that can open a URL may offer them. */
  approval?: { id: string; url: string; message: string };
}

export const isLongTool = (tool: { timeoutSeconds: number | null }) => (tool.timeoutSeconds ?? 0) > MAX_REQUEST_TOOL_SECONDS;

type TaskRow = typeof tasks.$inferSelect;

function viewOf(row: TaskRow): TaskView {
  return {
    taskId: row.id,
    status: row.status,
    ...(row.statusMessage ? { statusMessage: row.statusMessage } : {}),
    createdAt: row.createdAt.toISOString(),
    lastUpdatedAt: row.updatedAt.toISOString(),
    ttlMs: row.expiresAt.getTime() - row.createdAt.getTime(),
    pollIntervalMs: TASK_POLL_MS,
    ...(row.result && row.status === 'failed' ? { error: (row.result as { error: { code: number; message: string } }).error } : {}),
    ...(row.result && row.status !== 'failed' ? { result: row.result as ToolResult } : {}),
  };
}

export interface NewTask {
  callId: string;
  userId: string;
  grantId: string;
  appName: string;
  addonId: string;
  addonName: string;
  toolName: string;
  argsDigest: string;
  timeoutSeconds: number;
  outputSchema?: Record<string, unknown> | null;
  /** The call waits for the person before it is sent. */
  asksFirst?: boolean;
}

/**
 * The task's row, durable before the app hears of it; null when the person has their limit of
 * working tasks. Counted, then written: tasks started at the same moment may pass the limit by a few.
 */
export async function createTask(svc: Services, t: NewTask): Promise<TaskView | null> {
  const now = svc.clock.now();
  const [open] = await svc.db
    .select({ n: sql<number>`count(*)::int` })
    .from(tasks)
    // One whose add-on is past its time no longer counts, though nobody has read it since.
    .where(and(eq(tasks.userId, t.userId), eq(tasks.status, 'working'), gt(tasks.answerBy, now)));
  if ((open?.n ?? 0) >= svc.config.limits.openTasksPerPerson) return null;
  const answerBy = new Date(now.getTime() + t.timeoutSeconds * 1000);
  const [row] = await svc.db
    .insert(tasks)
    .values({
      id: newToken('task_', 24),
      callId: t.callId,
      userId: t.userId,
      grantId: t.grantId,
      appName: t.appName,
      addonId: t.addonId,
      addonName: t.addonName,
      toolName: t.toolName,
      argsDigest: t.argsDigest,
      outputSchema: t.outputSchema ?? null,
      statusMessage: t.asksFirst ? WAITING : SENDING,
      answerBy,
      createdAt: now,
      updatedAt: now,
      expiresAt: new Date(answerBy.getTime() + KEPT_AFTER_MS),
    })
    .returning();
  announceCallChange(svc, row!.userId, row!.callId);
  return viewOf(row!);
}

const SENDING = 'Sending the call to the add-on.';
const WAITING = 'Waiting for the person to approve the call.';
const ACCEPTED = 'The add-on accepted the call and is working on it.';

export function describeSeconds(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'an hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? 'a minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/**
 * A call the add-on has not taken this long after it was last moved on (begun, asked about,
 * sent) was never delivered, or its answer was lost with the process that sent it: the delivery
 * itself ends at MAX_REQUEST_TOOL_SECONDS, the person's answer at 30 s.
 */
const UNTAKEN_AFTER_MS = (MAX_REQUEST_TOOL_SECONDS + 15) * 1000;
/**
 * A task still waiting for the person this long after it was last moved on was lost with the
 * process holding it, and nobody took it over: the add-on's description (5 s), the person (30 s)
 * and a takeover (a lease, a sweep, TAKE_OVER_WITHIN_SECONDS) all fit well inside it.
 */
const UNDECIDED_AFTER_MS = 150_000;

/** How a working task ends when nobody answered it, if it is time: past its add-on's time, or never taken. */
function lapse(row: TaskRow, now: number): Ending | undefined {
  if (row.status !== 'working') return undefined;
  // Waiting for the person, the add-on's time has not begun: only a lost wait ends it.
  if (waitsForPerson(row)) {
    if (row.updatedAt.getTime() + UNDECIDED_AFTER_MS > now) return undefined;
    return {
      result: text('Toolport lost track of this call while it waited for the person’s approval (the server holding it stopped), so it did not run. Call again if it is still needed.', true),
      statusMessage: 'Toolport lost track of the call before the person decided.',
      reason: 'lost',
      outcome: 'failed',
      detail: 'task lost while waiting for the person',
    };
  }
  if (row.answerBy.getTime() <= now) {
    const seconds = Math.round((row.answerBy.getTime() - row.createdAt.getTime()) / 1000);
    return {
      result: text(`The add-on "${row.addonName}" did not answer within ${describeSeconds(seconds)}, so Toolport stopped waiting. It may or may not have completed: check before trying again.`, true),
      statusMessage: 'The add-on did not answer in time.',
      reason: 'overdue',
      outcome: 'timed_out',
      detail: 'task',
    };
  }
  if (row.acceptedAt === null && row.updatedAt.getTime() + UNTAKEN_AFTER_MS <= now) {
    return {
      result: text(`Toolport lost track of this call before the add-on "${row.addonName}" took it (the server sending it stopped), so it may not have run: check before trying again.`, true),
      statusMessage: 'Toolport lost track of the call before the add-on took it.',
      reason: 'lost',
      outcome: 'failed',
      detail: 'task lost before the add-on took it',
    };
  }
  return undefined;
}

/** A working task that lapsed ends now, with a sentence (any process, once). */
async function endIfLapsed(svc: Services, row: TaskRow): Promise<TaskRow> {
  const ending = lapse(row, svc.clock.now().getTime());
  if (!ending) return row;
  return (await settle(svc, row.callId, ending)) ?? (await rowOf(svc, row.id)) ?? row;
}

async function rowOf(svc: Services, taskId: string): Promise<TaskRow | undefined> {
  const [row] = await svc.db.select().from(tasks).where(eq(tasks.id, taskId));
  return row;
}

/** The task as its app sees it; undefined for another app's, an unknown or a discarded task. */
export async function getTask(svc: Services, grantId: string, taskId: string): Promise<TaskView | undefined> {
  if (typeof taskId !== 'string' || taskId.length > 64) return undefined;
  const row = await rowOf(svc, taskId);
  if (!row || row.grantId !== grantId || row.expiresAt.getTime() <= svc.clock.now().getTime()) return undefined;
  return withApproval(svc, await endIfLapsed(svc, row));
}

/** Not sent yet: the person has not allowed the call (states only move on, WAITING first). */
export const waitsForPerson = (row: Pick<TaskRow, 'status' | 'statusMessage' | 'acceptedAt'>) => row.status === 'working' && row.acceptedAt === null && row.statusMessage === WAITING;

/** A task waiting for the person carries its approval's page (only then is it looked up). */
async function withApproval(svc: Services, row: TaskRow): Promise<TaskView> {
  const view = viewOf(row);
  if (!waitsForPerson(row)) return view;
  const [waiting] = await svc.db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(eq(approvals.callId, row.callId), eq(approvals.status, 'pending'), gt(approvals.expiresAt, sql`now()`)));
  if (!waiting) return view;
  return {
    ...view,
    approval: {
      id: waiting.id,
      url: `${svc.config.publicUrl}/approvals/${waiting.id}`,
      message: `Toolport asks the person to approve "${row.toolName}" from ${row.addonName} on its own page; the call runs only if they allow it there.`,
    },
  };
}

/** A task's call as its app sees it, whoever asks (the process finishing a call taken over). */
export async function taskViewOfCall(svc: Services, callId: string): Promise<TaskView | undefined> {
  const row = await taskOfCall(svc, callId);
  return row && row.status === 'working' ? viewOf(row) : undefined;
}

/** The person is being asked now (the approval is recorded): apps following the task hear it. */
export async function noteAsking(svc: Services, callId: string): Promise<void> {
  await touch(svc, callId, WAITING);
}

/** The person allowed the call: it is on its way to the add-on, whose time starts now. False: the task ended meanwhile. */
export async function noteSending(svc: Services, callId: string, timeoutSeconds: number): Promise<boolean> {
  const answerBy = new Date(svc.clock.now().getTime() + timeoutSeconds * 1000);
  return touch(svc, callId, SENDING, { answerBy, expiresAt: new Date(answerBy.getTime() + KEPT_AFTER_MS) });
}

/** Moves a task still waiting for the person on (or marks that it still waits): never back, never an ended one. */
async function touch(svc: Services, callId: string, statusMessage: string, times: { answerBy?: Date; expiresAt?: Date } = {}): Promise<boolean> {
  const [row] = await svc.db
    .update(tasks)
    .set({ statusMessage, updatedAt: svc.clock.now(), ...times })
    .where(and(eq(tasks.callId, callId), eq(tasks.status, 'working'), isNull(tasks.acceptedAt), eq(tasks.statusMessage, WAITING)))
    .returning({ id: tasks.id, userId: tasks.userId });
  if (!row) return false;
  await svc.bus.publish(TASKS_CHANNEL, { taskId: row.id }).catch(() => {});
  announceCallChange(svc, row.userId, callId);
  return true;
}

/** The task of a call as stored (its add-on's answer checks the signature before anything changes). */
export async function taskOfCall(svc: Services, callId: string): Promise<TaskRow | undefined> {
  const [row] = await svc.db.select().from(tasks).where(eq(tasks.callId, callId));
  return row;
}

/** The same, once a lapsed task has ended (after the answer's signature is checked). */
export const currentTaskOf = (svc: Services, row: TaskRow) => endIfLapsed(svc, row);

/** Why a task ended, as its row keeps it: an add-on's late answer is told which. */
export type EndReason = 'answered' | 'cancelled' | 'overdue' | 'lost' | 'failed' | 'refused';

interface Ending {
  result: ToolResult | { error: { code: number; message: string } };
  statusMessage?: string;
  status?: TaskStatus;
  reason: EndReason;
  /** The call log's row, written by whichever process ends the task. */
  outcome: CallOutcomeName;
  detail?: string;
  sent?: boolean;
  decision?: string;
  decidedBy?: string;
}

/**
 * Ends a working task: once, whichever process gets there first, which also writes the call's log
 * row. Null when it had ended already.
 */
export async function settle(svc: Services, callId: string, e: Ending): Promise<TaskRow | null> {
  const now = svc.clock.now();
  const [row] = await svc.db
    .update(tasks)
    .set({ status: e.status ?? (e.reason === 'cancelled' ? 'cancelled' : 'completed'), result: e.result, statusMessage: e.statusMessage ?? null, endReason: e.reason, updatedAt: now })
    .where(and(eq(tasks.callId, callId), eq(tasks.status, 'working')))
    .returning();
  if (!row) return null;
  recordCall(svc, {
    id: callId,
    userId: row.userId,
    grantId: row.grantId,
    appName: row.appName,
    addonId: row.addonId,
    toolName: row.toolName,
    argsDigest: row.argsDigest,
    outcome: e.outcome,
    ...(e.detail ? { detail: e.detail.slice(0, 300) } : {}),
    ...(e.sent !== undefined ? { sent: e.sent } : {}),
    ...(e.decision ? { decision: e.decision, decidedBy: e.decidedBy } : {}),
    latencyMs: now.getTime() - row.createdAt.getTime(),
  });
  await svc.bus.publish(TASKS_CHANNEL, { taskId: row.id, ...(e.reason === 'cancelled' ? { cancel: true } : {}) }).catch(() => {});
  announceCallChange(svc, row.userId, callId);
  // An exclusive tool's task held the person's turn until now (a no-op for any other).
  await endTurn(svc.limiter, exclusiveLine(row.userId, row.addonId), callId).catch(() => {});
  return row;
}

/** What the add-on said, in a task's terms: an answer ends it, a 202 marks it taken. */
function endingOf(row: TaskRow, outcome: CallOutcome, how: Pick<Ending, 'decision' | 'decidedBy'> = {}): Ending {
  const seconds = Math.round((row.answerBy.getTime() - row.createdAt.getTime()) / 1000);
  const outputSchema = (row.outputSchema as Record<string, unknown> | null) ?? undefined;
  const shaped = shapeOutcome({ addonName: row.addonName, outputSchema, destructive: false }, outcome, seconds);
  return { result: shaped.result, reason: 'answered', outcome: shaped.outcome, ...(shaped.detail ? { detail: shaped.detail } : {}), ...(shaped.sent !== undefined ? { sent: shaped.sent } : {}), ...how };
}

/**
 * Where a task's delivery ends (the worker, in whichever process runs it): the outcome is written
 * to the task here, not by the API process that queued it, which may be gone by then.
 */
export async function recordDelivery(svc: Services, job: CallJob, outcome: CallOutcome): Promise<void> {
  if (outcome.kind === 'accepted') return noteAccepted(svc, job.callId);
  const row = await taskOfCall(svc, job.callId);
  if (!row || row.status !== 'working') return;
  const how = job.approval ? { decision: 'allowed', decidedBy: job.approval.channel } : {};
  await settle(svc, job.callId, endingOf(row, outcome, how));
}

/** An answer that came later, at the answer URL: the task ends with it, if it still works. */
export function answerTask(svc: Services, row: TaskRow, outcome: CallOutcome) {
  return settle(svc, row.callId, endingOf(row, outcome));
}

/**
 * The add-on answered 202. Its progress may have come first (the 202 travels back through the
 * queue): that progress stays the status.
 */
async function noteAccepted(svc: Services, callId: string): Promise<void> {
  const now = svc.clock.now();
  const [row] = await svc.db
    .update(tasks)
    .set({
      acceptedAt: sql`coalesce(${tasks.acceptedAt}, ${now.toISOString()}::timestamptz)`,
      statusMessage: sql`case when ${tasks.statusMessage} = ${SENDING} then ${ACCEPTED} else ${tasks.statusMessage} end`,
      updatedAt: now,
    })
    .where(and(eq(tasks.callId, callId), eq(tasks.status, 'working')))
    .returning({ id: tasks.id, userId: tasks.userId });
  if (!row) return;
  await svc.bus.publish(TASKS_CHANNEL, { taskId: row.id }).catch(() => {});
  announceCallChange(svc, row.userId, callId);
}

/** A working task's new status message: how far the add-on says it is. */
export async function noteProgress(svc: Services, callId: string, statusMessage: string): Promise<boolean> {
  const now = svc.clock.now();
  const [row] = await svc.db
    .update(tasks)
    // An add-on reporting progress has taken the call, whether or not its 202 was heard yet.
    .set({ statusMessage, updatedAt: now, acceptedAt: sql`coalesce(${tasks.acceptedAt}, ${now.toISOString()}::timestamptz)` })
    .where(and(eq(tasks.callId, callId), eq(tasks.status, 'working')))
    .returning({ id: tasks.id, userId: tasks.userId });
  if (!row) return false;
  await svc.bus.publish(TASKS_CHANNEL, { taskId: row.id }).catch(() => {});
  announceCallChange(svc, row.userId, callId);
  return true;
}

/**
 * The app or the person cancels a task: it ends `cancelled` unless it had ended; a delivery under
 * way in any process is stopped, and an answer that comes later is refused. False: no such task.
 */
export async function cancelTask(svc: Services, who: { grantId: string } | { userId: string }, taskId: string): Promise<boolean> {
  if (typeof taskId !== 'string' || taskId.length > 64) return false;
  const row = await rowOf(svc, taskId);
  if (!row || ('grantId' in who ? row.grantId !== who.grantId : row.userId !== who.userId)) return false;
  if (row.expiresAt.getTime() <= svc.clock.now().getTime()) return false;
  const by = 'grantId' in who ? 'the app' : 'the person';
  await settle(svc, row.callId, {
    result: text(`The call was cancelled by ${by} before the add-on answered.`, true),
    statusMessage: `Cancelled by ${by}.`,
    reason: 'cancelled',
    outcome: 'cancelled',
    detail: `task cancelled by ${by}`,
  });
  // Still waiting for the person, wherever its holder is (or after it was handed over): not any more.
  await cancelPendingOfCall(svc, row.callId, 'grantId' in who ? 'app' : 'dashboard');
  return true;
}

/** Part of the periodic sweep: a task past its time ends even when nobody is reading it. */
export async function endLapsedTasks(svc: Services): Promise<void> {
  const now = svc.clock.now();
  const due = await svc.db
    .select()
    .from(tasks)
    .where(
      and(
        eq(tasks.status, 'working'),
        // A superset of lapse(): endIfLapsed decides each (a task waiting for the person has its own, longer bound).
        or(lte(tasks.answerBy, now), and(isNull(tasks.acceptedAt), lte(tasks.updatedAt, new Date(now.getTime() - UNTAKEN_AFTER_MS)))),
      ),
    )
    .limit(SWEEP_BATCH);
  for (const row of due) await endIfLapsed(svc, row);
}

/** Ended tasks past their time are deleted (the periodic sweep's, any process). */
export async function forgetEndedTasks(svc: Services): Promise<void> {
  await svc.db.delete(tasks).where(inArray(tasks.id, svc.db.select({ id: tasks.id }).from(tasks).where(lt(tasks.expiresAt, svc.clock.now())).limit(SWEEP_BATCH)));
}

/**
 * The delivery of a task's call in this process stops when the task is cancelled in any process:
 * one subscription per process, one signal per delivery under way.
 */
class Running {
  private readonly byTask = new Map<string, CallCancel>();
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscribed: Promise<unknown> | undefined;
  constructor(private readonly svc: Services) {}

  private follow() {
    this.subscribed ??= this.svc.bus
      .subscribe(TASKS_CHANNEL, (msg) => {
        if (typeof msg?.taskId !== 'string') return;
        if (msg.cancel) this.byTask.get(msg.taskId)?.abort(new Error('the task was cancelled'));
        for (const wake of this.waiting.get(msg.taskId) ?? []) wake();
      })
      .catch((err) => {
        this.subscribed = undefined;
        throw err;
      });
    return this.subscribed;
  }

  async signalFor(taskId: string): Promise<{ signal: CallCancel; done: () => void }> {
    await this.follow();
    const signal = new CallCancel();
    this.byTask.set(taskId, signal);
    return { signal, done: () => this.byTask.delete(taskId) };
  }

  /** Armed before the task is read, so a change in between still wakes the wait. */
  wakeOn(taskId: string) {
    let woken = false;
    let wake = () => {};
    const set = this.waiting.get(taskId) ?? new Set();
    this.waiting.set(taskId, set);
    const waker = () => {
      woken = true;
      wake();
    };
    set.add(waker);
    const cancel = () => {
      set.delete(waker);
      if (!set.size) this.waiting.delete(taskId);
    };
    const ready = this.follow().catch(() => {});
    return {
      cancel,
      within: async (ms: number, signal?: AbortSignal) => {
        await ready;
        if (!woken && !signal?.aborted) {
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              signal?.removeEventListener('abort', done);
              resolve();
            };
            const timer = setTimeout(done, ms);
            wake = done;
            signal?.addEventListener('abort', done, { once: true });
          });
        }
        cancel();
      },
    };
  }
}
const running = new WeakMap<Services, Running>();

export function taskSignal(svc: Services, taskId: string) {
  let r = running.get(svc);
  if (!r) running.set(svc, (r = new Running(svc)));
  return r.signalFor(taskId);
}

/** Whether this app's tool of that name runs only as a task (an adapter answers before calling, as its revision says). */
export async function runsAsTask(svc: Services, actor: Parameters<Services['tools']['forApp']>[0], name: string): Promise<boolean> {
  const tool = (await svc.tools.forApp(actor)).byName.get(name);
  return !!tool && isLongTool(tool);
}

/**
 * Waits until `untilMs` (epoch) for the task to end (2025-11-25's `tasks/result` blocks): woken by
 * its change on the bus, and rechecked every few seconds in case a wake was missed.
 */
export async function awaitTask(svc: Services, grantId: string, taskId: string, untilMs: number, signal?: AbortSignal): Promise<TaskView | undefined> {
  let r = running.get(svc);
  if (!r) running.set(svc, (r = new Running(svc)));
  for (;;) {
    const woke = r.wakeOn(taskId);
    const task = await getTask(svc, grantId, taskId);
    const left = untilMs - svc.clock.now().getTime();
    if (!task || task.status !== 'working' || left <= 0 || signal?.aborted) {
      woke.cancel();
      return task;
    }
    await woke.within(Math.min(left, 5_000), signal);
  }
}

/** `GET /api/calls/running`: the person's calls at their add-on now, tasks first, newest first. */
export type RunningCall = Json<Awaited<ReturnType<typeof runningCalls>>>[number];

/** At most this many running calls are shown; the person's limit may be higher. */
const RUNNING_SHOWN = 100;

/**
 * The person's calls still working: tasks (one past its add-on's time ends as it is read, as for
 * its app), then calls within one request that have been at their add-on a while (call-tool.ts).
 */
export async function runningCalls({ ctx }: { ctx: Ctx }) {
  const userId = personId(ctx);
  const rows = await ctx.svc.db
    .select()
    .from(tasks)
    .where(and(eq(tasks.userId, userId), eq(tasks.status, 'working')))
    .orderBy(desc(tasks.createdAt))
    .limit(RUNNING_SHOWN);
  const now = ctx.svc.clock.now().getTime();
  const live: Array<{
    /** Null: a call within one request, which only its app can stop. */
    taskId: string | null;
    callId: string;
    app: string;
    addon: string;
    addonName: string;
    tool: string;
    statusMessage: string | null;
    accepted: boolean;
    createdAt: Date;
    /** Null: the call ends within its request's time. */
    answerBy: Date | null;
  }> = [];
  for (const row of rows) {
    const current = lapse(row, now) ? await endIfLapsed(ctx.svc, row) : row;
    if (current.status !== 'working') continue;
    live.push({
      taskId: current.id,
      callId: current.callId,
      app: current.appName,
      addon: current.addonId,
      addonName: current.addonName,
      tool: current.toolName,
      statusMessage: current.statusMessage,
      accepted: current.acceptedAt !== null,
      createdAt: current.createdAt,
      answerBy: current.answerBy,
    });
  }
  const calls = await runningCallRows(ctx.svc, userId, RUNNING_SHOWN - live.length);
  for (const c of calls) {
    live.push({
      taskId: null,
      callId: c.id,
      app: c.appName,
      addon: c.addonId,
      // Named below, with every call's tool.
      addonName: '',
      tool: c.toolName,
      statusMessage: null,
      accepted: false,
      // The row is written a moment after the call reached its add-on; its latency says when.
      createdAt: new Date(c.createdAt.getTime() - c.latencyMs),
      answerBy: null,
    });
  }
  // Shown by the names a person reads, as the call log is; a task keeps the add-on's name it was started under.
  const named = await withNames(ctx.svc, userId, live.map((c) => ({ addon: c.addon, tool: c.tool })));
  return live.map((c, i) => ({ ...c, addonName: c.addonName || named[i]!.addonName, toolTitle: named[i]!.toolTitle }));
}

/** The person stops one of their running calls, whichever app made it. */
export async function cancelRunningCall({ ctx, taskId }: { ctx: Ctx; taskId: string }): Promise<void> {
  if (!(await cancelTask(ctx.svc, { userId: personId(ctx) }, taskId))) throw notFound('That running call');
}
