import { useEffect, useState } from 'preact/hooks';
import { get, post, type DecisionInput, type OneApproval, type RecordedDecision } from '../api';
import { live, markDecided, onCallChanged, useStore } from '../store';
import { html, Notice, PageHeader, Revealed, toApiError, useLoad, useNow, When } from '../ui';
import { Arguments, byWhom, ConfirmDescription, ConfirmMissing, Countdown, looksDestructive, namesOf } from './approvals';

/** As the API checks it (decide.ts): the field stops there, the server says why anything else is refused. */
const REASON_MAX = 500;

/** What happened to the call, in one sentence. */
function outcomeSentence(a: OneApproval): string {
  const where = byWhom[a.decidedBy ?? ''];
  const who = where ? ` ${where}` : '';
  switch (a.status) {
    case 'allowed':
      return a.came ? `Allowed${who} · ${a.came.sentence}.` : `Allowed${who}.`;
    case 'denied':
      return `Denied${who}. The call did not run.`;
    case 'dismissed':
      return 'Dismissed from a notification without an answer. The call did not run.';
    case 'expired':
      return 'Expired: nobody answered in time, and no answer counts as no. The call did not run.';
    case 'cancelled':
      return a.decidedBy === 'app'
        ? 'Cancelled by the app before anyone decided. The call did not run.'
        : 'Cancelled: the Toolport server holding the call stopped before anyone decided. The call did not run.';
    case 'revoked':
      return 'Ended: the app’s access was revoked, or AI apps were turned off. The call did not run.';
    default:
      return `This approval is ${a.status}.`;
  }
}

function Outcome({ a }: { a: OneApproval }) {
  const kind = a.status !== 'allowed' || a.came?.ran === 'running' ? 'notice-info' : a.came?.done ? 'notice-success' : 'notice-error';
  return html`<div class=${`notice ${kind}`} role="status" data-outcome=${a.status} data-ran=${a.came?.ran}>
    <p><strong>${outcomeSentence(a)}</strong></p>
    ${a.reason ? html`<p data-reason>Your reason, passed on to the app: <q><${Revealed} text=${a.reason} /></q></p>` : null}
    ${a.decidedAt ? html`<p class="small muted">Recorded <${When} iso=${a.decidedAt} />.</p>` : null}
    ${a.callId ? html`<p><a href=${`/calls/${encodeURIComponent(a.callId)}`}>What happened to the call</a></p>` : null}
  </div>`;
}

