// Summarises a V8 heap snapshot (BENCH_HEAP_SNAPSHOT=1 npm run bench -- --only=pending): self size
// and count by constructor, so "what is a held call made of" has an answer.
// node --import tsx bench/heap-top.ts [before.heapsnapshot] after.heapsnapshot [count] [per]
// With two snapshots it shows what grew between them; `per` divides sizes and counts by it (the
// number of held calls), giving bytes per held call.
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2).filter((a) => a.endsWith('.heapsnapshot'));
const [count = 40, per = 1] = process.argv.slice(2).filter((a) => !a.endsWith('.heapsnapshot')).map(Number);
if (!files.length || files.length > 2) {
  console.error('usage: heap-top.ts [before.heapsnapshot] after.heapsnapshot [count] [per]');
  process.exit(2);
}

function summarise(file: string) {
const snap = JSON.parse(readFileSync(file, 'utf8')) as {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
};
const fields = snap.snapshot.meta.node_fields;
const width = fields.length;
const TYPE = fields.indexOf('type');
const NAME = fields.indexOf('name');
const SIZE = fields.indexOf('self_size');
const types = snap.snapshot.meta.node_types[0];
const by = new Map<string, { n: number; bytes: number }>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + TYPE]!]!;
  let name = snap.strings[snap.nodes[i + NAME]!]!;
  // Strings, numbers and code are grouped by type; objects by constructor.
  if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(string)';
  else if (type === 'code') name = '(code)';
  else if (type === 'number' || type === 'hidden' || type === 'array') name = `(${type}) ${name.slice(0, 40)}`;
  else if (type === 'closure') name = `closure ${name.slice(0, 50)}`;
  else name = `${type === 'object' ? '' : `(${type}) `}${name.slice(0, 60)}`;
  const size = snap.nodes[i + SIZE]!;
  const e = by.get(name) ?? { n: 0, bytes: 0 };
  e.n++;
  e.bytes += size;
  by.set(name, e);
  total += size;
}
return { by, total };
}

const after = summarise(files.at(-1)!);
const before = files.length === 2 ? summarise(files[0]!) : { by: new Map<string, { n: number; bytes: number }>(), total: 0 };
const by = new Map([...after.by].map(([k, e]) => [k, { n: e.n - (before.by.get(k)?.n ?? 0), bytes: e.bytes - (before.by.get(k)?.bytes ?? 0) }]));
const total = after.total - before.total;
console.log(`total self size ${(total / 1024 / 1024).toFixed(1)} MB${per > 1 ? `, ${(total / per / 1024).toFixed(1)} KB per ${per}` : ''}`);
for (const [name, e] of [...by].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, count)) {
  console.log(`${(e.bytes / per).toFixed(0).padStart(9)} B  ${(e.n / per).toFixed(2).padStart(8)} ×  ${name}`);
}
