import { randomUUID } from 'node:crypto';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { and, eq, max } from 'drizzle-orm';
import { z } from 'zod';
import { deliveries } from '../db/schema/index';
import { CANCEL_CHANNEL, repliesChannel, resultChannel, type BusChannel, type BusMessages } from '../events/channels';
import { busMessage } from '../events/redis-bus';
import type { Logger } from '../log';
import type { Services } from '../services';
import { extractTrace, injectTrace, withContext } from '../tracing';
import { cancelled, deliverCall, tooLate } from './deliver';
import type { CallJob, CallOutcome, Dispatcher } from './types';

export interface RedisSettings {
  url: string;
  /** BullMQ key prefix and pub/sub channel prefix: `${prefix}:calls:*`, `${prefix}:result:{callId}`. */
  prefix: string;
}

export const CALLS_QUEUE = 'calls';
/**
 * Calls enqueued in one event-loop turn share a job, so BullMQ's scripts run once for all of them;
 * a call alone is its own job (job id = call id).
 */
const MAX_CALLS_PER_JOB = 32;
/** A job of several calls; a job of one call is the CallJob itself. */
export interface CallBatch {
  calls: CallJob[];
}
const BATCH_ID_PREFIX = 'batch_';
/** Past the deadline the waiting caller stops listening, leaving the worker this long to publish. */
const RESULT_GRACE_MS = 1_500;
// Finished jobs still hold the arguments: keep them only long enough to make a duplicate add a no-op.
const KEEP_COMPLETED = { age: 600, count: 10_000 };
const KEEP_FAILED = { age: 3600, count: 10_000 };
const CLEAN_EVERY_MS = 10 * 60_000;
/**
 * Pub/sub reaches only current subscribers, so the outcome is also kept in a key for a caller whose
 * subscription was down. It holds the result, so no longer than the deadline and its grace.
 */
const OUTCOME_TTL_MS = 60_000;
/** After the dispatcher's connection comes back, waiting calls look for missed outcomes and lost jobs. */
const RECHECK_AFTER_RECONNECT_MS = [500, 3_000];
const outcomeKey = (prefix: string, callId: string) => `${prefix}:outcome:${callId}`;

const unavailable = (): CallOutcome => ({
  kind: 'failure',
  errorClass: 'unavailable',
  message: 'Toolport could not queue the call; try again shortly.',
});

/** BullMQ refuses to start on an evicting Redis only by warning; say so clearly, once, at start. */
export async function checkEvictionPolicy(redis: Redis, log: Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply?.[1];
    if (policy && policy !== 'noeviction') {
      log.warn(`Redis maxmemory-policy is "${policy}": set it to "noeviction", or Redis may silently drop queued calls.`);
    }
  } catch {
    log.info('Cannot read the Redis maxmemory-policy (CONFIG is disabled); make sure it is "noeviction".');
  }
}

/** What a worker publishes on the waiting process's reply channel. */
interface Reply {
  callId: string;
  outcome: CallOutcome;
}

/** Where a call's caller listens: its process's reply channel, or the call's own; and what it hears. */
function replyOf(job: { callId: string; replyTo?: string }, outcome: CallOutcome): [channel: BusChannel, message: BusMessages[BusChannel]] {
  return job.replyTo ? [job.replyTo as ReturnType<typeof repliesChannel>, { callId: job.callId, outcome } satisfies Reply] : [resultChannel(job.callId), outcome];
}

/** Publishes a call's outcome where its caller listens. */
function reply(svc: Services, job: { callId: string; replyTo?: string }, outcome: CallOutcome) {
  return svc.bus.publish(...replyOf(job, outcome));
}

/** ROLE=all: a worker here hands outcomes over directly, not through a Redis PUBLISH to itself. */
export interface LocalReplies {
  replyTo: string;
  /** Settles the call's waiters in this process; false when none waits here. */
  settle(callId: string, outcome: CallOutcome): boolean;
}

