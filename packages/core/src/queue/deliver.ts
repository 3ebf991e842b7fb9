import { hostname } from 'node:os';
import { keepArtifacts } from '../calls/artifacts';
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { and, eq, isNull } from 'drizzle-orm';
import { publishLiveDelivery } from '../addons/live-deliveries';
import { liveSecrets } from '../addons/signing-secrets';
import { cacheKind, type BoundedMap } from '../caches';
import { addons } from '../db/schema/index';
import type { DeliveryRow } from '../db/log-writer';
import { newId } from '../ids';
import type { WebhookAnswer } from '../outbound/types';
import { MAX_RESULT_BYTES, postWebhook, safeSentence } from '../outbound/webhook';
import { neverSent } from '../outbound/http-client';
import type { Services } from '../services';
import { inSpan } from '../tracing';
import type { CallJob, CallOutcome } from './types';
import { settingsJson } from '../installs/settings';
import { accountsJson } from '../installs/account-tokens';
import { recordDelivery } from '../calls/tasks';
import { keepConfirmImage } from '../approvals/confirm-images';

import type { CancelSignal } from '../cancel';

const TARGET_TTL_MS = 5_000;
const TARGET_CACHE_MAX = 10_000;
const MAX_ATTEMPTS = 6;
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 4_000;
/** An attempt with less time than this left would only time out. */
const MIN_ATTEMPT_MS = 200;
const WORKER = `${hostname()}:${process.pid}`;

interface Target {
  webhookUrl: string;
  disabled: boolean;
  secrets: string[];
}

interface TargetCache {
  /** Each add-on's target, a few seconds at most (a change whose bus message was missed shows within that). */
  entries: BoundedMap<string, Target | null>;
  /** Bumped by every invalidation: a load that raced one is not cached. */
  generation: number;
  ready: Promise<unknown>;
}

/** Drops one add-on's cached target, or all of them; a load racing this is not cached. */
function forget(cache: TargetCache, addonId?: string) {
  cache.generation++;
  if (addonId !== undefined) cache.entries.delete(addonId);
  else cache.entries.clear();
}

const TARGETS = cacheKind('delivery targets', (svc, scope): TargetCache => {
  const cache: TargetCache = { entries: scope.map(TARGET_CACHE_MAX, TARGET_TTL_MS), generation: 0, ready: Promise.resolve() };
  cache.ready = scope
    .follow('addon', (msg) => forget(cache, typeof msg.addonId === 'string' ? msg.addonId : undefined))
    .catch((err) => svc.log.warn('cannot follow add-on changes; relying on the cache lifetime', { err }));
  // A change broadcast while the bus was down was missed: start over.
  scope.afterReconnect(() => forget(cache));
  return cache;
}, ['addon']);

/** The add-on's webhook and live secrets, cached a few seconds; null when it does not exist. */
async function loadTarget(svc: Services, addonId: string): Promise<Target | null> {
  const cache = svc.caches.get(TARGETS);
  await cache.ready;
  const hit = cache.entries.get(addonId);
  if (hit !== undefined) return hit;
  const generation = cache.generation;
  const [row] = await svc.db
    .select({ webhookUrl: addons.webhookUrl, disabledAt: addons.webhookDisabledAt })
    .from(addons)
    .where(and(eq(addons.id, addonId), isNull(addons.deletedAt)));
  const target = row ? { webhookUrl: row.webhookUrl, disabled: row.disabledAt !== null, secrets: await liveSecrets(svc, addonId) } : null;
  if (cache.generation === generation) cache.entries.set(addonId, target);
  return target;
}

