import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, del, get, post, type Approval, type DecisionInput, type OneApproval, type PushKey, type RecordedDecision } from '../api';
import { live, markDecided, onCallChanged, useStore } from '../store';
import { html, Notice, NotAvailable, PageHeader, Revealed, revealedText, toApiError, useNow, When } from '../ui';
import { clipGraphemes } from '../unicode';

const FOLD = 160;

function Value({ value }: { value: unknown }) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? String(value);
  const isString = typeof value === 'string';
  const long = text.length > FOLD || text.split('\n').length > 4;
  const body = html`<pre class=${`mono arg-value ${isString ? 'arg-string' : 'arg-json'}`}><${Revealed} text=${text} /></pre>`;
  if (!long) return body;
  return html`<details class="fold">
    <summary><span class="mono"><${Revealed} text=${clipGraphemes(text, 80).replace(/\n/g, ' ⏎ ')} />…</span> <span class="muted small">(show all ${[...text].length} characters)</span></summary>
    ${body}
  </details>`;
}

export function Arguments({ args }: { args: unknown }) {
  if (args && typeof args === 'object' && !Array.isArray(args)) {
    const entries = Object.entries(args as Record<string, unknown>);
    if (!entries.length) return html`<p class="muted small">No arguments.</p>`;
    return html`<dl class="args">${entries.map(([k, v]) => html`<div class="arg"><dt class="mono"><${Revealed} text=${k} identifier /></dt><dd><${Value} value=${v} /></dd></div>`)}</dl>`;
  }
  return html`<${Value} value=${args} />`;
}

export function Countdown({ expiresAt }: { expiresAt: string }) {
  const now = useNow(500);
  const end = Date.parse(expiresAt);
  const left = Math.max(0, Math.ceil((end - now) / 1000));
  if (!Number.isFinite(end)) return null;
  if (left === 0) return html`<p class="countdown expired">Expired — no answer counts as no.</p>`;
  const pct = Math.min(100, (left / 30) * 100);
  return html`<div class="countdown" data-seconds=${left}>
    <span>${left} s left to answer</span>
    <span class="meter" aria-hidden="true"><span class=${`meter-fill ${left <= 10 ? 'meter-low' : ''}`} style=${{ width: `${pct}%` }}></span></span>
  </div>`;
}

/** The tool's title and the add-on's name; the ids only when the API sent no names. */
export function namesOf(a: Approval) {
  return { tool: a.toolTitle || a.tool, addon: a.addonName || a.addon };
}

const omittedSentence = (n: number) => `${n} more ${n === 1 ? 'detail was' : 'details were'} left out by Toolport (too many to show).`;

/** Why a tool that describes its calls shows none on this one: the person should not guess. */
export function ConfirmMissing({ a }: { a: Pick<Approval, 'confirm' | 'confirmMissing'> & { addonName?: string; addon: string } }) {
  if (a.confirm || !a.confirmMissing) return null;
  const who = a.addonName || a.addon;
  const why = a.confirmMissing === 'slow' ? 'did not describe this call in time' : 'could not describe this call (its description step failed)';
  return html`<p class="confirm-missing small" data-confirm-missing=${a.confirmMissing}><${Revealed} text=${who} identifier /> ${why}, so only the arguments below say what it will do. Read them before you allow it.</p>`;
}

/** A destructive tool's card looks it, whether or not the add-on described the call; the add-on's own style wins when it did. */
export const looksDestructive = (a: Pick<Approval, 'confirm' | 'destructive'>) => (a.confirm ? a.confirm.style === 'destructive' : a.destructive);

/** `path: "/tmp/a.txt", force: true` on one short line: enough to tell one call from the next. */
function argumentSummary(args: unknown, max = 90): string {
  const one = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v)));
  const text =
    args && typeof args === 'object' && !Array.isArray(args)
      ? Object.entries(args as Record<string, unknown>).map(([k, v]) => `${k}: ${one(v)}`).join(', ')
      : one(args);
  const shown = revealedText(text);
  return [...shown].length > max ? `${clipGraphemes(shown, max - 1)}…` : shown;
}

/** Toolport's copy of the picture an add-on gave with its description of the call (`confirm.image`). */
export function ConfirmPicture({ approvalId, image, alt }: { approvalId: string; image: { width: number; height: number }; alt: string }) {
  return html`<img class="confirm-image" src=${`/api/approvals/${encodeURIComponent(approvalId)}/image`} width=${image.width} height=${image.height} alt=${alt} loading="lazy" />`;
}

