import { and, eq, getTableColumns, inArray, isNull, ne, sql } from 'drizzle-orm';
import type { OwnConnection } from '../db/client';
import { approvalHolders, approvals, oauthGrants, pushSubscriptions, users } from '../db/schema/index';
import { CallCancel, type CancelSignal } from '../cancel';
import { newId } from '../ids';
import { APPROVALS_CHANNEL, userChannel } from '../events/channels';
import type { ApprovalDecision, ApprovalRequest, Approvals, CallWatcher } from '../calls/types';
import { tell } from '../calls/watch';
import type { ConfirmDescriptor } from '../outbound/types';
import type { CallOutcome } from '../queue/types';
import type { Services } from '../services';
import { sendApprovalPush, vapidKeys } from './push';
import {
  announceDecided,
  cancelPending,
  claimDecided,
  expireOverdue,
  readApproval,
  toView,
  transition,
  type ApprovalRow,
  type FinalStatus,
  type UserEvent,
  type ConfirmMissing,
} from './records';
import { forgetHeldResults } from './held';
import { endLapsedTasks, forgetEndedTasks } from '../calls/tasks';
import { forgetConfirmImages } from './confirm-images';
import { forgetArtifacts } from '../calls/artifacts';
import { endLostCalls } from '../calls/call-log';
import { forgetOldLogs } from '../calls/retention';
import { finishOrphans } from '../calls/call-tool';

/** DESIGN.md: the call waits up to 30 s; no answer is no. */
const APPROVAL_TTL_SECONDS = 30;
const PROGRESS_EVERY_MS = 5_000;
const CONFIRM_DEADLINE_MS = 5_000;
const SWEEP_EVERY_MS = 5_000;
/** Retention is days long: removing what aged out every ten minutes keeps each removal small. */
const RETENTION_EVERY_MS = 10 * 60_000;
/**
 * One lease row per process (approval_holders), not per approval, so renewing is one statement.
 * Long enough to ride out a short database restart without cancelling a live process's calls.
 */
export const LEASE_SECONDS = 10;
const RENEW_EVERY_MS = 3_000;
/** A statement stuck on a dead connection must not hold back the next attempt. */
const RENEW_TIMEOUT_MS = 2_000;
const RENEW_RETRY_MS = 500;
/** The lease connection's wait before connecting again: the attempts are already spaced. */
const LEASE_RECONNECT_S = 0.1;
/** A stopping process's one statement that records its waiting calls cancelled; past it, they end unrecorded (docs/faults.md). */
const STOP_STATEMENT_MS = 2_000;

export interface ApprovalsOptions {
  /** Tests only: a shorter wait than the contract's 30 s. */
  ttlSeconds?: number;
  /** Tests only: how long the add-on has to describe a `confirm` call. */
  confirmDeadlineMs?: number;
  /** How often this process marks overdue approvals expired; 0 turns the sweeper off. */
  sweepEveryMs?: number;
  /** Tests only: how often a call with a progress token hears that it is still waiting. */
  progressEveryMs?: number;
}

export interface ApprovalsService extends Approvals {
  readonly waiting: number;
  /** Recorded first, so each waiting call answers its app while the connection is still open. */
  stopHolding(): Promise<void>;
  close(): Promise<void>;
}

const FINAL = new Set<ApprovalRow['status']>(['allowed', 'denied', 'dismissed', 'expired', 'cancelled', 'revoked']);
/** Waiting approvals looked up per statement after the bus reconnects. */
const RECHECK_BATCH = 1_000;

/**
 * Kept small, since thousands may wait: one timer, itself as the abort listener, nothing open in
 * the database, and only what the wait needs of the request.
 */
