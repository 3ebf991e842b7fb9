import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, get, post, query, type Activity, type Call, type CallPage, type RunningCall } from '../api';
import { CallsChart, kindOf, LatencyChart } from '../chart';
import { navigate } from '../router';
import { onCallChanged } from '../store';
import { ConfirmButton, html, Notice, NotAvailable, oneAtATime, PageHeader, Revealed, revealedText, When } from '../ui';
import { OUTCOME_WORDS, outcomeWords } from './call';

const periods = [['1h', 'Last hour'], ['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days']] as const;
// Every outcome core's call log writes, so each can be picked before a call with it happened.
const outcomes = Object.keys(OUTCOME_WORDS);

const DECISION_WORDS: Record<string, string> = {
  allowed: 'Allowed',
  denied: 'Denied',
  dismissed: 'Dismissed',
  expired: 'Not answered in time',
  cancelled: 'Cancelled',
  revoked: 'App’s access ended',
  blocked: 'Blocked',
};
/** Where a decision was made, in the person's words; a timeout or a revocation says it all in the decision. */
const DECIDED_BY_WORDS: Record<string, string> = {
  dashboard: 'in the dashboard',
  push: 'from a notification',
  app: 'in the app',
  rule: 'by your rule',
  shutdown: 'as the server stopped',
};

/** Who decided, in the person's words: "Allowed from a notification", "Blocked by your rule". */
function Decision({ call }: { call: Call }) {
  if (!call.decision) return html`<span class="muted">—</span>`;
  const words = DECISION_WORDS[call.decision] ?? 'Decided';
  // The app cancelling its own call is the app's doing, not the person's answer in it.
  const by = call.decision === 'cancelled' && call.decidedBy === 'app' ? 'by the app' : DECIDED_BY_WORDS[call.decidedBy ?? ''];
  if (call.decidedBy === 'rule') return html`<span class="by-rule">${words} ${by}</span>`;
  return html`${words}${by ? html` <span class="muted small">${by}</span>` : null}`;
}

/** A row of the call log opens its call: a click anywhere on it follows the row's own link. */
function openRow(e: MouseEvent) {
  const target = e.target as Element;
  if (e.defaultPrevented || e.button !== 0 || target.closest('a, button, input, select, textarea, summary')) return;
  // Selecting a row's text to copy it is not asking to open it.
  if (String(getSelection() ?? '')) return;
  const href = (e.currentTarget as HTMLElement).querySelector('a[data-call-link]')?.getAttribute('href');
  if (!href) return;
  if (e.metaKey || e.ctrlKey) window.open(href, '_blank', 'noopener');
  else navigate(href);
}

/**
 * Calls at their add-on now: tasks (tools that take minutes), with what each is doing and a way to
 * stop it, and calls within one request that are taking a while, which only their app can stop.
 */
