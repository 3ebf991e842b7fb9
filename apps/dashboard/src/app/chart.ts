import { html } from 'htm/preact';
import type { Activity } from './api';
import { Revealed } from './ui';

type Kind = 'ok' | 'stopped' | 'failed';
export function kindOf(outcome: string): Kind {
  if (/^(ok|success|succeeded|completed|done)$/i.test(outcome)) return 'ok';
  // A delivery that timed out (timed_out) failed; an approval nobody answered (expired) was stopped.
  if (/den|expired|dismiss|revok|cancel|block/i.test(outcome)) return 'stopped';
  return 'failed';
}
const kindLabel: Record<Kind, string> = { ok: 'Succeeded', stopped: 'Not approved', failed: 'Failed' };

const HOUR = 3600e3;
const DAY = 24 * HOUR;

/** A moment as a person reads it on the axis's scale: a day for day-wide bars, else its date and time. */
function moment(t: number, step: number) {
  return step >= DAY
    ? new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
    : new Date(t).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
}

/** Local midnights in (from, to], every `days` days counted back from the last one. */
function midnights(from: number, to: number, days: number): number[] {
  const d = new Date(to);
  d.setHours(0, 0, 0, 0);
  const out: number[] = [];
  while (d.getTime() > from) {
    if (d.getTime() <= to) out.unshift(d.getTime());
    d.setDate(d.getDate() - days);
  }
  return out;
}

/** Instants in (from, to] on the local clock's quarter hours: every zone's offset is a whole number of them. */
function quarterHours(from: number, to: number): number[] {
  const q = 15 * 60e3;
  const out: number[] = [];
  for (let t = Math.floor(from / q) * q + q; t <= to; t += q) out.push(t);
  return out;
}

/** Instants in (from, to] at local hours that are multiples of `hours`. */
function roundHours(from: number, to: number, hours: number): number[] {
  const d = new Date(from);
  d.setMinutes(0, 0, 0);
  d.setHours(Math.ceil(d.getHours() / hours) * hours);
  const out: number[] = [];
  for (; d.getTime() <= to; d.setHours(d.getHours() + hours)) {
    // A clock change can move a step off the round hour; only round ones are labelled.
    if (d.getTime() > from && d.getMinutes() === 0 && d.getHours() % hours === 0) out.push(d.getTime());
  }
  return out;
}

export interface AxisTick {
  /** Where on the axis, from 0 (its start) to 1 (its end). */
  x: number;
  label: string;
}

/**
 * The x-axis's labels: instants on the local clock's round numbers inside the period (quarter hours
 * for an hour, every six hours for a day with the day's name at midnight, each day's name for a
 * week, every seventh date for a month), never two alike, few enough to stand apart on a phone.
 * The period's start itself is left out: a day ago reads the same as now.
 */