class Waiting {
  timer: NodeJS.Timeout | undefined;
  settled = false;
  /** Local deadline derived from the database's own `expires_at - now()`. */
  deadline = 0;
  /** When the next progress message is due; never for a call that asked for none (one timer, to the deadline). */
  nextProgress = 0;
  resolve!: (d: ApprovalDecision) => void;
  reject!: (err: unknown) => void;
  readonly done = new Promise<ApprovalDecision>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });
  /** Resolves (never rejects) once the insert is done: a wake-up that comes sooner waits for it. */
  inserted: Promise<boolean> | undefined;
  readonly userId: string;
  readonly grantId: string | undefined;
  readonly signal: CancelSignal | undefined;
  /** Kept only to tell it progress while the person decides: nothing else of the exchange stays. */
  readonly watcher: ApprovalRequest['watcher'];
  readonly durable: boolean;
  /** Why the add-on's description is missing, when it is. */
  confirmMissing: ConfirmMissing | undefined;

  constructor(
    readonly owner: ApprovalsImpl,
    readonly id: string,
    req: ApprovalRequest,
  ) {
    this.userId = req.userId;
    this.grantId = req.grantId;
    this.signal = req.signal;
    this.watcher = req.watcher?.progress ? req.watcher : undefined;
    this.durable = !!req.durable;
  }

  /** This process stops: the call stays the person's to decide, and a live process finishes it (finishOrphans). */
  handOver() {
    if (this.finish({ status: 'cancelled', approvalId: this.id, decidedBy: 'shutdown', finishedElsewhere: true })) this.release();
  }

  settle(status: FinalStatus, decidedBy: string | null, decidedAt?: Date | null, reason?: string | null, elsewhere = false) {
    const decision: ApprovalDecision = { status, approvalId: this.id, decidedBy: decidedBy ?? undefined, decidedAt: decidedAt ?? undefined };
    if (reason) decision.reason = reason;
    if (elsewhere) decision.finishedElsewhere = true;
    if (this.finish(decision)) this.release();
  }

  /** Ends the wait with `decision`, once; false if it had already ended. */
  finish(decision: ApprovalDecision): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.resolve(decision);
    return true;
  }

  /** The call could not be held (no row, no subscription): the caller's promise rejects. */
  fail(err: unknown) {
    if (this.settled) return;
    this.settled = true;
    this.release();
    this.reject(err);
  }

  /** Lets go of what the wait holds: its timer, its abort listener, its place in the maps. */
  release() {
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this);
    this.owner.untrack(this);
  }

  /**
   * Something may have decided it (a person, the sweeper): believe only the database, and take the
   * call to finish. Taken already: another process took it over while this one looked gone.
   */
  async observe() {
    if (this.settled || !(await this.inserted)) return;
    const { svc, holderId } = this.owner;
    let row: ApprovalRow | undefined;
    let mine = false;
    try {
      row = await claimDecided(svc, this.id, holderId);
      mine = !!row;
      row ??= await readApproval(svc, this.id);
    } catch (err) {
      // The expiry timer still ends the wait; an allow is never assumed.
      svc.log.warn('cannot read an approval', { err, approvalId: this.id });
      return;
    }
    if (!row) return this.settle('expired', 'timeout');
    if (FINAL.has(row.status)) this.settle(row.status as FinalStatus, row.decidedBy, row.decidedAt, row.reason, !mine && row.runBy !== holderId);
  }

  /** Records `status` if nothing else was recorded first, else adopts what was. */
  async end(status: FinalStatus, decidedBy: string) {
    if (this.settled || !(await this.inserted)) return;
    const { svc } = this.owner;
    try {
      const row = await transition(svc, this.id, status, decidedBy, { runBy: this.owner.holderId });
      if (row) {
        this.settle(status, decidedBy);
        await announceDecided(svc, row);
        return;
      }
      await this.observe();
    } catch (err) {
      svc.log.error('cannot record an approval decision', { err, approvalId: this.id, status });
      // Its app is told it did not run; the row expires later, unless the person decides it first
      // and another process takes it over (docs/faults.md, a known limit).
      this.settle(status, decidedBy);
    }
  }

  tick() {
    if (this.settled) return;
    const now = this.owner.svc.clock.now().getTime();
    if (now >= this.deadline) {
      void this.end('expired', 'timeout');
      return;
    }
    if (now >= this.nextProgress) {
      this.nextProgress = now + this.owner.progressEveryMs;
      this.owner.progress(this);
    }
    this.timer = setTimeout(tickWaiting, Math.max(10, Math.min(this.nextProgress, this.deadline) - now), this);
  }

  /** The app's abort signal fired (this object is its listener: no closure per waiting call). */
  handleEvent() {
    void this.end('cancelled', 'app');
  }
}