/** DESIGN.md's body; the arguments' JSON text is inserted byte for byte (the approval digest covers it). */
function webhookBody(job: CallJob, attempt: number, settings: string | undefined, accounts: string | undefined): string {
  // A task's call may also be answered later: at `answerUrl`, until `answerBy`.
  const call = JSON.stringify({
    id: job.callId,
    deadline: new Date(job.deadline).toISOString(),
    attempt,
    ...(job.session ? { session: job.session } : {}),
    ...(job.answerUrl && job.answerBy ? { answerUrl: job.answerUrl, answerBy: new Date(job.answerBy).toISOString() } : {}),
  });
  const { approval } = job;
  const receipt = approval
    ? `,"approval":${JSON.stringify({ id: approval.id, decidedAt: approval.decidedAt, channel: approval.channel, argumentsHash: approval.argumentsHash })}`
    : '';
  return (
    `{"type":${JSON.stringify(job.type)},"addon":${JSON.stringify(job.addonId)},"tool":${JSON.stringify(job.tool)},` +
    `"arguments":${job.arguments},"call":${call},"user":${JSON.stringify({ id: job.subject })},` +
    `"app":${JSON.stringify({ name: job.app.name, clientId: job.app.clientId })}${receipt}${settings ? `,"settings":${settings}` : ''}` +
    `${accounts ? `,"accounts":${accounts}` : ''}}`
  );
}

export interface AttemptResult {
  outcome: CallOutcome;
  /** Worth another attempt (connection error, timeout, 5xx, 408, 429), time permitting. */
  retryable: boolean;
  /** Certainly never reached the add-on (refused before sending, or a connection that never opened). */
  notSent?: true;
}

const failure = (errorClass: string, message: string, retryable = false): AttemptResult => ({
  outcome: { kind: 'failure', errorClass, message },
  retryable,
});

function record(
  svc: Services,
  job: CallJob,
  attempt: number,
  span: Span,
  row: { status?: number; latencyMs: number; errorClass?: string; detail?: string; outcome: string },
) {
  // The span gets the attempt's classification, never the detail (it may quote the add-on's answer).
  span.setAttribute('toolport.delivery.outcome', row.outcome);
  if (row.status !== undefined) span.setAttribute('http.status_code', row.status);
  if (row.errorClass) {
    span.setAttribute('toolport.error_class', row.errorClass);
    span.setStatus({ code: SpanStatusCode.ERROR, message: row.errorClass });
  }
  // Written behind the delivery (svc.logs): the call's answer does not wait for its log line.
  const delivery: DeliveryRow = {
    id: newId('dlv'),
    addonId: job.addonId,
    callId: job.callId,
    type: job.type,
    attempt,
    subject: job.subject,
    status: row.status ?? null,
    latencyMs: Math.max(0, Math.round(row.latencyMs)),
    errorClass: row.errorClass ?? null,
    detail: row.detail?.slice(0, 500) ?? null,
    // The tool, for the delivery log: the call's row may go with its person.
    meta: { outcome: row.outcome, worker: WORKER, tool: job.tool },
    // Milliseconds, like the cursor of the delivery log that pages on it.
    createdAt: svc.clock.now(),
  };
  svc.logs.delivery(delivery);
  publishLiveDelivery(svc, job, delivery, row.outcome);
}

async function disableWebhook(svc: Services, addonId: string) {
  await svc.db
    .update(addons)
    .set({ webhookDisabledAt: svc.clock.now() })
    .where(and(eq(addons.id, addonId), isNull(addons.webhookDisabledAt)));
  await svc.changes.changed('addon', { addonId }).catch(() => {});
}

function toOutcome(answer: WebhookAnswer): CallOutcome {
  if (answer.kind === 'failure') return { kind: 'failure', errorClass: answer.errorClass, message: safeSentence(answer) };
  // Never for a call (only a tools.list delivery is answered so).
  if (answer.kind === 'tools') return { kind: 'failure', errorClass: 'bad_answer', message: 'The add-on answered with something Toolport could not read.' };
  return answer;
}

/** Safe to repeat: the call id is the add-on's idempotency key. */
function runDelivery(svc: Services, job: CallJob, attempt: number, signal?: CancelSignal): Promise<AttemptResult> {
  const attributes = {
    'toolport.call.id': job.callId,
    'toolport.delivery.type': job.type,
    'toolport.addon.id': job.addonId,
    'toolport.tool.name': job.tool,
    'toolport.delivery.attempt': attempt,
  };
  return inSpan('deliver', { attributes }, (span) => attemptDelivery(svc, job, attempt, span, signal));
}

