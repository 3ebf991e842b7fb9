import { useEffect } from 'preact/hooks';
import { get, type CallLife, type CallStep } from '../api';
import { kindOf } from '../chart';
import { html, Notice, oneAtATime, PageHeader, Revealed, revealedText, useLoad, When } from '../ui';
import { byWhom, ConfirmPicture } from './approvals';
import { onCallChanged } from '../store';

/** How each call ended, in the person's words (the call log's outcomes, packages/core/src/calls/call-log.ts). */
export const OUTCOME_WORDS: Record<string, string> = {
  ok: 'Answered',
  refused: 'The add-on did not do it',
  failed: 'Failed',
  timed_out: 'Ran out of time',
  invalid_arguments: 'Arguments the tool does not take',
  unknown_tool: 'No such tool',
  not_given: 'Not given to this app',
  switched_off: 'Tool switched off',
  not_reviewed: 'Tool awaits your review',
  not_offered: 'Not offered to you by the add-on',
  held_off: 'Taken off the catalog',
  denied: 'Denied',
  dismissed: 'Dismissed',
  expired: 'Not answered in time',
  cancelled: 'Cancelled',
  revoked: 'App’s access ended',
  disabled: 'Add-on switched off',
  ai_apps_off: 'AI apps were off',
  limited: 'Held back by a limit',
  blocked: 'Blocked by your rule',
  needs_setup: 'Needs setting up',
  repeated: 'Repeat of an earlier call',
  needs_task: 'Needs an app with tasks',
  lost: 'Interrupted by a restart',
};
export const outcomeWords = (outcome: string) => OUTCOME_WORDS[outcome] ?? outcome;

/** What an attempt at the add-on came to (the worker's outcome, else its error class). */
const ATTEMPT_WORDS: Record<string, string> = {
  result: 'it answered',
  tool_error: 'the tool reported an error',
  refusal: 'it refused the call',
  accepted: 'it took the call and answers later',
  confirm: 'it described the call',
  addon_failed: 'the add-on failed',
  late: 'it answered after the call had ended',
  timeout: 'it did not answer in time',
  deadline: 'not sent: the call ran out of time first',
  connect: 'it could not be reached',
  dns: 'its address could not be found',
  tls: 'its secure connection failed',
  http_status: 'it answered with an error status',
  too_large: 'its answer was too large',
  gone: 'it is no longer available',
  cancelled: 'the call was cancelled',
  blocked_address: 'its address is not one Toolport may call',
  bad_url: 'its address is not valid',
  redirect: 'it answered with a redirect, which is not followed',
  protocol: 'its answer could not be read',
  bad_answer: 'its answer could not be read',
  unavailable: 'it was unavailable',
  internal: 'Toolport failed while sending it',
};

const DECIDED_WORDS: Record<string, string> = {
  allowed: 'You allowed it',
  denied: 'You denied it',
  dismissed: 'It was dismissed without an answer',
  expired: 'Nobody answered in time, which counts as no',
  cancelled: 'It was cancelled before anyone decided',
  revoked: 'The app’s access ended while it waited',
};

function stepText(step: CallStep, call: CallLife) {
  switch (step.kind) {
    case 'asked':
      return html`Toolport asked you to approve it.`;
    case 'decided': {
      const where = step.decidedBy === 'rule' ? 'by your rule' : step.decidedBy === 'app' ? 'by the app' : step.decidedBy === 'shutdown' ? '(the server holding it stopped)' : (byWhom[step.decidedBy ?? ''] ?? '');
      return html`${DECIDED_WORDS[step.status] ?? step.status}${where ? ` ${where}` : ''}.${step.receipt ? html` <span class="muted small">Receipt <code class="mono">${step.receipt}</code>.</span>` : null}${step.reason ? html` Your reason: <q><${Revealed} text=${step.reason} /></q>` : null}`;
    }
    case 'task':
      return html`It started as a task: the app checks back for the answer.`;
    case 'attempt': {
      const what = step.describe ? `Asked ${call.addonName} to describe it for you` : `Sent to ${call.addonName}${step.attempt > 1 ? ` (attempt ${step.attempt})` : ''}`;
      const came = ATTEMPT_WORDS[step.outcome === 'failure' ? (step.errorClass ?? '') : (step.outcome ?? step.errorClass ?? '')] ?? step.errorClass ?? step.outcome ?? 'no answer';
      return html`${what}: ${came}${typeof step.status === 'number' ? html` <span class="muted small">(HTTP ${step.status}, ${step.latencyMs} ms)</span>` : null}.`;
    }
    case 'progress':
      return html`${call.addonName} reported: <q><${Revealed} text=${step.message} /></q>`;
    case 'answered-later':
      return html`${call.addonName} sent its answer.`;
    // Its detail is the developer's (the delivery log has it); the attempts above say what happened.
    case 'ended':
      return html`Ended: <span class=${`badge badge-${kindOf(step.outcome)}`} data-ended=${step.outcome}>${outcomeWords(step.outcome)}</span>`;
  }
}