const tickWaiting = (w: Waiting) => w.tick();

/** `promise`, or a rejection once `ms` passed (the promise itself is left to settle on its own). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Built once: drizzle would rebuild it per call. The database's clock decides expiry, for all processes. */
function prepareInsert(db: Services['db']) {
  return db
    .insert(approvals)
    .values({
      id: sql.placeholder('id'),
      userId: sql.placeholder('userId'),
      callId: sql.placeholder('callId'),
      grantId: sql.placeholder('grantId'),
      appName: sql.placeholder('appName'),
      addonId: sql.placeholder('addonId'),
      toolName: sql.placeholder('toolName'),
      arguments: sql.placeholder('arguments'),
      confirm: sql`${sql.placeholder('confirm')}::jsonb`,
      confirmMissing: sql.placeholder('confirmMissing'),
      destructive: sql.placeholder('destructive'),
      expiresAt: sql`now() + ${sql.placeholder('ttl')}::interval`,
      holderId: sql.placeholder('holderId'),
      session: sql.placeholder('session'),
      takeover: true,
    })
    .returning({
      ...getTableColumns(approvals),
      remainingMs: sql<number>`(extract(epoch from ${approvals.expiresAt} - now()) * 1000)::float8`,
      // In the same statement: most people have no push subscription, and a query of its own per call costs more.
      hasPush: sql<boolean>`exists (select 1 from ${pushSubscriptions} where ${pushSubscriptions.userId} = ${sql.placeholder('userId')})`,
      // Read by the statement a held call makes anyway, so no call pays a lookup of its own.
      urlElicitation: sql<boolean>`coalesce((select ${oauthGrants.urlElicitation} from ${oauthGrants} where ${oauthGrants.id} = ${sql.placeholder('grantId')}), false)`,
    })
    .prepare('toolport_insert_approval');
}

class ApprovalsImpl implements ApprovalsService {
  private readonly byUser = new Map<string, Set<Waiting>>();
  /** The calls this process holds, by approval id, for the one decisions subscription. */
  private readonly byId = new Map<string, Waiting>();
  private decisions: Promise<() => Promise<void>> | undefined;
  private readonly ttl: number;
  private readonly confirmDeadlineMs: number;
  readonly progressEveryMs: number;
  private readonly sweeper: NodeJS.Timeout | undefined;
  private readonly renewer: NodeJS.Timeout;
  private readonly gates: Promise<(() => Promise<void>) | undefined>;
  private readonly offReconnect: () => void;
  /** The progress message around the approval's id (its own page), built once. */
  private readonly progressBefore: string;
  private readonly progressAfter: string;
  /** This process's row in approval_holders (see LEASE_SECONDS). */
  readonly holderId = newId('hld');
  /** performance.now() of the last renewal; undefined until the first (a process may hold a call in its first 3 s). */
  private renewedAt: number | undefined;
  private renewing: Promise<void> | undefined;
  private renewRetry: NodeJS.Timeout | undefined;
  private renewFailures = 0;
  /**
   * Its own connection on Postgres: the shared pool backs off up to 20 s after failures, which
   * would outlast the lease.
   */
  private readonly lease: OwnConnection;
  private sweeping = false;
  /** When the sweep next removes the logs past their retention (performance.now()). */
  private retainAfter = 0;
  private stopping = false;
  /** The dashboards told of the calls cancelled at stop; awaited before the bus closes. */
  private announcing: Promise<unknown> | undefined;

  private readonly insertStatement: ReturnType<typeof prepareInsert>;