async function attemptDelivery(svc: Services, job: CallJob, attempt: number, span: Span, signal?: CancelSignal): Promise<AttemptResult> {
  if (svc.clock.now().getTime() >= job.deadline - MIN_ATTEMPT_MS) {
    record(svc, job, attempt, span, {
      latencyMs: 0,
      errorClass: 'deadline',
      outcome: 'failure',
      detail: 'Not sent: the call reached its deadline before it could be delivered.',
    });
    return { outcome: tooLate(), retryable: false, notSent: true };
  }
  const target = await loadTarget(svc, job.addonId);
  if (!target || target.disabled || !target.secrets.length) {
    svc.metrics.webhookFailure(job.addonId, 'gone');
    const detail = !target
      ? 'Not sent: the add-on no longer exists.'
      : target.disabled
        ? 'Not sent: the webhook is disabled since it answered 410 Gone. Push the add-on again to enable it.'
        : 'Not sent: the add-on has no live signing secret. Rotate its secret.';
    record(svc, job, attempt, span, { latencyMs: 0, errorClass: 'gone', outcome: 'failure', detail });
    return { outcome: toOutcome({ kind: 'failure', errorClass: 'gone', retryable: false, detail }), retryable: false, notSent: true };
  }

  // Each attempt may take all the time the call has left: cut shorter, a slow tool would be sent
  // again while its first attempt may still be working.
  const deadline = job.deadline;
  const { answer, status, latencyMs } = await postWebhook({
    client: svc.outbound,
    clock: svc.clock,
    url: target.webhookUrl,
    secrets: target.secrets,
    id: job.callId,
    body: webhookBody(job, attempt, job.settings ? settingsJson(svc, job.settings) : undefined, job.accounts ? accountsJson(svc, job.accounts) : undefined),
    kind: job.type,
    deadline,
    maxResultBytes: MAX_RESULT_BYTES,
    signal,
    answerLater: !!job.answerUrl,
  });

  if (answer.kind !== 'failure') {
    // Past the deadline the app has been told the call timed out: the answer is not its result.
    if (svc.clock.now().getTime() > job.deadline) {
      record(svc, job, attempt, span, { status, latencyMs, outcome: 'late', errorClass: 'deadline', detail: 'The add-on answered after the call had ended; the app was told it timed out.' });
      return { outcome: tooLate(), retryable: false };
    }
    if (answer.kind === 'confirm') return confirmed(svc, job, attempt, span, { status, latencyMs }, answer);
    const failed = answer.kind === 'refusal' && answer.failed;
    const isError = answer.kind === 'result' && answer.isError;
    record(svc, job, attempt, span, {
      status,
      latencyMs,
      outcome: failed ? 'addon_failed' : isError ? 'tool_error' : answer.kind,
      ...(failed ? { errorClass: 'addon_failed', detail: `The add-on's code failed while handling the call and answered “${answer.message.replace(/[.!?]+$/, '')}”. Its own logs have the details.` } : {}),
      // A refusal's sentence: without it the log showed a 200 with nothing wrong.
      ...(answer.kind === 'refusal' && !failed ? { detail: answer.message } : {}),
    });
    return { outcome: failed ? { kind: 'failure', errorClass: 'addon_failed', message: answer.message } : toOutcome(answer), retryable: false };
  }
  // The app hanging up is not the add-on failing.
  if (answer.errorClass !== 'cancelled') svc.metrics.webhookFailure(job.addonId, answer.errorClass);
  let detail = answer.detail;
  if (answer.errorClass === 'gone' || status === 410) {
    await disableWebhook(svc, job.addonId);
    detail = `${detail} The webhook is now disabled: calls are refused until you push the add-on again.`;
  }
  record(svc, job, attempt, span, { status: status ?? answer.status, latencyMs, errorClass: answer.errorClass, detail, outcome: 'failure' });
  const notSent = status === undefined && answer.status === undefined && neverSent(answer.errorClass, answer.detail);
  return { outcome: toOutcome(answer), retryable: answer.retryable, ...(notSent ? { notSent } : {}) };
}