/** One reply channel per API process, not a SUBSCRIBE per call: saves two Redis round trips a call. */
export function createBullDispatcher(
  svc: Services,
  redis: RedisSettings,
): Dispatcher & { ping(): Promise<void>; depth(): Promise<number>; local: LocalReplies } {
  // Fail fast on the API side: a caller should hear "unavailable", not hang while Redis is down.
  const connection = new Redis(redis.url, { maxRetriesPerRequest: 2, connectionName: `${redis.prefix}:api` });
  connection.on('error', () => {});
  const queue = new Queue<CallJob | CallBatch>(CALLS_QUEUE, {
    connection,
    prefix: redis.prefix,
    defaultJobOptions: { attempts: 1, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED },
  });
  queue.on('error', (err) => svc.log.warn('call queue error', { err }));
  void checkEvictionPolicy(connection, svc.log);

  const replyTo = repliesChannel(randomUUID());
  /** The job is kept to queue it again if Redis loses it. */
  const waiting = new Map<string, { job: CallJob; settlers: Set<(outcome: CallOutcome) => void>; enqueued?: boolean; jobId?: string }>();
  const settleAll = (callId: string, outcome: CallOutcome) => {
    const mine = waiting.get(callId);
    for (const settle of mine?.settlers ?? []) settle(outcome);
    return !!mine?.settlers.size;
  };
  const readOutcome = async (callId: string): Promise<CallOutcome | undefined> => {
    const raw = await connection.get(outcomeKey(redis.prefix, callId));
    return raw ? (JSON.parse(raw) as CallOutcome) : undefined;
  };
  /**
   * A job Redis lost is queued again under the same id, so the add-on sees at worst a retry with the
   * same webhook-id, never a second call.
   */
  const recheck = async () => {
    for (const [callId, mine] of waiting) {
      try {
        const found = await readOutcome(callId);
        if (found) {
          settleAll(callId, found);
          continue;
        }
        // Only a job whose add was answered can have been lost (one still being added is not there yet).
        if (mine.jobId && (await queue.getJobState(mine.jobId)) === 'unknown' && waiting.has(callId)) {
          svc.log.warn('a queued call was lost by Redis; queueing it again under its own id', { callId });
          await queue.add('call', { ...mine.job, ...injectTrace(), replyTo }, { jobId: callId });
          mine.jobId = callId;
        }
      } catch (err) {
        svc.log.warn('cannot recheck a waiting call after a Redis reconnect', { err, callId });
      }
    }
  };
  let readies = 0;
  connection.on('ready', () => {
    if (++readies === 1) return;
    for (const ms of RECHECK_AFTER_RECONNECT_MS) setTimeout(() => void recheck(), ms).unref();
  });
  // The replies arrive on the bus's own connection, which can drop alone.
  const offReconnect = svc.bus.afterReconnect(() => void recheck());
  let listening: Promise<() => Promise<void>> | undefined;
  // Subscribed once, before the first job exists, so even the fastest worker's answer is heard. A
  // failed SUBSCRIBE is tried again by the next call (ioredis resubscribes by itself after reconnects).
  const listen = () =>
    (listening ??= svc.bus
      .subscribe(replyTo, (msg) => {
        const { callId, outcome } = (msg ?? {}) as Partial<Reply>;
        if (typeof callId === 'string' && outcome) settleAll(callId, outcome);
      })
      .catch((err) => {
        listening = undefined;
        throw err;
      }));

  /** One Redis reply wakes many requests: the calls of one turn go out as one job. */
  let gathering: CallJob[] = [];
  const addGathered = () => {
    const calls = gathering.filter((c) => waiting.has(c.callId));
    gathering = [];
    for (let i = 0; i < calls.length; i += MAX_CALLS_PER_JOB) void addJob(calls.slice(i, i + MAX_CALLS_PER_JOB));
  };
  const addJob = async (calls: CallJob[]) => {
    const one = calls.length === 1;
    const jobId = one ? calls[0]!.callId : `${BATCH_ID_PREFIX}${randomUUID()}`;
    try {
      await (one ? queue.add('call', calls[0]!, { jobId }) : queue.add('calls', { calls }, { jobId }));
      for (const c of calls) {
        const mine = waiting.get(c.callId);
        if (mine) mine.jobId = jobId;
      }
    } catch (err) {
      svc.log.error('cannot enqueue a call', { err, callIds: calls.map((c) => c.callId) });
      for (const c of calls) settleAll(c.callId, unavailable());
    }
  };
  const enqueue = (call: CallJob) => {
    if (!gathering.length) setImmediate(addGathered);
    gathering.push(call);
  };

  return {
    async dispatch(job, signal) {
      if (signal?.aborted) return cancelled();
      let settle!: (outcome: CallOutcome) => void;
      const outcome = new Promise<CallOutcome>((resolve) => (settle = resolve));
      // At the deadline, one last look for an outcome whose broadcast we missed.
      const timer = setTimeout(
        () =>
          void readOutcome(job.callId).then(
            (found) => settle(found ?? tooLate()),
            () => settle(tooLate()),
          ),
        Math.max(0, job.deadline - svc.clock.now().getTime()) + RESULT_GRACE_MS,
      );
      let mine = waiting.get(job.callId);
      if (!mine) waiting.set(job.callId, (mine = { job, settlers: new Set() }));
      mine.settlers.add(settle);
      const subscribed = listen();
      subscribed.catch((err) => {
        svc.log.error('cannot listen for call results', { err, callId: job.callId });
        settle(unavailable());
      });
      const onAbort = () => {
        settle(cancelled());
        // Workers stop retrying (and skip the call if they pick it up now); a waiting job of this
        // call alone is dropped (a shared job goes on for its other calls).
        void svc.bus.publish(CANCEL_CHANNEL, { callId: job.callId, deadline: job.deadline }).catch(() => {});
        if (mine.jobId === job.callId) void queue.remove(job.callId).catch(() => {});
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        // A Redis outage must not hold the caller past the deadline: the subscription races the timer.
        const ready = await Promise.race([subscribed.then(() => true, () => false), outcome.then(() => false)]);
        // One job per call id: a second dispatch of the same call in this process waits for the first's.
        if (ready && !mine.enqueued) {
          mine.enqueued = true;
          // The caller's span (the `dispatch` span) travels in the job: the worker continues its trace.
          enqueue({ ...job, ...injectTrace(), replyTo });
        }
        return await outcome;
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        mine.settlers.delete(settle);
        if (!mine.settlers.size && waiting.get(job.callId) === mine) waiting.delete(job.callId);
      }
    },
    async ping() {
      await connection.ping();
    },
    local: { replyTo, settle: settleAll },
    /** Jobs waiting for a worker, service-wide (the `toolport_queue_depth` gauge); a job may carry several calls. */
    depth: () => queue.getJobCountByTypes('wait', 'prioritized', 'delayed'),
    async close() {
      offReconnect();
      await listening?.then((off) => off()).catch(() => {});
      await queue.close();
      await connection.quit().catch(() => {});
    },
  };
}

