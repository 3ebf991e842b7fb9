import { html } from 'htm/preact';
import type { Call } from './api';

type Kind = 'ok' | 'stopped' | 'failed';
export function kindOf(outcome: string): Kind {
  if (/^(ok|success|succeeded|completed|done)$/i.test(outcome)) return 'ok';
  // A delivery that timed out (timed_out) failed; an approval nobody answered (expired) was stopped.
  if (/den|expired|dismiss|revok|cancel/i.test(outcome)) return 'stopped';
  return 'failed';
}
const kindLabel: Record<Kind, string> = { ok: 'Succeeded', stopped: 'Not approved', failed: 'Failed' };

const steps = [60e3, 5 * 60e3, 15 * 60e3, 3600e3, 6 * 3600e3, 86400e3, 7 * 86400e3];

/** Calls per time bucket, stacked by outcome: an inline SVG, no chart library. */
export function CallsChart({ calls }: { calls: Call[] }) {
  const times = calls.map((c) => Date.parse(c.createdAt)).filter(Number.isFinite);
  if (!times.length) return null;
  const max = Math.max(...times);
  const min = Math.min(...times);
  const step = steps.find((s) => (max - min) / s <= 24) ?? steps[steps.length - 1]!;
  const end = Math.floor(max / step) * step + step;
  const n = Math.max(6, Math.min(24, Math.ceil((end - min) / step)));
  const start = end - n * step;
  const buckets = Array.from({ length: n }, () => ({ ok: 0, stopped: 0, failed: 0 }));
  for (const c of calls) {
    const t = Date.parse(c.createdAt);
    const i = Math.floor((t - start) / step);
    if (i >= 0 && i < n) buckets[i]![kindOf(c.outcome)]++;
  }
  const top = Math.max(1, ...buckets.map((b) => b.ok + b.stopped + b.failed));
  const W = 600, H = 140, pad = 0, bw = (W - pad) / n;
  const y = (v: number) => H - 1 - (v / top) * (H - 8);
  const fmt = (t: number) => {
    const d = new Date(t);
    return step >= 86400e3 ? d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  };
  const summary = `${calls.length} calls from ${fmt(start)} to ${fmt(end)}: ${(['ok', 'stopped', 'failed'] as Kind[])
    .map((k) => `${buckets.reduce((s, b) => s + b[k], 0)} ${kindLabel[k].toLowerCase()}`)
    .join(', ')}.`;
  return html`<figure class="chart">
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
          const r = html`<rect x=${x} width=${w} rx="2" y=${y(base + v)} height=${y(base) - y(base + v)} class=${`bar bar-${k}`}><title>${`${fmt(start + i * step)}: ${v} ${kindLabel[k].toLowerCase()}`}</title></rect>`;
          base += v;
          return r;
        });
      })}
    </svg></div>
    <div class="chart-x" aria-hidden="true"><span>${fmt(start)}</span><span>${fmt(end)}</span></div>
    <figcaption class="legend">${(['ok', 'stopped', 'failed'] as Kind[]).map((k) => html`<span><i class=${`swatch bar-${k}`} aria-hidden="true"></i>${kindLabel[k]}</span>`)}</figcaption>
  </figure>`;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return 0;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Median latency per add-on over the loaded calls, as horizontal bars. */
export function LatencyChart({ calls }: { calls: Call[] }) {
  const by = new Map<string, number[]>();
  for (const c of calls) if (typeof c.latencyMs === 'number') by.set(c.addon, [...(by.get(c.addon) ?? []), c.latencyMs]);
  const rows = [...by].map(([addon, v]) => ({ addon, p50: median(v), n: v.length })).sort((a, b) => b.p50 - a.p50).slice(0, 8);
  if (!rows.length) return html`<p class="muted small">No latencies yet.</p>`;
  const top = Math.max(1, ...rows.map((r) => r.p50));
  return html`<ul class="latency" aria-label="Median latency per add-on">
    ${rows.map((r) => html`<li>
      <span class="latency-name mono" title=${r.addon}>${r.addon}</span>
      <span class="latency-bar" aria-hidden="true"><span style=${{ width: `${Math.max(2, (r.p50 / top) * 100)}%` }}></span></span>
      <span class="latency-value">${Math.round(r.p50)} ms <span class="muted">(${r.n})</span></span>
    </li>`)}
  </ul>`;
}
