import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, post, query, type Activity, type Call, type CallPage, type RunningCall } from '../api';
import { CallsChart, kindOf, LatencyChart } from '../chart';
import { onCallChanged } from '../store';
import { html, Notice, NotAvailable, oneAtATime, PageHeader, Revealed, When } from '../ui';
import { OUTCOME_WORDS, outcomeWords } from './call';

const periods = [['1h', 'Last hour'], ['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days']] as const;
// Every outcome core's call log writes, so each can be picked before a call with it happened.
const outcomes = Object.keys(OUTCOME_WORDS);

/** Who decided, in the person's words: a rule of theirs reads "allowed by your rule", "blocked by your rule". */
function Decision({ call }: { call: Call }) {
  if (!call.decision) return html`<span class="muted">—</span>`;
  if (call.decidedBy === 'rule') return html`<span class="by-rule">${call.decision} by your rule</span>`;
  return html`${call.decision}${call.decidedBy ? html` <span class="muted small">by ${call.decidedBy}</span>` : null}`;
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
        <div><code class="mono"><${Revealed} text=${`${c.addon}__${c.tool}`} identifier /></code> <span class="muted small">for <${Revealed} text=${c.app} /></span></div>
        <div class="running-status" role="status">${c.statusMessage ?? (c.taskId ? 'Working.' : 'At the add-on.')}</div>
        <div class="muted small">Started <${When} iso=${c.createdAt} />${c.answerBy ? html`; ${c.addonName} has until <${When} iso=${c.answerBy} />` : null}. <a href=${`/calls/${encodeURIComponent(c.callId)}`} aria-label=${`Details of ${c.tool} for ${c.app}`}>Details</a></div>
        ${c.taskId && html`<button type="button" class="btn btn-danger-outline" disabled=${stopping === c.taskId} onClick=${() => cancel({ ...c, taskId: c.taskId! })}
          aria-label=${`Cancel ${c.tool} for ${c.app}`}>Cancel</button>`}
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
  }, [filters.app, filters.addon, filters.outcome]);
  // The charts are the server's sums over the period, not of the rows loaded below.
  useEffect(() => {
    history.replaceState(null, '', `/activity${query({ ...filters, period: period === '24h' ? undefined : period })}`);
    let stale = false;
    get<Activity>(`/api/calls/activity${query({ period, ...filters })}`).then(
      (a) => !stale && setActivity(a),
      (err) => !stale && setError(err instanceof ApiError ? err : new ApiError(0, 'The activity could not be loaded.')),
    );
    return () => { stale = true; };
  }, [period, filters.app, filters.addon, filters.outcome]);

  const apps = [...new Set(items.map((c) => c.app))].sort();
  const addons = [...new Set(items.map((c) => c.addon))].sort();
  const onFilter = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setFilters({ app: String(f.get('app') ?? '').trim(), addon: String(f.get('addon') ?? '').trim(), outcome: String(f.get('outcome') ?? '') });
  };

  if (error?.routeMissing) return html`<${PageHeader} title="Activity" /><${NotAvailable} what="the call log" />`;
  return html`<${PageHeader} title="Activity" lead="Every tool call an app made with your tools, newest first." />
    <${RunningCalls} />
    <form class="filters card" onSubmit=${onFilter} aria-label="Filter calls">
      <div class="field"><label for="f-app">App</label><input id="f-app" name="app" list="apps-list" value=${filters.app} autocomplete="off" /></div>
      <div class="field"><label for="f-addon">Add-on</label><input id="f-addon" name="addon" list="addons-list" value=${filters.addon} autocomplete="off" /></div>
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
      <datalist id="addons-list">${addons.map((a) => html`<option value=${a} />`)}</datalist>
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
          (c) => html`<tr data-call=${c.id} role="row">
            <td class="c-when" role="cell"><a href=${`/calls/${encodeURIComponent(c.id)}`}><${When} iso=${c.createdAt} /><span class="visually-hidden">: what happened</span></a></td>
            <td class="c-app" role="cell"><${Revealed} text=${c.app} identifier /></td>
            <td class="c-tool" role="cell"><code class="mono"><${Revealed} text=${`${c.addon}__${c.tool}`} identifier /></code></td>
            <td class="c-decision" role="cell"><${Decision} call=${c} /></td>
            <td class="c-outcome" role="cell"><span class=${`badge badge-${kindOf(c.outcome)}`} data-outcome=${c.outcome}>${outcomeWords(c.outcome)}</span></td>
            <td class="num c-latency" role="cell">${typeof c.latencyMs === 'number' ? `${c.latencyMs} ms` : '—'}</td>
          </tr>`,
        )}</tbody>
      </table>
    </div>`}
    ${loading && html`<p class="muted" aria-busy="true">Loading calls…</p>`}
    ${next && !loading && html`<button type="button" class="btn btn-block" onClick=${() => load(next)}>Load more</button>`}`;
}