/** A confirm's picture is fetched and kept before the person is asked; one that cannot be is left out, and logged why. */
async function confirmed(
  svc: Services,
  job: CallJob,
  attempt: number,
  span: Span,
  took: { status: number | undefined; latencyMs: number },
  answer: Extract<WebhookAnswer, { kind: 'confirm' }>,
): Promise<AttemptResult> {
  let { confirm } = answer;
  const notes = answer.cut ? [answer.cut] : [];
  if (confirm && answer.imageUrl) {
    const image = await keepConfirmImage(svc, answer.imageUrl, job.deadline);
    if (typeof image === 'string') notes.push(image);
    else confirm = { ...confirm, image };
  }
  record(svc, job, attempt, span, { ...took, outcome: 'confirm', ...(notes.length ? { detail: notes.join(' ') } : {}) });
  return { outcome: { kind: 'confirm', confirm }, retryable: false };
}

/** Full jitter: a random wait up to an exponentially growing cap (AWS architecture blog). */
const backoffMs = (attempt: number) =>
  Math.floor(Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)));

/** What the app hears when the deadline passed without an answer. */
export const tooLate = (): CallOutcome => toOutcome({ kind: 'failure', errorClass: 'deadline', retryable: false, detail: '' });

export const cancelled = (): CallOutcome => ({ kind: 'failure', errorClass: 'cancelled', message: 'The call was cancelled.' });

function sleep(ms: number, signal?: CancelSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Delivers a call and returns its outcome. A task's call (one with an answer URL) also writes its
 * outcome to the task here, in the worker, whatever became of the process that queued it.
 */
export async function deliverCall(svc: Services, job: CallJob, opts: { signal?: CancelSignal; firstAttempt?: number } = {}): Promise<CallOutcome> {
  const outcome = await keepArtifacts(svc, job.owner && { ...job.owner, callId: job.callId, addonId: job.addonId }, await attempts(svc, job, opts));
  if (job.answerUrl) {
    await recordDelivery(svc, job, outcome).catch((err: unknown) => svc.log.error('cannot record a task’s delivery', { err, callId: job.callId }));
  }
  return outcome;
}

/** Exponential backoff with full jitter, never past the call's deadline. */
async function attempts(svc: Services, job: CallJob, opts: { signal?: CancelSignal; firstAttempt?: number }): Promise<CallOutcome> {
  const { signal } = opts;
  let attempt = opts.firstAttempt ?? 1;
  // A worker that died mid-call (firstAttempt > 1) may have sent it: never "certainly not sent" then.
  let sent = attempt > 1;
  const told = (outcome: CallOutcome): CallOutcome => (outcome.kind === 'failure' ? { ...outcome, sent } : outcome);
  for (let tries = 1; ; tries++, attempt++) {
    if (signal?.aborted) return told(cancelled());
    let result: AttemptResult;
    try {
      result = await runDelivery(svc, job, attempt, signal);
    } catch (err) {
      // Our side failed (database, secrets): logged in full, retried like a connection error.
      svc.log.error('delivery attempt failed', { err, callId: job.callId, addonId: job.addonId, attempt });
      result = failure('internal', 'Toolport could not deliver the call; try again.', true);
    }
    const { outcome, retryable } = result;
    if (!result.notSent) sent = true;
    if (!retryable || tries >= MAX_ATTEMPTS) return told(outcome);
    const wait = backoffMs(tries);
    if (svc.clock.now().getTime() + wait + MIN_ATTEMPT_MS >= job.deadline) return told(outcome);
    await sleep(wait, signal);
  }
}
