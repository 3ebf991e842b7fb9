import { liveSecrets } from '../addons/registry';
import { systemClock } from '../clock';
import { ToolportError, notFound } from '../errors';
import { newId } from '../ids';
import { NO_SECRET, signatureProblem, type SignedMessage } from '../outbound/signing';
import { MAX_RESULT_BYTES, readLaterAnswer } from '../outbound/webhook';
import type { Services } from '../services';
import { cleanSentence } from '../text/sentence';
import { recordCall } from './call-log';
import { shapeOutcome } from './call-tool';
import { noteProgress, OVERDUE_MESSAGE, settle, taskOfCall } from './tasks';

/*
 * A task's add-on that accepted the call (HTTP 202) answers later by POSTing to the call's answer
 * URL, signed like the webhook it received (Standard Webhooks, its own secret): `{"progress": "..."}`
 * as often as it likes, then one answer in any shape a webhook may answer with. Push, as Stripe and
 * Svix deliver events, rather than Toolport polling each add-on like a CI runner polls for jobs:
 * polling costs a request per open task per interval and a status endpoint in every add-on.
 */

/** A later answer is read like one in the webhook's response, and may be as large. */
export const MAX_ANSWER_BODY = MAX_RESULT_BYTES * 2 + 4096;
const MAX_PROGRESS_CHARS = 200;

export type LaterAnswer = { kind: 'answered' } | { kind: 'progress' };

export async function answerLater(svc: Services, callId: string, msg: SignedMessage): Promise<LaterAnswer> {
  // Unsigned is refused before anything is looked up: which calls exist is nobody else's business.
  // The real time, not the services' clock (tests move it): the add-on signs with its own clock.
  const now = systemClock.now().getTime();
  const unsigned = signatureProblem(msg, [], now);
  if (unsigned && !unsigned.startsWith(NO_SECRET)) throw new ToolportError('UNAUTHORIZED', unsigned);
  const task = typeof callId === 'string' && callId.length <= 64 ? await taskOfCall(svc, callId) : undefined;
  if (!task) throw notFound('That call');
  const problem = signatureProblem(msg, await liveSecrets(svc, task.addonId), now);
  if (problem) throw new ToolportError('UNAUTHORIZED', problem);
  if (task.status !== 'working') {
    if (task.status === 'cancelled') throw new ToolportError('GONE', 'The call was cancelled; its answer is not needed.');
    if (task.acceptedAt === null || task.statusMessage === OVERDUE_MESSAGE) {
      throw new ToolportError('GONE', 'The call has ended: its time ran out before this answer came.');
    }
    throw new ToolportError('CONFLICT', 'This call has its answer already; an answer counts once.');
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(msg.body.toString('utf8'));
  } catch {
    throw new ToolportError('MALFORMED', 'The body is not valid JSON.');
  }
  const subject = svc.secrets.pseudonym(task.addonId, task.userId);
  const logged = (type: string, outcome: string, detail?: string) =>
    svc.logs.delivery({
      id: newId('dlv'),
      addonId: task.addonId,
      callId,
      type,
      attempt: 0,
      subject,
      status: null,
      latencyMs: 0,
      errorClass: null,
      detail: detail?.slice(0, 500) ?? null,
      meta: { outcome },
      createdAt: svc.clock.now(),
    });

  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && Object.keys(parsed).length === 1 && 'progress' in parsed) {
    const said = typeof parsed.progress === 'string' ? cleanSentence(parsed.progress, MAX_PROGRESS_CHARS) : '';
    if (!said) throw new ToolportError('VALIDATION', 'progress must be a short sentence (a non-empty string).');
    if (!(await noteProgress(svc, callId, said))) throw new ToolportError('GONE', 'The call has ended; progress is not needed.');
    logged('tool.progress', 'progress', said);
    return { kind: 'progress' };
  }

  const answer = readLaterAnswer(msg.body);
  if (answer.kind === 'failure') throw new ToolportError('VALIDATION', `The answer cannot be read: ${answer.detail}`);
  if (answer.kind === 'confirm' || answer.kind === 'accepted') throw new ToolportError('VALIDATION', 'Answer with {"text"}, {"json"}, {"content"} or {"error"}.');
  const outcome = answer.kind === 'refusal' && answer.failed ? { kind: 'failure' as const, errorClass: 'addon_failed', message: answer.message } : answer;
  const seconds = Math.round((task.answerBy.getTime() - task.createdAt.getTime()) / 1000);
  const shaped = shapeOutcome(
    { addonName: task.addonName, outputSchema: (task.outputSchema as Record<string, unknown> | null) ?? undefined, destructive: false },
    outcome,
    seconds,
  );
  if (!(await settle(svc, callId, shaped.result))) throw new ToolportError('CONFLICT', 'This call has its answer already; an answer counts once.');
  logged('tool.answer', shaped.outcome === 'ok' ? 'result' : shaped.outcome, shaped.detail);
  recordCall(svc, {
    id: callId,
    userId: task.userId,
    grantId: task.grantId,
    appName: task.appName,
    addonId: task.addonId,
    toolName: task.toolName,
    argsDigest: task.argsDigest,
    outcome: shaped.outcome,
    ...(shaped.detail ? { detail: shaped.detail } : {}),
    latencyMs: svc.clock.now().getTime() - task.createdAt.getTime(),
  });
  return { kind: 'answered' };
}