/** Trace context and the reply channel are hints: a malformed one is dropped, never trusted, and the call still runs. */
const hint = <T extends z.ZodTypeAny>(schema: T) => schema.optional().catch(undefined);

/** A job's payload as this process's dispatchers write it; a job that is not one is not delivered. */
const callJobSchema = z.object({
  callId: z.string(),
  type: z.enum(['tool.call', 'tool.confirm']),
  addonId: z.string(),
  tool: z.string(),
  arguments: z.string(),
  subject: z.string(),
  app: z.object({ name: z.string(), clientId: z.string() }),
  session: hint(z.string().regex(/^ses_[\w-]{26}$/)),
  owner: hint(z.object({ userId: z.string().max(64), grantId: z.string().max(64) })),
  deadline: z.number(),
  answerBy: z.number().optional(),
  answerUrl: z.string().url().max(2048).optional(),
  approval: z.object({ id: z.string(), decidedAt: z.string(), channel: z.string(), argumentsHash: z.string() }).optional(),
  settings: z.string().optional(),
  accounts: z.string().optional(),
  traceparent: hint(z.string().max(128)),
  tracestate: hint(z.string().max(512)),
  // A reply channel is only ever one of ours: anything else falls back to the call's own channel.
  replyTo: hint(z.string().regex(/^replies:[0-9a-f-]{36}$/)),
}) satisfies z.ZodType<CallJob, z.ZodTypeDef, unknown>;

/** A job of several calls: each is read on its own, so the readable ones are still answered. */
const callBatchSchema = z.object({ calls: z.array(z.unknown()) });

function readJob(data: unknown): CallJob | undefined {
  const job = callJobSchema.safeParse(data);
  return job.success ? job.data : undefined;
}