/** The add-on's own description of the call (`confirm`), every hidden character spelled out. */
export function ConfirmDescription({ confirm, approvalId }: { confirm: Approval['confirm']; approvalId: string }) {
  if (!confirm) return null;
  const { image } = confirm;
  return html`<div class=${`confirm confirm-${confirm.style === 'destructive' ? 'danger' : 'info'}`}>
      ${confirm.message && html`<p><${Revealed} text=${confirm.message} /></p>`}
      ${image ? html`<${ConfirmPicture} approvalId=${approvalId} image=${image} alt="The add-on’s picture of what this call will do" />` : null}
      ${confirm.info?.length ? html`<dl class="info">${confirm.info.map((i) => html`<div><dt><${Revealed} text=${String(i.name)} /></dt><dd><${Revealed} text=${String(i.value)} /></dd></div>`)}</dl>` : null}
      ${confirm.infoOmitted ? html`<p class="omitted muted small" data-info-omitted>${omittedSentence(confirm.infoOmitted)}</p>` : null}
    </div>`;
}

function ApprovalCard({ a, onDone }: { a: Approval; onDone: (id: string, outcome: string, note?: string) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const app = a.app;
  const { addon, tool } = namesOf(a);
  const confirm = a.confirm;
  const decide = async (decision: 'allow' | 'deny') => {
    setBusy(true);
    setError('');
    try {
      const r = await post<RecordedDecision>(`/api/approvals/${encodeURIComponent(a.id)}/decision`, { decision } satisfies DecisionInput);
      onDone(a.id, r.status);
    } catch (err) {
      const e = toApiError(err);
      if (e.status === 409) {
        // The problem body carries the decision that was recorded first: {decision: {status, decidedBy}}.
        const d = e.body.decision as RecordedDecision;
        onDone(a.id, d.status, d.decidedBy ? `Already decided by ${d.decidedBy}.` : e.message);
      } else setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<article class=${`card approval ${looksDestructive(a) ? 'approval-destructive' : ''}`} data-approval=${a.id} aria-labelledby=${`apr-${a.id}`} tabindex="-1">
    <h2 class="h3" id=${`apr-${a.id}`}>
      <span class="who"><${Revealed} text=${app} identifier /></span>${' wants to run '}<span class="tool-name" data-tool-name><strong><${Revealed} text=${tool} identifier /></strong>${' · '}<${Revealed} text=${addon} identifier /></span>
    </h2>
    <${ConfirmDescription} confirm=${confirm} approvalId=${a.id} />
    <${ConfirmMissing} a=${a} />
    <h3 class="small-h">Arguments, exactly as they will be sent</h3>
    <${Arguments} args=${a.arguments} />
    <${Countdown} expiresAt=${a.expiresAt} />
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <p class="small"><a href=${`/approvals/${encodeURIComponent(a.id)}`} data-approval-page>This call’s own page</a> <span class="muted">(to deny with a reason)</span></p>
    <div class="actions">
      <button type="button" class="btn" aria-disabled=${busy ? 'true' : undefined} onClick=${() => !busy && decide('deny')}>Deny</button>
      <button type="button" class="btn btn-danger" data-consequential aria-disabled=${busy ? 'true' : undefined} onClick=${() => !busy && decide('allow')}>Allow</button>
    </div>
  </article>`;
}

function urlBase64ToBytes(s: string) {
  const pad = '='.repeat((4 - (s.length % 4)) % 4);
  const raw = atob((s + pad).replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** Push notifications on this device: a service worker at /sw.js and a PushSubscription sent to the API. */
function PushSetting() {
  const supported = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
  const [on, setOn] = useState<boolean | undefined>(undefined);
  const [msg, setMsg] = useState<{ kind: 'error' | 'success' | 'info'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!supported) return;
    navigator.serviceWorker.getRegistration('/').then(async (reg) => setOn(Boolean(await reg?.pushManager.getSubscription())), () => setOn(false));
  }, []);
  const enable = async () => {
    setBusy(true);
    setMsg(null);
    try {
      const { publicKey: key } = await get<PushKey>('/api/push/key');
      const permission = await Notification.requestPermission();
      if (permission !== 'granted') throw new ApiError(0, 'Notifications are blocked for this site in your browser settings.');
      const reg = await navigator.serviceWorker.register('/sw.js', { scope: '/' });
      await navigator.serviceWorker.ready;
      const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: urlBase64ToBytes(key) });
      await post('/api/push/subscribe', sub.toJSON());
      setOn(true);
      setMsg({ kind: 'success', text: 'This device will be notified, with Allow and Deny right in the notification.' });
    } catch (err) {
      const e = err instanceof ApiError ? err : null;
      setMsg({ kind: 'error', text: e?.routeMissing ? 'Push notifications are not available yet on this server.' : e?.message ?? 'This browser could not subscribe to notifications.' });
    } finally {
      setBusy(false);
    }
  };
  const disable = async () => {
    setBusy(true);
    setMsg(null);
    try {
      const reg = await navigator.serviceWorker.getRegistration('/');
      const sub = await reg?.pushManager.getSubscription();
      if (sub) {
        await del('/api/push/subscribe', { endpoint: sub.endpoint }).catch(() => {});
        await sub.unsubscribe();
      }
      setOn(false);
      setMsg({ kind: 'info', text: 'Notifications are off on this device.' });
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="push-h">
    <div class="row-between">
      <div>
        <h2 id="push-h" class="h3">Notifications on this device</h2>
        <p class="muted small">${supported ? 'Get asked even when this page is closed. You can allow or deny from the notification.' : 'This browser does not support push notifications.'}</p>
      </div>
      ${supported && (on ? html`<button type="button" class="btn" disabled=${busy} onClick=${disable}>Turn off</button>` : html`<button type="button" class="btn" disabled=${busy || on === undefined} onClick=${enable}>Turn on notifications</button>`)}
    </div>
    ${msg && html`<${Notice} kind=${msg.kind}>${msg.text}<//>`}
  </section>`;
}

/**
 * Where focus goes when the card holding it leaves (decided here or elsewhere, or expired): the
 * card that took its place, else the one before, else what was just decided or the empty state.
 */
function useFocusAfterCards(pending: Approval[]) {
  const lastIndex = useRef<number | null>(null);
  const lastId = useRef<string | null>(null);
  useEffect(() => {
    const onFocus = (e: FocusEvent) => {
      const card = (e.target as Element | null)?.closest?.('[data-approval]');
      const cards = [...document.querySelectorAll('[data-approval]')];
      lastIndex.current = card ? cards.indexOf(card) : null;
      lastId.current = card?.getAttribute('data-approval') ?? null;
    };
    document.addEventListener('focusin', onFocus);
    return () => document.removeEventListener('focusin', onFocus);
  }, []);
  // A layout effect: focus moves in the same task that removed the card, so there is no moment (a
  // frame on a busy machine) when it sits on <body> and a screen reader or a key press finds nothing.
  useLayoutEffect(() => {
    const i = lastIndex.current;
    if (i === null || (document.activeElement && document.activeElement !== document.body)) return;
    const cards = [...document.querySelectorAll<HTMLElement>('[data-approval]')];
    const target = cards[Math.min(i, cards.length - 1)]
      ?? document.querySelector<HTMLElement>(`[data-decided="${lastId.current}"]`)
      ?? document.querySelector<HTMLElement>('[data-empty="approvals"]');
    target?.focus();
  }, [pending]);
}

/** The Recent list: the server's decided approvals, and those just decided here (with a note). */
type Decided = Approval & { status: string; decidedBy?: string | null; decidedAt?: string | null; reason?: string | null; note?: string; came?: OneApproval['came'] };
const RECENT = 10;
const outcomeWord: Record<string, string> = { allowed: 'Allowed', denied: 'Denied', expired: 'Expired, not answered', dismissed: 'Dismissed', cancelled: 'Cancelled by the app' };
/** Where a person's decision was made, as the Recent list and a call's own page say it. */
export const byWhom: Record<string, string> = { dashboard: 'in the dashboard', push: 'from a notification', timeout: '', app: '', shutdown: '' };

/**
 * The person's last decided approvals, from the server (so they outlast a reload or a visit to
 * another page): reloaded whenever one leaves the pending list; what was just decided here shows at
 * once, with the reason when someone else had decided first.
 */
function useRecent(decided: Record<string, string>) {
  const [server, setServer] = useState<Decided[] | null>(null);
  const [local, setLocal] = useState<Decided[]>([]);
  const [changes, setChanges] = useState(0);
  const seq = useRef(0);
  // An allowed call's ending changes what its row says: read the list again when one of its calls changes.
  const shown = useRef(new Set<string>());
  useEffect(() => onCallChanged((change) => {
    // An approval's own change (decided, expired) reloads through `decided` already.
    if (!change || ('callId' in change && shown.current.has(change.callId))) setChanges((n) => n + 1);
  }), []);
  useEffect(() => {
    const mine = ++seq.current;
    // With status=all every approval says what ended it (a pending one: status pending).
    get<OneApproval[]>('/api/approvals?status=all').then(
      (all) => mine === seq.current && setServer(all.filter((a) => a.status !== 'pending').slice(0, RECENT)),
      () => {},
    );
  }, [Object.keys(decided).length, changes]);
  const ids = new Set((server ?? []).map((a) => a.id));
  const notes = new Map(local.map((a) => [a.id, a.note]));
  const list = [...local.filter((a) => !ids.has(a.id)), ...(server ?? []).map((a) => ({ ...a, note: notes.get(a.id) }))].slice(0, RECENT);
  shown.current = new Set(list.map((a) => a.callId));
  return { list, loaded: server !== null, add: (a: Decided) => setLocal((l) => [a, ...l.filter((x) => x.id !== a.id)].slice(0, RECENT)) };
}

/** How a decision's badge looks: an allow reads well only once the call did what was allowed. */
function badgeOf(r: Decided) {
  if (r.status === 'allowed') return !r.came || r.came.ran === 'running' ? 'badge-calm' : r.came.done ? 'badge-ok' : 'badge-danger';
  return r.status === 'denied' ? 'badge-danger' : 'badge-warn';
}

function Recent({ list }: { list: Decided[] }) {
  return html`<section aria-labelledby="recent-h" class="recent">
    <h2 id="recent-h" class="h3">Recent</h2>
    <ul class="list compact">${list.map((r) => {
      const names = namesOf(r);
      const who = r.decidedBy ? byWhom[r.decidedBy] ?? `by ${r.decidedBy}` : '';
      // The whole row opens the call's own page (the link's box is stretched over it).
      return html`<li class="list-item small recent-row" data-decided=${r.id} data-status=${r.status} data-ran=${r.came?.ran} tabindex="-1" key=${r.id}>
        <span><a class="row-link" href=${`/calls/${encodeURIComponent(r.callId)}`} aria-label=${`What happened to ${revealedText(names.tool)} for ${revealedText(r.app)}`}><strong><${Revealed} text=${names.tool} identifier /></strong></a> · <${Revealed} text=${names.addon} identifier /> for <${Revealed} text=${r.app} identifier /></span>
        <span class="recent-args mono muted" data-args>${argumentSummary(r.arguments)}</span>
        <span class="recent-outcome"><span class=${`badge ${badgeOf(r)}`}>${outcomeWord[r.status] ?? r.status}</span>${r.came ? html` <span data-came>· ${r.came.sentence}</span>` : null}${who ? html` <span class="muted">${who}</span>` : null}${r.decidedAt ? html` <span class="muted">· <${When} iso=${r.decidedAt} /></span>` : null}${r.note ? html` <span class="muted">${r.note}</span>` : null}</span>
        ${r.reason ? html`<span class="recent-reason small" data-reason>Your reason: <q><${Revealed} text=${r.reason} /></q></span>` : null}
      </li>`;
    })}</ul>
  </section>`;
}

export function ApprovalsPage() {
  const state = useStore(live);
  const recent = useRecent(state.decided);
  useFocusAfterCards(state.pending);
  const onDone = (id: string, outcome: string, note?: string) => {
    const a = state.pending.find((p) => p.id === id);
    if (a) recent.add({ ...a, status: outcome, decidedBy: 'dashboard', decidedAt: new Date().toISOString(), note });
    markDecided(id, outcome);
  };
  const statusText = { connecting: 'Connecting…', live: 'Live', polling: 'Checking every 10 s', unavailable: 'Not available yet' }[state.status];
  return html`<${PageHeader} title="Approvals" lead="Calls that ask first wait for your answer here: destructive tools, and any your rules say to ask about. No answer within 30 s counts as no.">
      <span class=${`live-dot live-${state.status}`} role="status"><span aria-hidden="true">●</span> ${statusText}</span>
    <//>
    ${state.status === 'unavailable'
      ? html`<${NotAvailable} what="approvals" />`
      : state.pending.length === 0
        ? html`<div class="empty" data-empty="approvals" tabindex="-1">Nothing is waiting for you. New requests appear here as they arrive.</div>`
        : html`<div class="stack">${state.pending.map((a) => html`<${ApprovalCard} key=${a.id} a=${a} onDone=${onDone} />`)}</div>`}
    ${recent.list.length > 0 ? html`<${Recent} list=${recent.list} />` : null}
    <${PushSetting} />`;
}
