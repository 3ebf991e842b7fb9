import { html } from 'htm/preact';
import type { Activity } from './api';

type Kind = 'ok' | 'stopped' | 'failed';
export function kindOf(outcome: string): Kind {
  if (/^(ok|success|succeeded|completed|done)$/i.test(outcome)) return 'ok';
  // A delivery that timed out (timed_out) failed; an approval nobody answered (expired) was stopped.
  if (/den|expired|dismiss|revok|cancel|block/i.test(outcome)) return 'stopped';
  return 'failed';
}
const kindLabel: Record<Kind, string> = { ok: 'Succeeded', stopped: 'Not approved', failed: 'Failed' };

/** Calls per time bucket over the chosen period, stacked by outcome: an inline SVG, no chart library. */
export function CallsChart({ activity }: { activity: Activity }) {
  const { buckets, stepMs: step } = activity;
  const n = buckets.length;
  const start = Date.parse(activity.from);
  const end = Date.parse(activity.to);
  const top = Math.max(1, ...buckets.map((b) => b.ok + b.stopped + b.failed));
  const W = 600, H = 140, pad = 0, bw = (W - pad) / n;
  const y = (v: number) => H - 1 - (v / top) * (H - 8);
  const fmt = (t: number) => {
    const d = new Date(t);
    return step >= 86400e3 ? d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) : step >= 6 * 3600e3 ? d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit' }) : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  };
  const t = activity.totals;
  const summary = `${t.calls} call${t.calls === 1 ? '' : 's'} from ${fmt(start)} to ${fmt(end)}: ${t.ok} ${kindLabel.ok.toLowerCase()}, ${t.stopped} ${kindLabel.stopped.toLowerCase()}, ${t.failed} ${kindLabel.failed.toLowerCase()}.`;
  return html`<figure class="chart" data-total=${t.calls}>
    <div class="chart-plot"><span class="chart-y chart-y-top" aria-hidden="true">${top}</span><span class="chart-y chart-y-zero" aria-hidden="true">0</span>
    <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${summary} preserveAspectRatio="none" class="chart-svg">
      <line x1=${pad} x2=${W} y1=${H - 1} y2=${H - 1} class="axis" />
      ${buckets.map((b, i) => {
        const w = Math.min(28, Math.max(1, bw - 4));
        const x = pad + i * bw + (bw - w) / 2;
        let base = 0;
        return (['ok', 'stopped', 'failed'] as Kind[]).map((k) => {
          const v = b[k];
          if (!v) return null;
          const r = html`<rect x=${x} width=${w} rx="2" y=${y(base + v)} height=${y(base) - y(base + v)} class=${`bar bar-${k}`}><title>${`${fmt(Date.parse(b.start))}: ${v} ${kindLabel[k].toLowerCase()}`}</title></rect>`;
          base += v;
          return r;
        });
      })}
    </svg></div>
    <div class="chart-x" aria-hidden="true"><span>${fmt(start)}</span><span>${fmt(end)}</span></div>
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
      <span class="latency-name mono" title=${r.addon}>${r.addon}</span>
      <span class="latency-bar" aria-hidden="true"><span class="latency-wait" style=${{ width: `${((r.waitP50Ms ?? 0) / top) * 100}%` }}></span><span class="latency-addon" style=${{ width: `${Math.max(1, ((r.addonP50Ms ?? 0) / top) * 100)}%` }}></span></span>
      <span class="latency-value"><span data-part="addon">add-on ${ms(r.addonP50Ms)}</span>${r.asked ? html` · <span data-part="wait">your wait ${ms(r.waitP50Ms)}</span>` : null} <span class="muted">(${r.calls})</span></span>
    </li>`)}
  </ul>
  <p class="legend"><span><i class="swatch latency-wait" aria-hidden="true"></i>Your wait (approvals)</span><span><i class="swatch latency-addon" aria-hidden="true"></i>The add-on's time</span></p>`;
}
