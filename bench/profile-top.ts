// Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by package/file, and
// inclusive time of the project's own functions.
// node --import tsx bench/profile-top.ts <file>.cpuprofile [count] [--from=s] [--to=s] [--timeline]
// --from/--to keep the samples between those seconds after the profile started (a bench child's
// profile also holds its start-up and set-up); --timeline prints busy ms per second to find them.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
if (!file) {
  console.error('usage: profile-top.ts <file.cpuprofile> [count] [--from=s] [--to=s] [--timeline]');
  process.exit(2);
}
const count = Number(args.filter((a) => !a.startsWith('--'))[1] ?? 25);
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const from = Number(flag('from') ?? 0) * 1e6;
const to = Number(flag('to') ?? Infinity) * 1e6;
type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const isIdle = (id: number) => byId.get(id)!.callFrame.functionName === '(idle)';

const self = new Map<number, number>();
const timeline = new Map<number, number>();
let at = 0;
prof.samples.forEach((id, i) => {
  const dt = prof.timeDeltas[i] ?? 0;
  at += dt;
  if (!isIdle(id)) timeline.set(Math.floor(at / 1e6), (timeline.get(Math.floor(at / 1e6)) ?? 0) + dt);
  if (at >= from && at < to) self.set(id, (self.get(id) ?? 0) + dt);
});
if (args.includes('--timeline')) {
  console.log('busy ms per second:', [...timeline].map(([s, t]) => `${s}:${Math.round(t / 1000)}`).join(' '));
  process.exit(0);
}
for (const id of self.keys()) if (isIdle(id)) self.delete(id);
const total = [...self.values()].reduce((a, b) => a + b, 0);
const short = (url: string) => url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm:').replace(/.*\/(apps|packages|bench|test)\//, '$1/');
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const fn = new Map<string, number>();
const where = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, t] of self) {
  const node = byId.get(id)!;
  fn.set(label(node), (fn.get(label(node)) ?? 0) + t);
  const s = short(node.callFrame.url);
  const pkg = s.startsWith('nm:') ? s.split('/').slice(0, s.startsWith('nm:@') ? 2 : 1).join('/') : s || node.callFrame.functionName;
  where.set(pkg, (where.get(pkg) ?? 0) + t);
  // Each of the project's own functions on the stack once (recursion counted once).
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur)!;
    if (!/\/(apps|packages)\//.test(n.callFrame.url) || n.callFrame.url.includes('node_modules')) continue;
    const l = label(n);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + t);
  }
}
const show = (m: Map<string, number>, title: string) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms, idle left out)`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
};
show(fn, 'self time by function');
show(where, 'self time by file or package');
show(inclusive, "inclusive time of the project's own functions");