function RunningCalls() {
  const [running, setRunning] = useState<RunningCall[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const [stopping, setStopping] = useState<string | null>(null);
  useEffect(() => {
    const refresh = oneAtATime(() =>
      get<RunningCall[]>('/api/calls/running').then(setRunning, (err: unknown) => {
        // An older API without running calls: the section stays hidden.
        if (!(err instanceof ApiError && err.routeMissing)) setProblem(err instanceof ApiError ? err.message : 'The running calls could not be loaded.');
      }),
    );
    refresh();
    // A call that is not shown yet may be the one that changed: any call's change reads the list again.
    return onCallChanged((change) => {
      if (!change || !('approvalId' in change)) refresh();
    });
  }, []);
  const cancel = async (call: RunningCall & { taskId: string }) => {
    setStopping(call.taskId);
    setProblem(null);
    try {
      await post(`/api/calls/running/${encodeURIComponent(call.taskId)}/cancel`);
      setRunning((prev) => prev.filter((c) => c.taskId !== call.taskId));
    } catch (err) {
      setProblem(err instanceof ApiError ? err.message : 'The call could not be cancelled.');
    } finally {
      setStopping(null);
    }
  };
  if (!running.length && !problem) return null;
  return html`<section class="card running" aria-labelledby="running-h">
    <h2 id="running-h" class="h3">Running now</h2>
    ${problem && html`<${Notice} kind="error">${problem}<//>`}
    <ul class="running-list">${running.map(
      (c) => html`<li data-task=${c.taskId ?? undefined} data-call=${c.callId}>
        <div><strong><${Revealed} text=${c.toolTitle} identifier /></strong> <span class="muted small">· <${Revealed} text=${c.addonName} identifier /> for <${Revealed} text=${c.app} /></span></div>
        <div class="running-status" role="status">${c.statusMessage ?? (c.taskId ? 'Working.' : 'At the add-on.')}</div>
        <div class="muted small">Started <${When} iso=${c.createdAt} />${c.answerBy ? html`; ${c.addonName} has until <${When} iso=${c.answerBy} />` : null}. <a href=${`/calls/${encodeURIComponent(c.callId)}`} aria-label=${`Details of ${c.toolTitle} for ${c.app}`}>Details</a></div>
        ${c.taskId && html`<button type="button" class="btn btn-danger-outline" disabled=${stopping === c.taskId} onClick=${() => cancel({ ...c, taskId: c.taskId! })}
          aria-label=${`Cancel ${c.toolTitle} for ${c.app}`}>Cancel</button>`}
      </li>`,
    )}</ul>
  </section>`;
}

/** The call log: newest first, filtered by app, add-on and outcome, paged with "load more". */
export function ActivityPage() {
  const params = new URLSearchParams(location.search);
  const [filters, setFilters] = useState({ app: params.get('app') ?? '', addon: params.get('addon') ?? '', outcome: params.get('outcome') ?? '' });
  const [items, setItems] = useState<Call[]>([]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [period, setPeriod] = useState(params.get('period') ?? '24h');
  const [activity, setActivity] = useState<Activity | null>(null);
  // Bumped when the person clears their history: the list and the sums are read again.
  const [cleared, setCleared] = useState(0);
  const [clearedNote, setClearedNote] = useState('');

  const load = async (cursor?: string) => {
    setLoading(true);
    setError(null);
    try {
      const page = await get<CallPage>(`/api/calls${query({ cursor, ...filters })}`);
      setItems((prev) => (cursor ? [...prev, ...page.items] : page.items));
      setNext(page.nextCursor);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'The call log could not be loaded.'));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    history.replaceState(null, '', `/activity${query({ ...filters, period: period === '24h' ? undefined : period })}`);
    void load();
  }, [filters.app, filters.addon, filters.outcome, cleared]);
  // The charts are the server's sums over the period, not of the rows loaded below.
  useEffect(() => {
    history.replaceState(null, '', `/activity${query({ ...filters, period: period === '24h' ? undefined : period })}`);
    let stale = false;
    get<Activity>(`/api/calls/activity${query({ period, ...filters })}`).then(
      (a) => !stale && setActivity(a),
      (err) => !stale && setError(err instanceof ApiError ? err : new ApiError(0, 'The activity could not be loaded.')),
    );
    return () => { stale = true; };
  }, [period, filters.app, filters.addon, filters.outcome, cleared]);
  const clearHistory = async () => {
    const { removed } = await del<{ removed: number }>('/api/calls');
    setClearedNote(removed === 1 ? 'One call was removed from your history.' : `${removed} calls were removed from your history.`);
    setCleared((n) => n + 1);
  };

  const apps = [...new Set(items.map((c) => c.app))].sort();
  // The add-ons to filter by, by name: those of the calls loaded and of the period's sums, and the one filtered by.
  const addonNames = new Map<string, string>();
  for (const c of items) addonNames.set(c.addon, c.addonName);
  for (const l of activity?.latency ?? []) addonNames.set(l.addon, l.addonName);
  if (filters.addon && !addonNames.has(filters.addon)) addonNames.set(filters.addon, 'The add-on filtered by');
  const addons = [...addonNames].sort((a, b) => a[1].localeCompare(b[1]));
  const onFilter = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setFilters({ app: String(f.get('app') ?? '').trim(), addon: String(f.get('addon') ?? '').trim(), outcome: String(f.get('outcome') ?? '') });
  };

  if (error?.routeMissing) return html`<${PageHeader} title="Activity" /><${NotAvailable} what="the call log" />`;
  // The audit trail: these calls and every decision, rule, release and app let in or revoked, hash-chained (docs/audit.md).
  return html`<${PageHeader} title="Activity" lead="Every tool call an app made with your tools, newest first.">
      <a class="btn" href="/api/audit/export" download="toolport-audit.ndjson">Download audit trail</a>
    <//>
    <${RunningCalls} />
    <form class="filters card" onSubmit=${onFilter} aria-label="Filter calls">
      <div class="field"><label for="f-app">App</label><input id="f-app" name="app" list="apps-list" value=${filters.app} autocomplete="off" /></div>
      <div class="field"><label for="f-addon">Add-on</label>
        <select id="f-addon" name="addon" value=${filters.addon}>
          <option value="">Any</option>
          ${addons.map(([id, name]) => html`<option value=${id}>${revealedText(name)}</option>`)}
        </select>
      </div>
      <div class="field"><label for="f-outcome">Outcome</label>
        <select id="f-outcome" name="outcome" value=${filters.outcome}>
          <option value="">Any</option>
          ${[...new Set([...outcomes, ...items.map((c) => c.outcome)])].map((o) => html`<option value=${o}>${outcomeWords(o)}</option>`)}
        </select>
      </div>
      <div class="filter-actions">
        <button class="btn btn-primary" type="submit">Filter</button>
        ${(filters.app || filters.addon || filters.outcome) && html`<button class="btn" type="button" onClick=${() => setFilters({ app: '', addon: '', outcome: '' })}>Clear</button>`}
      </div>
      <datalist id="apps-list">${apps.map((a) => html`<option value=${a} />`)}</datalist>
    </form>
    ${error && html`<${Notice} kind="error">${error.message}<//>`}
    <div class="period"><label for="period">Period</label>
      <select id="period" value=${period} onChange=${(e: Event) => setPeriod((e.target as HTMLSelectElement).value)}>
        ${periods.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
      </select>
    </div>
    ${activity && activity.totals.calls > 0 && html`<div class="two-col">
      <section class="card" aria-labelledby="chart-h"><h2 id="chart-h" class="h3">Calls over time</h2><${CallsChart} activity=${activity} /></section>
      <section class="card" aria-labelledby="lat-h"><h2 id="lat-h" class="h3">Median latency per add-on</h2><${LatencyChart} rows=${activity.latency} /></section>
    </div>`}
    ${!loading && !error && items.length === 0 && html`<div class="empty">No calls${filters.app || filters.addon || filters.outcome ? ' match these filters' : ' yet'}.</div>`}
    ${items.length > 0 && html`<div class="table-wrap card" tabindex="0" role="region" aria-label="Tool calls">
      <table class="calls" role="table">
        <caption class="visually-hidden">Tool calls, newest first</caption>
        <thead role="rowgroup"><tr role="row">${['When', 'App', 'Tool', 'Decision', 'Outcome', 'Latency'].map((h) => html`<th scope="col" role="columnheader" class=${h === 'Latency' ? 'num' : undefined}>${h}</th>`)}</tr></thead>
        <tbody role="rowgroup">${items.map(
          (c) => html`<tr data-call=${c.id} role="row" class="row-link" onClick=${openRow}>
            <td class="c-when" role="cell"><${When} iso=${c.createdAt} /></td>
            <td class="c-app" role="cell"><${Revealed} text=${c.app} identifier /></td>
            <td class="c-tool" role="cell"><a href=${`/calls/${encodeURIComponent(c.id)}`} data-call-link><${Revealed} text=${c.toolTitle} identifier /><span class="visually-hidden">: what happened</span></a> <span class="muted small">· <${Revealed} text=${c.addonName} identifier /></span></td>
            <td class="c-decision" role="cell"><${Decision} call=${c} /></td>
            <td class="c-outcome" role="cell"><span class=${`badge badge-${kindOf(c.outcome)}`} data-outcome=${c.outcome}>${outcomeWords(c.outcome)}</span></td>
            <td class="num c-latency" role="cell">${typeof c.latencyMs === 'number' ? `${c.latencyMs} ms` : '—'}</td>
          </tr>`,
        )}</tbody>
      </table>
    </div>`}
    ${loading && html`<p class="muted" aria-busy="true">Loading calls…</p>`}
    ${next && !loading && html`<button type="button" class="btn btn-block" onClick=${() => load(next)}>Load more</button>`}
    <section class="history-keep" aria-labelledby="keep-h">
      <h2 id="keep-h" class="h3">Your history</h2>
      ${clearedNote && html`<${Notice} kind="success">${clearedNote}<//>`}
      <p class="muted">${activity ? `Calls are kept for ${activity.keptDays} days, then removed.` : 'Calls are kept for a limited time, then removed.'} You can clear them sooner.</p>
      <${ConfirmButton}
        label="Clear history"
        title="Clear your call history?"
        body=${html`<p>Every call that has ended is removed from Activity, with the add-ons’ records of delivering it. Calls still running stay until they end.</p><p>This cannot be undone. Your audit trail keeps a note that you cleared it.</p>`}
        confirmLabel="Clear history"
        danger
        onConfirm=${clearHistory}
      />
    </section>`;
}