  constructor(readonly svc: Services, opts: ApprovalsOptions) {
    this.ttl = opts.ttlSeconds ?? APPROVAL_TTL_SECONDS;
    this.lease = svc.database.leaseConnection({ connectTimeoutS: RENEW_TIMEOUT_MS / 1000, reconnectS: LEASE_RECONNECT_S });
    this.insertStatement = prepareInsert(svc.db);
    this.confirmDeadlineMs = opts.confirmDeadlineMs ?? CONFIRM_DEADLINE_MS;
    this.progressEveryMs = opts.progressEveryMs ?? PROGRESS_EVERY_MS;
    this.progressBefore = `Waiting for the person to approve in the Toolport dashboard or on their phone: ${svc.config.publicUrl}/approvals/`;
    this.progressAfter =
      `. No answer within ${this.ttl} seconds is no; the call is answered within ${svc.config.callBudgetSeconds} seconds in all.`;
    this.gates = svc.changes.follow('gate', (msg) => void this.onGates(msg)).catch((err) => {
      svc.log.error('cannot follow revocations; approvals still expire', { err });
      return undefined;
    });
    // The VAPID key pair exists from the first start, before anyone subscribes.
    vapidKeys(svc).catch((err) => svc.log.warn('cannot prepare the Web Push keys yet', { err }));
    const every = opts.sweepEveryMs ?? SWEEP_EVERY_MS;
    if (every > 0) {
      this.sweeper = setInterval(() => void this.sweep(), every);
      this.sweeper.unref();
    }
    this.renewer = setInterval(() => void this.renewLeases(), RENEW_EVERY_MS);
    this.renewer.unref();
    this.offReconnect = svc.bus.afterReconnect(() => void this.recheck());
  }

  /** After a bus outage: a decision announced meanwhile never reached us; the database has it. */
  private async recheck() {
    const ids = [...this.byId.keys()];
    for (let i = 0; i < ids.length; i += RECHECK_BATCH) {
      try {
        const decided = await this.svc.db
          .select({ id: approvals.id })
          .from(approvals)
          .where(and(inArray(approvals.id, ids.slice(i, i + RECHECK_BATCH)), ne(approvals.status, 'pending')));
        for (const row of decided) await this.byId.get(row.id)?.observe();
      } catch (err) {
        this.svc.log.warn('cannot look up the decisions missed while the bus was down; each wait still ends at its expiry', { err });
        return;
      }
    }
  }

