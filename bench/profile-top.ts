// Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by package/file.
// node --import tsx bench/profile-top.ts bench/results/profiles/<file>.cpuprofile [count]
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: profile-top.ts <file.cpuprofile> [count]');
  process.exit(2);
}
const count = Number(process.argv[3] ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const where = new Map<string, number>();
for (const [id, t] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const short = url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm:').replace(/.*\/work\/main\//, '');
  fn.set(`${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`, (fn.get(`${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`) ?? 0) + t);
  const pkg = short.startsWith('nm:') ? short.split('/').slice(0, short.startsWith('nm:@') ? 2 : 1).join('/') : short || functionName;
  where.set(pkg, (where.get(pkg) ?? 0) + t);
}
const show = (m: Map<string, number>, title: string) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms)`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
};
show(fn, 'self time by function');
show(where, 'self time by file or package');
