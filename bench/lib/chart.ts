import { Resvg } from '@resvg/resvg-js';

// As many as the call panels have series (the peers included), so no two share a colour.
const COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666', '#1f78b4', '#b15928', '#000000', '#fb9a99'];
const W = 520;
const H = 340;
const M = { l: 60, r: 12, t: 34, b: 44 };

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** One panel: latency (log scale) against percentile (log scale of 1/(1-p)), one line per series. */
function panel(x0: number, y0: number, title: string, series: Array<{ label: string; points: Array<[number, number]> }>) {
  const all = series.flatMap((s) => s.points.map(([, v]) => v)).filter((v) => v > 0);
  const out: string[] = [`<g transform="translate(${x0},${y0})">`, `<rect width="${W}" height="${H}" fill="white" stroke="#ddd"/>`];
  out.push(`<text x="${W / 2}" y="20" font-size="14" font-weight="bold" text-anchor="middle">${esc(title)}</text>`);
  if (!all.length) return [...out, '</g>'].join('');
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...all))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all))));
  const px = (p: number) => M.l + ((Math.log10(100 / (100 - Math.min(p, 99.9)))) / 3) * (W - M.l - M.r);
  const py = (v: number) => H - M.b - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (H - M.t - M.b);
  for (let d = lo; d <= hi * 1.001; d *= 10) {
    out.push(`<line x1="${M.l}" x2="${W - M.r}" y1="${py(d)}" y2="${py(d)}" stroke="#eee"/>`);
    out.push(`<text x="${M.l - 6}" y="${py(d) + 4}" font-size="11" text-anchor="end">${d >= 1 ? d : d.toFixed(String(d).length - 2)} ms</text>`);
  }
  for (const p of [0, 50, 90, 99, 99.9]) {
    out.push(`<line x1="${px(p)}" x2="${px(p)}" y1="${M.t}" y2="${H - M.b}" stroke="#eee"/>`);
    out.push(`<text x="${px(p)}" y="${H - M.b + 16}" font-size="11" text-anchor="middle">p${p}</text>`);
  }
  out.push(`<text x="${W / 2}" y="${H - 8}" font-size="11" text-anchor="middle">percentile</text>`);
  series.forEach((s, i) => {
    const pts = s.points.filter(([, v]) => Number.isFinite(v)).map(([p, v]) => `${px(p).toFixed(1)},${py(v).toFixed(1)}`).join(' ');
    out.push(`<polyline points="${pts}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2"/>`);
    out.push(`<rect x="${M.l + 8}" y="${M.t + 4 + i * 15}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/>`);
    out.push(`<text x="${M.l + 22}" y="${M.t + 13 + i * 15}" font-size="11">${esc(s.label)}</text>`);
  });
  out.push('</g>');
  return out.join('');
}

const curve = (percentiles: Record<string, number>): Array<[number, number]> =>
  Object.entries(percentiles).map(([p, v]) => [Number(p), v] as [number, number]).sort((a, b) => a[0] - b[0]);

/** The latency distributions of a results object as a PNG (SVG rasterised by resvg). */
export function drawChart(r: any): Buffer {
  const panels: string[] = [];
  const groups: Array<[string, string, number]> = [
    ['call', 'tools/call vs baselines, c=1', 1],
    ['call', 'tools/call vs baselines, c=16', 16],
    ['call', 'tools/call vs baselines, c=64', 64],
    ['list', 'tools/list, c=1', 1],
    ['list', 'tools/list, c=64', 64],
  ];
  for (const [group, title, c] of groups) {
    const series = Object.values<any>(r.load)
      .filter((s) => s.group === group && s.points[c])
      .map((s) => ({ label: `${s.label} (${s.points[c].rps}/s)`, points: curve(s.points[c].percentiles) }));
    panels.push(panel(0, 0, title, series));
  }
  panels.push(
    panel(0, 0, 'approval round trip (decision → result)', Object.values<any>(r.roundTrips).map((x) => ({ label: x.label, points: curve(x.distribution) }))),
  );
  const cols = 3;
  const rows = Math.ceil(panels.length / cols);
  const body = panels.map((p, i) => p.replace('translate(0,0)', `translate(${(i % cols) * W},${30 + Math.floor(i / cols) * H})`)).join('');
  const title = `Toolport bench (${r.mode}) ${r.startedAt.slice(0, 16)}Z: latency by percentile, log scales`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${cols * W}" height="${30 + rows * H}" font-family="Liberation Sans, DejaVu Sans, Arial, sans-serif"><rect width="100%" height="100%" fill="white"/><text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>${body}</svg>`;
  return new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'Liberation Sans' } }).render().asPng();
}