  /** One sweep at a time, so a slow one never runs beside the next. */
  private async sweep() {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await expireOverdue(this.svc);
      // Calls decided after their holder was gone are finished here (delivered if allowed); not by
      // a process that is stopping, which could not see them through.
      if (!this.stopping) await finishOrphans(this.svc, this.holderId);
      await forgetHeldResults(this.svc);
      // The process's one periodic sweep also drops tasks kept past their time (calls/tasks.ts)
      // and ends the calls a stopped process left running (calls/call-log.ts).
      await forgetEndedTasks(this.svc);
      await endLapsedTasks(this.svc);
      await endLostCalls(this.svc);
      await forgetConfirmImages(this.svc);
      await forgetArtifacts(this.svc);
      if (performance.now() >= this.retainAfter) {
        this.retainAfter = performance.now() + RETENTION_EVERY_MS;
        await forgetOldLogs(this.svc);
      }
    } catch (err) {
      this.svc.log.warn('approval sweep failed', { err });
    } finally {
      this.sweeping = false;
    }
  }

  /** Tells every process that this one still holds its waiting calls (see LEASE_SECONDS). */
  private async renewLeases() {
    if (!this.byId.size || this.renewRetry) return;
    try {
      await this.renewHolder();
      if (this.renewFailures) this.svc.log.info('the lease of the waiting approvals is renewed again', { failedAttempts: this.renewFailures });
      this.renewFailures = 0;
    } catch (err) {
      // Once per outage, not every half second.
      if (!this.renewFailures++) this.svc.log.warn('cannot renew the lease of the waiting approvals; trying again', { err, waiting: this.byId.size });
      this.renewRetry ??= setTimeout(() => {
        this.renewRetry = undefined;
        void this.renewLeases();
      }, RENEW_RETRY_MS);
      this.renewRetry.unref();
    }
  }

  /** Given up after RENEW_TIMEOUT_MS with its connection, so the next attempt is a fresh one. */
  private renewHolder(): Promise<void> {
    this.renewing ??= (async () => {
      try {
        const started = performance.now();
        const heldUntil = sql`now() + ${`${LEASE_SECONDS} seconds`}::interval`;
        const statement = this.lease
          .db()
          .insert(approvalHolders)
          .values({ id: this.holderId, heldUntil })
          .onConflictDoUpdate({ target: approvalHolders.id, set: { heldUntil } })
          .then(() => {});
        await within(statement, RENEW_TIMEOUT_MS);
        this.renewedAt = started;
      } catch (err) {
        this.lease.reset();
        throw err;
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  /** Before a new approval names this process as its holder, the lease must be fresh. */
  private async holding() {
    if (this.renewedAt === undefined || performance.now() - this.renewedAt >= RENEW_EVERY_MS) await this.renewHolder();
  }

  get waiting() {
    return this.byId.size;
  }

  progress(w: Waiting) {
    if (w.watcher) tell(this.svc, w.watcher, { kind: 'progress', message: this.progressBefore + w.id + this.progressAfter });
  }

  /** Offers the app the approval's own page (URL elicitation); the app's answer decides nothing. */
  private offerPage(w: Waiting, req: ApprovalRequest, watcher: CallWatcher) {
    tell(this.svc, watcher, {
      kind: 'offer',
      link: {
        kind: 'approval',
        elicitationId: w.id,
        url: `${this.svc.config.publicUrl}/approvals/${w.id}`,
        message: `Toolport asks the person to approve “${req.tool.title}” from ${req.tool.addonName} on its own page; the call runs only if they allow it there.`,
      },
    });
  }

  /**
   * null: no approval needed; `slow` or `failed`: no description, and why (the card says it). Its
   * own signal: `AbortSignal.any` would keep dependants on the call's signal for as long as the
   * person takes to decide.
   */
  private async askAddon(req: ApprovalRequest): Promise<ConfirmDescriptor | null | ConfirmMissing> {
    const asking = new CallCancel();
    const unfollow = req.signal ? asking.follow(req.signal) : undefined;
    let timer: NodeJS.Timeout | undefined;
    let slow = false;
    try {
      const outcome: CallOutcome | undefined = await Promise.race([
        this.svc.dispatcher.dispatch(
          {
            // Its own webhook-id: the add-on must not take the call itself for a retry of the confirm.
            callId: `${req.callId}_confirm`,
            type: 'tool.confirm',
            addonId: req.tool.addonId,
            tool: req.tool.name,
            arguments: req.argumentsText,
            subject: req.subject,
            app: { name: req.appName, clientId: req.clientId },
            ...(req.session ? { session: req.session } : {}),
            deadline: this.svc.clock.now().getTime() + this.confirmDeadlineMs,
            ...(req.tool.settings?.sealed ? { settings: req.tool.settings.sealed } : {}),
          },
          asking,
        ),
        new Promise<undefined>((r) => {
          timer = setTimeout(() => {
            slow = true;
            asking.abort(new DOMException('The add-on did not describe the call in time.', 'TimeoutError'));
            r(undefined);
          }, this.confirmDeadlineMs);
        }),
      ]);
      // Anything but an explicit null falls back to the plain approval, never to skipping it.
      if (outcome?.kind === 'confirm') return outcome.confirm;
      // The delivery's own deadline (the same one) may end it first: that is still slow.
      const late = outcome?.kind === 'failure' && (outcome.errorClass === 'timeout' || outcome.errorClass === 'deadline' || outcome.errorClass === 'cancelled');
      return slow || late ? 'slow' : 'failed';
    } catch (err) {
      this.svc.log.warn('tool.confirm failed; asking the person without a description', { err, callId: req.callId });
      return slow ? 'slow' : 'failed';
    } finally {
      clearTimeout(timer);
      unfollow?.();
    }
  }

  /**
   * Not an async function: the caller gets the Waiting's own promise, and while the person decides
   * nothing else of the request is alive (`hold` has returned by then).
   */
  request(req: ApprovalRequest): Promise<ApprovalDecision> {
    if (req.signal?.aborted) return Promise.resolve({ status: 'cancelled', decidedBy: 'app' });
    if (this.stopping) return Promise.resolve({ status: 'cancelled', decidedBy: 'shutdown' });
    const w = new Waiting(this, newId('apr'), req);
    void this.hold(w, req).catch((err: unknown) => w.fail(err));
    return w.done;
  }

  /** Asks the add-on (confirm), records the row, tells the person: then the call is held. */
  private async hold(w: Waiting, req: ApprovalRequest) {
    let confirm: ConfirmDescriptor | null = null;
    if (req.tool.confirm) {
      const described = await this.askAddon(req);
      if (described === null && !req.mustAsk) return void w.finish({ status: 'skipped' });
      if (typeof described === 'string') w.confirmMissing = described;
      else confirm = described;
      if (req.signal?.aborted) return void w.finish({ status: 'cancelled', decidedBy: 'app' });
    }
    await this.gates;
    // Listening before the row exists: a decision can never be announced before we listen.
    await this.listen();
    // Asked (confirm) before the process began to stop: no row, nobody to ask any more.
    if (this.stopping) return void w.finish({ status: 'cancelled', decidedBy: 'shutdown' });
    this.track(w);
    await this.begin(w, req, confirm);
    if (req.watcher) tell(this.svc, req.watcher, { kind: 'held' });
  }

  /** Its own frame, so nothing of the insert (query, SQL text, row) stays alive while we wait. */
  private async begin(w: Waiting, req: ApprovalRequest, confirm: ConfirmDescriptor | null) {
    const inserting = this.insert(w, req, confirm);
    w.inserted = inserting.then(
      () => true,
      () => false,
    );
    const inserted = await inserting;
    this.announce(w, req, confirm, inserted);
    const { watcher } = req;
    if (watcher?.elicitation === 'declared' || (watcher?.elicitation === 'grant' && inserted.urlElicitation)) this.offerPage(w, req, watcher);
    this.progress(w);
    // Without a progress token nothing is sent while it waits: no timer every 5 s for each held call.
    const now = this.svc.clock.now().getTime();
    w.nextProgress = w.watcher ? now + this.progressEveryMs : Infinity;
    w.timer = setTimeout(tickWaiting, Math.max(0, Math.min(w.nextProgress, w.deadline) - now), w);
    w.signal?.addEventListener('abort', w, { once: true });
    if (w.signal?.aborted) w.handleEvent();
  }

  private async insert(w: Waiting, req: ApprovalRequest, confirm: ConfirmDescriptor | null): Promise<{ row: ApprovalRow; hasPush: boolean; urlElicitation: boolean }> {
    await this.holding();
    const [row] = await this.insertStatement.execute({
      id: w.id,
      userId: req.userId,
      callId: req.callId,
      grantId: req.grantId ?? null,
      appName: req.appName,
      addonId: req.tool.addonId,
      toolName: req.tool.name,
      arguments: req.argumentsText,
      confirm: confirm ? JSON.stringify(confirm) : null,
      confirmMissing: w.confirmMissing ?? null,
      destructive: req.tool.destructive,
      ttl: `${this.ttl} seconds`,
      holderId: this.holderId,
      session: req.session ?? null,
    });
    const { remainingMs, hasPush, urlElicitation, ...inserted } = row!;
    w.deadline = this.svc.clock.now().getTime() + Number(remainingMs);
    return { row: inserted, hasPush, urlElicitation };
  }

  /** Shows the approval live in the dashboard and on the person's devices; never delays the call. */
  private announce(w: Waiting, req: ApprovalRequest, confirm: ConfirmDescriptor | null, { row, hasPush }: { row: ApprovalRow; hasPush: boolean }) {
    const view = toView(row);
    const event: UserEvent = { event: 'approval', id: w.id, data: view };
    this.svc.bus.publish(userChannel(row.userId), event).catch((err) => this.svc.log.warn('cannot announce an approval', { err }));
    if (!hasPush) return;
    void sendApprovalPush(this.svc, {
      row,
      toolTitle: req.tool.title,
      addonName: req.tool.addonName,
      confirm,
    }).catch((err) => this.svc.log.warn('web push failed', { err, approvalId: w.id }));
  }

  /** One subscription for every decision; a failed SUBSCRIBE is tried again by the next call. */
  private listen() {
    this.decisions ??= this.svc.bus
      .subscribe(APPROVALS_CHANNEL, (msg) => {
        const id = (msg as { id?: unknown } | null)?.id;
        if (typeof id === 'string') void this.byId.get(id)?.observe();
      })
      .catch((err) => {
        this.decisions = undefined;
        throw err;
      });
    return this.decisions;
  }

  private track(w: Waiting) {
    let set = this.byUser.get(w.userId);
    if (!set) this.byUser.set(w.userId, (set = new Set()));
    set.add(w);
    this.byId.set(w.id, w);
  }

  untrack(w: Waiting) {
    const set = this.byUser.get(w.userId);
    this.byId.delete(w.id);
    set?.delete(w);
    if (set && !set.size) this.byUser.delete(w.userId);
  }

  /** An app revoked or AI apps switched: ask the database, once for all of this person's waiting calls. */
  private async onGates(msg: unknown) {
    const { userId, grantId } = (msg ?? {}) as { userId?: unknown; grantId?: unknown };
    if (typeof userId !== 'string') return;
    const waiting = [...(this.byUser.get(userId) ?? [])].filter((w) => typeof grantId !== 'string' || w.grantId === grantId);
    if (!waiting.length) return;
    try {
      const [user] = await this.svc.db.select({ aiApps: users.aiApps }).from(users).where(eq(users.id, userId));
      const grantIds = [...new Set(waiting.map((w) => w.grantId).filter((g): g is string => !!g))];
      const live = new Set(
        grantIds.length
          ? (
              await this.svc.db
                .select({ id: oauthGrants.id })
                .from(oauthGrants)
                .where(and(inArray(oauthGrants.id, grantIds), isNull(oauthGrants.revokedAt)))
            ).map((g) => g.id)
          : [],
      );
      for (const w of waiting) {
        if (!user?.aiApps || (w.grantId && !live.has(w.grantId))) await w.end('revoked', 'revocation');
      }
    } catch (err) {
      this.svc.log.error('cannot check a revocation for waiting approvals', { err, userId });
    }
  }

  async stopHolding() {
    this.stopping = true;
    // A task's app polls its task, not this connection: its call is handed over, not cancelled.
    for (const w of [...this.byId.values()]) if (w.durable) w.handOver();
    const held = [...this.byId.values()];
    if (!held.length) return;
    const ids = held.map((w) => w.id);
    // One statement per 1,000 rather than one per call: thousands may be waiting, and the grace is short.
    const cancelling = (async () => {
      const rows: Awaited<ReturnType<typeof cancelPending>> = [];
      for (let i = 0; i < ids.length; i += RECHECK_BATCH) rows.push(...(await cancelPending(this.svc, ids.slice(i, i + RECHECK_BATCH), 'shutdown', this.holderId)));
      return rows;
    })();
    let cancelled: Awaited<typeof cancelling> = [];
    try {
      cancelled = await within(cancelling, STOP_STATEMENT_MS);
    } catch (err) {
      this.svc.log.error('cannot record the waiting calls as cancelled at shutdown; their apps are told they did not run', { err, waiting: held.length });
    }
    for (const row of cancelled) this.byId.get(row.id)?.settle('cancelled', 'shutdown');
    // Not in that statement: not inserted yet, or decided meanwhile (an allow still runs). Each
    // records its own end or adopts what was recorded; past the bound it ends unrecorded.
    const rest = held.filter((w) => !w.settled);
    await within(Promise.allSettled(rest.map((w) => w.end('cancelled', 'shutdown'))), STOP_STATEMENT_MS).catch(() => {});
    for (const w of held) w.settle('cancelled', 'shutdown');
    this.announcing = Promise.allSettled(cancelled.map((row) => announceDecided(this.svc, row)));
  }

  async close() {
    clearInterval(this.sweeper);
    clearInterval(this.renewer);
    clearTimeout(this.renewRetry);
    this.offReconnect();
    const unsubscribe = await this.gates;
    await unsubscribe?.().catch(() => {});
    // A call held here is answered before we stop: recorded cancelled (a task's handed over; see stopHolding).
    await this.stopHolding();
    await this.announcing;
    const stopListening = await this.decisions?.catch(() => undefined);
    await stopListening?.().catch(() => {});
    // Nothing of ours is waiting any more; the sweeper would forget the row within the hour anyway.
    if (this.renewedAt !== undefined) await this.svc.db.delete(approvalHolders).where(eq(approvalHolders.id, this.holderId)).catch(() => {});
    this.lease.reset();
  }
}

/** The approvals of DESIGN.md "A tool call, end to end" step 4, for `svc.approvals`. */
export function createApprovals(svc: Services, opts: ApprovalsOptions = {}): ApprovalsService {
  return new ApprovalsImpl(svc, opts);
}