export function axisTicks(from: number, to: number): AxisTick[] {
  const span = to - from;
  const time = (t: number, o: Intl.DateTimeFormatOptions) => new Date(t).toLocaleTimeString(undefined, o);
  const date = (t: number, o: Intl.DateTimeFormatOptions) => new Date(t).toLocaleDateString(undefined, o);
  let ticks: Array<{ at: number; label: string }>;
  if (span <= 2 * HOUR) ticks = quarterHours(from, to).map((at) => ({ at, label: time(at, { hour: 'numeric', minute: '2-digit' }) }));
  else if (span <= 2 * DAY) {
    ticks = roundHours(from, to, 6).map((at) => ({ at, label: new Date(at).getHours() === 0 ? date(at, { weekday: 'short' }) : time(at, { hour: 'numeric' }) }));
  } else if (span <= 10 * DAY) ticks = midnights(from, to, 1).map((at) => ({ at, label: date(at, { weekday: 'short' }) }));
  else ticks = midnights(from, to, 7).map((at) => ({ at, label: date(at, { month: 'short', day: 'numeric' }) }));
  // A clock set back shows an hour twice: then each says its day, time and offset from UTC.
  if (new Set(ticks.map((t) => t.label)).size < ticks.length) {
    ticks = ticks.map((t) => ({ at: t.at, label: new Date(t.at).toLocaleString(undefined, { weekday: 'short', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' }) }));
  }
  return ticks.map((t) => ({ x: (t.at - from) / span, label: t.label }));
}

/** Calls per time bucket over the chosen period, stacked by outcome: an inline SVG, no chart library. */
export function CallsChart({ activity }: { activity: Activity }) {
  const { buckets, stepMs: step } = activity;
  const n = buckets.length;
  const start = Date.parse(activity.from);
  const end = Date.parse(activity.to);
  const top = Math.max(1, ...buckets.map((b) => b.ok + b.stopped + b.failed));
  const W = 600, H = 140, pad = 0, bw = (W - pad) / n;
  const y = (v: number) => H - 1 - (v / top) * (H - 8);
  const ticks = axisTicks(start, end);
  const t = activity.totals;
  const summary = `${t.calls} call${t.calls === 1 ? '' : 's'} from ${moment(start, step)} to ${moment(end, step)}: ${t.ok} ${kindLabel.ok.toLowerCase()}, ${t.stopped} ${kindLabel.stopped.toLowerCase()}, ${t.failed} ${kindLabel.failed.toLowerCase()}.`;
  return html`<figure class="chart" data-total=${t.calls}>
    <div class="chart-plot"><span class="chart-y chart-y-top" aria-hidden="true">${top}</span><span class="chart-y chart-y-zero" aria-hidden="true">0</span>
    <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${summary} preserveAspectRatio="none" class="chart-svg">
      <line x1=${pad} x2=${W} y1=${H - 1} y2=${H - 1} class="axis" />
      ${ticks.map((k) => html`<line x1=${k.x * W} x2=${k.x * W} y1=${H - 1} y2=${H - 7} class="axis" vector-effect="non-scaling-stroke" />`)}
      ${buckets.map((b, i) => {
        const w = Math.min(28, Math.max(1, bw - 4));
        const x = pad + i * bw + (bw - w) / 2;
        let base = 0;
        return (['ok', 'stopped', 'failed'] as Kind[]).map((k) => {
          const v = b[k];
          if (!v) return null;
          const r = html`<rect x=${x} width=${w} rx="2" y=${y(base + v)} height=${y(base) - y(base + v)} class=${`bar bar-${k}`}><title>${`${moment(Date.parse(b.start), step)}: ${v} ${kindLabel[k].toLowerCase()}`}</title></rect>`;
          base += v;
          return r;
        });
      })}
    </svg></div>
    <div class="chart-x chart-x-ticks" aria-hidden="true"><div class="chart-ticks">${ticks.map(
      (k) => html`<span class=${k.x > 0.9 ? 'tick-end' : 'tick-mid'} style=${{ left: `${k.x * 100}%` }}>${k.label}</span>`,
    )}</div></div>
    <figcaption class="legend">${(['ok', 'stopped', 'failed'] as Kind[]).map((k) => html`<span><i class=${`swatch bar-${k}`} aria-hidden="true"></i>${kindLabel[k]} ${t[k]}</span>`)}</figcaption>
  </figure>`;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return 0;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);

/**
 * Median latency per add-on over the period, split into the person's wait (answering an approval)
 * and the add-on's own time, as stacked horizontal bars with the numbers beside them.
 */
export function LatencyChart({ rows }: { rows: Activity['latency'] }) {
  if (!rows.length) return html`<p class="muted small">No latencies in this period.</p>`;
  const top = Math.max(1, ...rows.map((r) => (r.waitP50Ms ?? 0) + (r.addonP50Ms ?? 0)));
  return html`<ul class="latency" aria-label="Median latency per add-on: your wait and the add-on's time">
    ${rows.slice(0, 8).map((r) => html`<li data-latency=${r.addon}>
      <span class="latency-name" title=${r.addonName}><${Revealed} text=${r.addonName} identifier /></span>
      <span class="latency-bar" aria-hidden="true"><span class="latency-wait" style=${{ width: `${((r.waitP50Ms ?? 0) / top) * 100}%` }}></span><span class="latency-addon" style=${{ width: `${Math.max(1, ((r.addonP50Ms ?? 0) / top) * 100)}%` }}></span></span>
      <span class="latency-value"><span data-part="addon">add-on ${ms(r.addonP50Ms)}</span>${r.asked ? html` · <span data-part="wait">your wait ${ms(r.waitP50Ms)}</span>` : null} <span class="muted">(${r.calls})</span></span>
    </li>`)}
  </ul>
  <p class="legend"><span><i class="swatch latency-wait" aria-hidden="true"></i>Your wait (approvals)</span><span><i class="swatch latency-addon" aria-hidden="true"></i>The add-on's time</span></p>`;
}