/** The calls a job carries (the CallJob itself, or a batch of them) that can be read, and whether that is all. */
function callsOf(data: unknown): { calls: CallJob[]; all: boolean; batch: boolean } {
  const parsed = callBatchSchema.safeParse(data);
  if (!parsed.success) {
    const one = readJob(data);
    return { calls: one ? [one] : [], all: !!one, batch: false };
  }
  const batch = parsed.data.calls;
  const calls = batch.map(readJob).filter((c): c is CallJob => c !== undefined);
  return { calls, all: calls.length === batch.length && calls.length > 0 && batch.length <= MAX_CALLS_PER_JOB, batch: true };
}

/**
 * After a worker died mid-call, continue its attempt numbers rather than repeat them; a worker
 * killed mid-request left no row for that attempt, hence at least one attempt per pickup.
 */
async function nextAttempt(svc: Services, job: CallJob, pickups: number): Promise<number> {
  await svc.logs.flushed();
  const [row] = await svc.db
    .select({ last: max(deliveries.attempt) })
    .from(deliveries)
    .where(and(eq(deliveries.addonId, job.addonId), eq(deliveries.callId, job.callId)));
  return Math.max((row?.last ?? 0) + 1, pickups);
}

/**
 * On a quiet queue BullMQ's loop makes two empty fetches per job (the wake-up marker is left in
 * place); an idle worker that gets a job is marked drained so it goes straight to the blocking wait.
 * `drained` is private: test/dispatch-bullmq.test.ts counts the fetches to catch an upgrade.
 */
export class PromptWorker<T> extends Worker<T> {
  private jobsRunning = 0;
  protected override async callProcessJob(job: Job<T>, token: string, signal?: AbortSignal) {
    this.jobsRunning++;
    try {
      return await super.callProcessJob(job, token, signal);
    } finally {
      this.jobsRunning--;
    }
  }
  protected override async moveToActive(token: string, name?: string) {
    const job = await super.moveToActive(token, name);
    if (job && this.jobsRunning === 0) (this as unknown as { drained: boolean }).drained = true;
    return job;
  }
}

export interface CallWorker {
  close(): Promise<void>;
}

export interface CallWorkerOptions {
  concurrency?: number;
  /** A dead worker's job is picked up again after at most about lockDuration + stalledInterval. */
  lockDuration?: number;
  stalledInterval?: number;
  /** The dispatcher of this process, when there is one: its calls are answered without Redis pub/sub. */
  local?: LocalReplies;
}

