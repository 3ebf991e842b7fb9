#!/usr/bin/env node
// Fails on a value-import cycle inside packages/core/src: a verb says what it changed
// (svc.changes) instead of importing the module that reads it. Type-only imports do not count:
// they vanish at run time. `npm run lint` runs it; test/core-cycles.test.ts proves it can fail.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.tsx?$/.test(name) && !/\.(test|d)\.tsx?$/.test(name)) out.push(p);
  }
  return out;
}

function resolveLocal(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec.replace(/\.js$/, ''));
  return [`${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts')].find((p) => existsSync(p)) ?? null;
}

/** The modules `file` needs at run time: imports and re-exports that are not wholly type-only. */
function valueImports(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const out = new Set();
  for (const node of source.statements) {
    let spec;
    let typeOnly = false;
    if (ts.isImportDeclaration(node)) {
      spec = node.moduleSpecifier.text;
      const clause = node.importClause;
      const named = clause?.namedBindings;
      typeOnly = !!clause && (clause.isTypeOnly || (!clause.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      spec = node.moduleSpecifier.text;
      const named = node.exportClause;
      typeOnly = node.isTypeOnly || (!!named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly));
    }
    if (spec === undefined || typeOnly) continue;
    const target = resolveLocal(file, spec);
    if (target) out.add(target);
  }
  return out;
}

/** Every strongly connected group of more than one file (Tarjan), as paths relative to `dir`. */
export function valueCycles(dir) {
  const files = sourceFiles(dir);
  const edges = new Map(files.map((f) => [f, valueImports(f)]));
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(path.relative(dir, w));
    } while (w !== v);
    if (group.length > 1) cycles.push(group.sort());
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return cycles;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../packages/core/src');
  const cycles = valueCycles(dir);
  for (const c of cycles) console.error(`value-import cycle in packages/core: ${c.join(' ↔ ')}`);
  if (cycles.length) {
    console.error('A writer says what it changed through svc.changes (events/changes.ts) instead of importing its reader; shared helpers go to a lower module.');
    process.exit(1);
  }
}