const STATE_WORDS: Record<string, string> = {
  waiting: 'Waiting for your approval.',
  running: 'At the add-on.',
};

/** One call's whole life: asked, decided, each attempt at the add-on, its progress, how it ended. */
export function CallLifePage({ id }: { id: string }) {
  const state = useLoad(() => get<CallLife>(`/api/calls/${encodeURIComponent(id)}`), [id]);
  const { setData } = state;
  const shown = state.data;
  // A call still under way is read again as it changes (its approval decided, its progress, its
  // end), one read at a time; a read that fails leaves what is shown.
  useEffect(() => {
    if (!shown || shown.state === 'ended') return;
    const reread = oneAtATime(() => get<CallLife>(`/api/calls/${encodeURIComponent(id)}`).then((life) => setData(() => life)));
    return onCallChanged((change) => {
      if (!change || ('callId' in change ? change.callId === id : change.approvalId === shown.approvalId)) reread();
    });
  }, [id, shown?.state, shown?.approvalId]);
  if (state.error?.status === 404) {
    return html`<${PageHeader} title="Call not found" lead=${html`There is no call of yours at this address. <a href="/activity">See your activity</a>.`} />`;
  }
  if (state.error) return html`<${PageHeader} title="A tool call" /><${Notice} kind="error">${state.error.message}<//>`;
  const c = state.data;
  if (!c) return html`<${PageHeader} title="A tool call" /><p class="muted" aria-busy="true">Loading the call…</p>`;
  return html`<${PageHeader} title=${revealedText(c.toolTitle)} lead=${html`<a href="/activity">All activity</a>`} />
    <article class="card call-life" data-call-page=${c.id} data-state=${c.state} aria-labelledby="call-h">
      <h2 class="h3" id="call-h"><${Revealed} text=${c.app} identifier /> called <strong><${Revealed} text=${c.toolTitle} identifier /></strong> · <${Revealed} text=${c.addonName} identifier /></h2>
      <dl class="info">
        <div><dt>Started</dt><dd><${When} iso=${c.startedAt} /></dd></div>
        <div><dt>Outcome</dt><dd data-fact="outcome">${c.outcome ? html`<span class=${`badge badge-${kindOf(c.outcome)}`}>${outcomeWords(c.outcome)}</span>` : STATE_WORDS[c.state]}${c.came && c.state === 'ended' ? html` <span data-came=${c.came.ran}>You allowed it · ${c.came.sentence}.</span>` : null}</dd></div>
        ${c.statusMessage ? html`<div><dt>Now</dt><dd><${Revealed} text=${c.statusMessage} /></dd></div>` : null}
      </dl>
      ${c.image && c.approvalId ? html`<${ConfirmPicture} approvalId=${c.approvalId} image=${c.image} alt="The add-on’s picture of what this call would do" />` : null}
      ${c.state === 'waiting' && c.approvalId ? html`<p><a class="btn btn-primary" href=${`/approvals/${encodeURIComponent(c.approvalId)}`}>Decide</a></p>` : null}
      ${c.taskId ? html`<p class="small">It runs until its add-on answers; you can stop it from <a href="/activity">Activity</a>.</p>` : null}
      <h3 class="small-h">What happened</h3>
      <ol class="call-steps">${c.steps.map((s) => html`<li data-step=${s.kind}><span class="muted small"><${When} iso=${s.at} /></span> ${stepText(s, c)}</li>`)}</ol>
    </article>`;
}