/** Retries inside the processor: deadline-bound backoff, not BullMQ's delayed retries. */
export async function startCallWorker(svc: Services, redis: RedisSettings, opts: CallWorkerOptions = {}): Promise<CallWorker> {
  // BullMQ workers need maxRetriesPerRequest: null on their own connections.
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null, connectionName: `${redis.prefix}:worker` });
  connection.on('error', () => {});
  await checkEvictionPolicy(connection, svc.log);
  // Outcomes (a SET and a PUBLISH a call) on a connection of their own that sends what a tick
  // issued in one write: not BullMQ's, whose scripts are not safe to auto-pipeline.
  const outcomes = new Redis(redis.url, { maxRetriesPerRequest: 2, connectionName: `${redis.prefix}:outcomes`, enableAutoPipelining: true });
  outcomes.on('error', () => {});

  // Cancellations arrive by broadcast; remembered until the call's deadline in case its job starts later.
  const cancelledCalls = new Map<string, number>();
  const running = new Map<string, AbortController>();
  const unsubscribe = await svc.bus.subscribe(CANCEL_CHANNEL, (msg) => {
    const { callId, deadline } = (msg ?? {}) as { callId?: unknown; deadline?: unknown };
    if (typeof callId !== 'string') return;
    cancelledCalls.set(callId, typeof deadline === 'number' ? deadline : svc.clock.now().getTime() + 60_000);
    running.get(callId)?.abort();
  });

  /** Delivers one call and hands its outcome to its caller; what the job keeps of it. */
  const runCall = async (data: CallJob, pickups: number): Promise<string> => {
    const controller = new AbortController();
    if (cancelledCalls.has(data.callId)) controller.abort();
    running.set(data.callId, controller);
    try {
      if (pickups > 1) {
        // Picked up again after a worker died: a call whose outcome it had stored was answered (in
        // a job of several calls, most likely); it is told again, not sent again.
        const stored = await connection.get(outcomeKey(redis.prefix, data.callId));
        if (stored) {
          const outcome = JSON.parse(stored) as CallOutcome;
          await reply(svc, data, outcome).catch(() => {});
          return `answered before: ${outcome.kind}`;
        }
      }
      const firstAttempt = pickups > 1 ? await nextAttempt(svc, data, pickups) : 1;
      // Joined to the API's trace through the job's traceparent (a no-op when nothing is traced).
      const outcome = await withContext(extractTrace(data), () => deliverCall(svc, data, { signal: controller.signal, firstAttempt }));
      // A caller in this process hears at once, and it is the only one: a job names the one process
      // waiting for it (replyTo), whose dispatcher settles it here. Nothing to store or broadcast.
      const local = data.replyTo !== undefined && data.replyTo === opts.local?.replyTo && opts.local.settle(data.callId, outcome);
      if (!local) {
        // Stored, then broadcast, on one connection (which keeps their order): a failed publish does
        // not fail a delivered call. No ioredis Pipeline: it copies every BullMQ script onto itself.
        const stored = outcomes.set(outcomeKey(redis.prefix, data.callId), JSON.stringify(outcome), 'PX', OUTCOME_TTL_MS);
        void outcomes.publish(...busMessage(redis.prefix, ...replyOf(data, outcome))).catch((err) => {
          svc.log.warn('cannot broadcast a call outcome; the caller reads it from Redis', { err, callId: data.callId });
        });
        await stored;
      }
      // The job keeps only what happened, never the result itself.
      return outcome.kind === 'failure' ? `failure:${outcome.errorClass}` : outcome.kind;
    } finally {
      running.delete(data.callId);
    }
  };

  // A job of several calls delivers them side by side; each caller hears as soon as its call is done.
  const processor = async (job: Job<CallJob | CallBatch>) => {
    const { calls, all } = callsOf(job.data);
    if (!all) throw new UnrecoverableError('The job is not a call.');
    // Settled, not raced: a call that fails on our side does not cut short the others' deliveries.
    const ran = await Promise.allSettled(calls.map((call) => runCall(call, job.attemptsStarted)));
    const failed = ran.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return ran.map((r) => (r as PromiseFulfilledResult<string>).value).join(' ');
  };

  const worker = new PromptWorker<CallJob | CallBatch>(CALLS_QUEUE, processor, {
    connection,
    prefix: redis.prefix,
    concurrency: opts.concurrency ?? 64,
    lockDuration: opts.lockDuration ?? 5_000,
    stalledInterval: opts.stalledInterval ?? 5_000,
    maxStalledCount: 1,
    removeOnComplete: KEEP_COMPLETED,
    removeOnFail: KEEP_FAILED,
  });
  worker.on('error', (err) => svc.log.warn('call worker error', { err }));
  // A job that failed outside the processor's care (stalled twice, unreadable) still gets an answer.
  worker.on('failed', (job, err) => {
    if (!job?.id) return;
    const { calls: readable, batch } = callsOf(job.data);
    // An unreadable job of one call is answered on the call's own channel (its id is the job's).
    const calls = readable.length || batch ? readable : [{ callId: job.id }];
    svc.log.error('call job failed', { err, jobId: job.id, callIds: calls.map((c) => c.callId) });
    for (const call of calls) {
      void reply(svc, call, { kind: 'failure', errorClass: 'internal', message: 'Toolport could not deliver the call; try again.' }).catch(() => {});
    }
  });

  const janitor = new Queue(CALLS_QUEUE, { connection, prefix: redis.prefix });
  const clean = async () => {
    try {
      await janitor.clean(KEEP_COMPLETED.age * 1000, 1000, 'completed');
      await janitor.clean(KEEP_FAILED.age * 1000, 1000, 'failed');
    } catch (err) {
      svc.log.warn('call queue cleanup failed', { err });
    }
  };
  const sweep = setInterval(() => void clean(), CLEAN_EVERY_MS);
  sweep.unref();
  const forget = setInterval(() => {
    const now = svc.clock.now().getTime();
    for (const [callId, until] of cancelledCalls) if (until < now) cancelledCalls.delete(callId);
  }, 30_000);
  forget.unref();

  return {
    async close() {
      clearInterval(sweep);
      clearInterval(forget);
      await unsubscribe().catch(() => {});
      await worker.close();
      await janitor.close();
      await Promise.all([connection.quit().catch(() => {}), outcomes.quit().catch(() => {})]);
    },
  };
}