function Decide({ a, onDecided }: { a: OneApproval; onDecided: (d: RecordedDecision) => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [reasonError, setReasonError] = useState('');
  const decide = async (decision: 'allow' | 'deny') => {
    setBusy(true);
    setError('');
    setReasonError('');
    try {
      const body: DecisionInput = decision === 'deny' && reason.trim() ? { decision, reason } : { decision };
      onDecided(await post<RecordedDecision>(`/api/approvals/${encodeURIComponent(a.id)}/decision`, body));
    } catch (err) {
      const e = toApiError(err);
      if (e.status === 409 && e.body.decision) onDecided(e.body.decision as RecordedDecision);
      else if (e.status === 422 && e.fieldErrors.some((f) => f.path === '/reason')) setReasonError(e.message);
      else setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  const left = REASON_MAX - [...reason].length;
  return html`<form class="decide" onSubmit=${(e: Event) => e.preventDefault()}>
    <div class="field">
      <label for="deny-reason">Reason, if you deny <span class="muted">(optional)</span></label>
      <input
        id="deny-reason"
        name="reason"
        maxlength=${REASON_MAX}
        autocomplete="off"
        value=${reason}
        aria-invalid=${reasonError ? 'true' : undefined}
        aria-describedby=${reasonError ? 'deny-reason-hint deny-reason-error' : 'deny-reason-hint'}
        onInput=${(e: Event) => setReason((e.target as HTMLInputElement).value)}
      />
      <p class="hint" id="deny-reason-hint">The app’s model reads it with the refusal. One line of plain text; ${left} of ${REASON_MAX} characters left.</p>
      ${reasonError && html`<div class="notice notice-error" id="deny-reason-error" role="alert">${reasonError}</div>`}
    </div>
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <div class="actions">
      <button type="button" class="btn" aria-disabled=${busy ? 'true' : undefined} onClick=${() => !busy && decide('deny')}>Deny</button>
      <button type="button" class="btn btn-danger" data-consequential aria-disabled=${busy ? 'true' : undefined} onClick=${() => !busy && decide('allow')}>Allow</button>
    </div>
  </form>`;
}

/** Asks the server again once the countdown ran out: the wait has ended, and the page says how. */
function useReloadAtExpiry(a: OneApproval | undefined, reload: () => void) {
  const now = useNow(1000);
  const over = a?.status === 'pending' && Date.parse(a.expiresAt) + 1500 < now;
  useEffect(() => {
    if (over) reload();
  }, [over]);
}

/**
 * One call's approval, where a link (the app's URL elicitation, a notification, a card) leads: the
 * app, the add-on, the tool, the exact arguments, the add-on's description, time left, Allow or
 * Deny with a reason; once decided (here or anywhere else), what happened.
 */
export function ApprovalPage({ id }: { id: string }) {
  const state = useLoad(() => get<OneApproval>(`/api/approvals/${encodeURIComponent(id)}`), [id]);
  const decidedElsewhere = useStore(live).decided[id];
  useEffect(() => {
    if (decidedElsewhere && state.data?.status === 'pending') void state.reload();
  }, [decidedElsewhere]);
  useReloadAtExpiry(state.data, () => void state.reload());
  // Once allowed, the call's ending says what came of it.
  const callId = state.data?.callId;
  const running = state.data?.status === 'allowed' && (!state.data.came || state.data.came.ran === 'running');
  useEffect(() => {
    if (!running) return;
    return onCallChanged((change) => {
      if (!change || ('callId' in change ? change.callId === callId : change.approvalId === id)) void state.reload();
    });
  }, [running, callId]);
  const onDecided = (d: RecordedDecision) => {
    state.setData((prev) => ({ ...prev!, ...d, id: prev!.id }));
    if (d.status) markDecided(id, d.status);
    if (d.status === 'allowed') void state.reload();
  };

  if (state.error?.status === 404) {
    return html`<${PageHeader} title="Approval not found" lead=${html`There is no approval of yours at this address. <a href="/approvals">See your approvals</a>.`} />`;
  }
  if (state.error && !state.data) {
    return html`<${PageHeader} title="Approve a tool call" />
      <${Notice} kind="error">${state.error.message}<//>`;
  }
  const a = state.data;
  if (!a) return html`<${PageHeader} title="Approve a tool call" /><p class="muted" aria-busy="true">Loading the approval…</p>`;
  const { tool, addon } = namesOf(a);
  const pending = a.status === 'pending';
  return html`<${PageHeader} title=${pending ? 'Approve a tool call' : 'A tool call’s approval'} lead=${html`<a href="/approvals">All approvals</a>`} />
    <article class=${`card approval approval-page ${looksDestructive(a) ? 'approval-destructive' : ''}`} data-approval-id=${a.id} aria-labelledby="approval-h">
      <h2 class="h3" id="approval-h">
        <span class="who"><${Revealed} text=${a.app} identifier /></span>${pending ? ' wants to run ' : ' asked to run '}<span class="tool-name" data-tool-name><strong><${Revealed} text=${tool} identifier /></strong>${' · '}<${Revealed} text=${addon} identifier /></span>
      </h2>
      <dl class="info approval-facts">
        <div><dt>App</dt><dd data-fact="app"><${Revealed} text=${a.app} identifier /> <span class="muted small">(named by itself, unverified)</span></dd></div>
        <div><dt>Add-on</dt><dd data-fact="addon"><${Revealed} text=${addon} identifier /></dd></div>
        <div><dt>Tool</dt><dd data-fact="tool"><${Revealed} text=${tool} identifier /></dd></div>
      </dl>
      <${ConfirmDescription} confirm=${a.confirm} approvalId=${a.id} />
      ${pending ? html`<${ConfirmMissing} a=${a} />` : null}
      <h3 class="small-h">${pending ? 'Arguments, exactly as they will be sent' : 'Arguments'}</h3>
      <${Arguments} args=${a.arguments} />
      ${pending ? html`<${Countdown} expiresAt=${a.expiresAt} />` : null}
      ${pending ? html`<${Decide} a=${a} onDecided=${onDecided} />` : html`<${Outcome} a=${a} />`}
    </article>`;
}
