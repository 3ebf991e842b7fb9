import { publishLiveDelivery } from '../addons/live-deliveries';
import { liveSecrets } from '../addons/signing-secrets';
import { systemClock } from '../clock';
import { ToolportError } from '../errors';
import { newId } from '../ids';
import { signatureProblem, type SignedMessage } from '../outbound/signing';
import { MAX_ANSWER_WIRE_BYTES, readLaterAnswer } from '../outbound/webhook';
import { keepArtifacts } from './artifacts';
import type { Services } from '../services';
import { cleanSentence } from '../text/sentence';
import { answerTask, currentTaskOf, noteProgress, taskOfCall, waitsForPerson, type EndReason } from './tasks';

/*
 * A task's add-on that accepted the call (HTTP 202) answers later by POSTing to the call's answer
 * URL, signed like the webhook it received (Standard Webhooks, its own secret, a webhook-id
 * "{callId}.{anything}"): `{"progress": "..."}`
 * as often as it likes, then one answer in any shape a webhook may answer with. Push, as Stripe and
 * Svix deliver events, rather than Toolport polling each add-on like a CI runner polls for jobs:
 * polling costs a request per open task per interval and a status endpoint in every add-on.
 */

/** A later answer is read like one in the webhook's response, and may be as large. */
export const MAX_ANSWER_BODY = MAX_ANSWER_WIRE_BYTES;
const MAX_PROGRESS_CHARS = 200;

const ENDED: Record<Exclude<EndReason, 'answered'>, string> = {
  cancelled: 'The call was cancelled; its answer is not needed.',
  overdue: 'The call has ended: its time ran out before this answer came.',
  lost: 'The call has ended: Toolport lost track of it before your add-on took it.',
  failed: 'The call has ended: it failed on Toolport’s side.',
  refused: 'The call has ended: the person did not allow it, so it was never sent to your add-on.',
};

export type LaterAnswer = { kind: 'answered' } | { kind: 'progress' };

export async function answerLater(svc: Services, callId: string, msg: SignedMessage): Promise<LaterAnswer> {
  // The real time, not the services' clock (tests move it): the add-on signs with its own clock.
  const now = systemClock.now().getTime();
  const stored = typeof callId === 'string' && callId.length <= 64 ? await taskOfCall(svc, callId) : undefined;
  // An unknown call and a bad signature read the same: which calls exist is nobody else's business.
  const problem = signatureProblem(msg, stored ? await liveSecrets(svc, stored.addonId) : [], now);
  if (problem || !stored) throw new ToolportError('UNAUTHORIZED', problem ?? 'The signature does not match any call of your add-on.');

  // From here the add-on is who it says: what it sent, taken or refused, goes in its delivery log
  // and on its developer's live stream (`toolport dev`), as each attempt does.
  const logged = (type: string, outcome: string, detail?: string) => {
    const subject = svc.secrets.pseudonym(stored.addonId, stored.userId);
    const row = {
      id: newId('dlv'),
      addonId: stored.addonId,
      callId,
      type,
      attempt: 0,
      subject,
      status: null,
      latencyMs: 0,
      errorClass: null,
      detail: detail?.slice(0, 500) ?? null,
      meta: { outcome, tool: stored.toolName },
      createdAt: svc.clock.now(),
    };
    svc.logs.delivery(row);
    publishLiveDelivery(svc, { addonId: stored.addonId, callId, type, tool: stored.toolName, arguments: '', subject }, row, outcome);
  };
  try {
    return await take(svc, callId, stored, msg, logged);
  } catch (err) {
    if (err instanceof ToolportError) logged('tool.answer', 'refused', err.message);
    throw err;
  }
}

async function take(
  svc: Services,
  callId: string,
  stored: NonNullable<Awaited<ReturnType<typeof taskOfCall>>>,
  msg: SignedMessage,
  logged: (type: string, outcome: string, detail?: string) => void,
): Promise<LaterAnswer> {
  // The signature covers the webhook-id, so naming the call there keeps one call's answer off another.
  if (!msg.id?.startsWith(`${callId}.`)) {
    throw new ToolportError('UNAUTHORIZED', `The webhook-id does not name this call: an answer is signed for one call, with a webhook-id that begins "${callId}.", so it cannot be used on another call.`);
  }
  const task = await currentTaskOf(svc, stored);
  if (task.status !== 'working') {
    const reason = (task.endReason ?? 'answered') as EndReason;
    if (reason === 'answered') throw new ToolportError('CONFLICT', 'This call has its answer already; an answer counts once.');
    throw new ToolportError('GONE', ENDED[reason]);
  }
  // Its id is known from the confirm step: nothing of it is taken before the person allowed it.
  if (waitsForPerson(task)) throw new ToolportError('CONFLICT', 'This call has not been sent to your add-on: it is waiting for the person’s approval.');

  let parsed: unknown;
  try {
    parsed = JSON.parse(msg.body.toString('utf8'));
  } catch {
    throw new ToolportError('MALFORMED', 'The body is not valid JSON.');
  }

  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && Object.keys(parsed).length === 1 && 'progress' in parsed) {
    const said = typeof parsed.progress === 'string' ? cleanSentence(parsed.progress, MAX_PROGRESS_CHARS) : '';
    if (!said) throw new ToolportError('VALIDATION', 'progress must be a short sentence (a non-empty string).');
    if (!(await noteProgress(svc, callId, said))) throw new ToolportError('GONE', 'The call has ended; progress is not needed.');
    logged('tool.progress', 'progress', said);
    return { kind: 'progress' };
  }

  const answer = readLaterAnswer(msg.body);
  if (answer.kind === 'failure') throw new ToolportError('VALIDATION', `The answer cannot be read: ${answer.detail}`);
  if (answer.kind === 'confirm' || answer.kind === 'accepted' || answer.kind === 'tools') throw new ToolportError('VALIDATION', 'Answer with {"text"}, {"json"}, {"content"} or {"error"}.');
  const outcome =
    answer.kind === 'refusal' && answer.failed
      ? { kind: 'failure' as const, errorClass: 'addon_failed', message: answer.message }
      : await keepArtifacts(svc, { callId, userId: task.userId, grantId: task.grantId, addonId: task.addonId }, answer);
  const ended = await answerTask(svc, task, outcome);
  if (!ended) throw new ToolportError('CONFLICT', 'This call has its answer already; an answer counts once.');
  logged('tool.answer', answer.kind === 'refusal' ? 'refusal' : answer.kind === 'result' && answer.isError ? 'tool_error' : 'result');
  return { kind: 'answered' };
}
