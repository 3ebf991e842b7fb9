// The cost of argument patterns: the worst pattern a manifest may declare, at the longest allowed
// input, against a trivial pattern at the same length, through checkArguments (the call path's
// gate), in this process. Run alone: `node --import tsx bench/patterns.ts [--quick]` (about a
// minute; prints a table and the JSON), or as part of `npm run bench` (the `patterns` group).
import { performance } from 'node:perf_hooks';
import { ARGUMENT_LIMITS, checkArguments, SCHEMA_LIMITS, type JsonSchema } from '@toolport/core';
import { linearPattern, patternProblem, PATTERN_STEP_OVERHEAD } from '../packages/core/src/addons/schema';

const N = SCHEMA_LIMITS.patternInput;

/** Random text of `n` characters drawn from `alphabet`, from a seeded generator (the same each run). */
function texts(seed: number) {
  let x = seed >>> 0 || 1;
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32);
  return (n: number, alphabet: string) => Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
}

interface Case {
  name: string;
  pattern: string;
  /** One input per call (fresh ones, so the engine's state cache is not what is measured). */
  input: (i: number) => string;
}

/**
 * Candidates for the worst: each is accepted with `maxLength` 4,096, and each input defeats the
 * engine differently. The backtracking engine's worst (words that never end at `$`), random text
 * that keeps every thread of a large program alive, and a small pattern whose automaton has more
 * states than its cache holds (so it builds one per character).
 */
function cases(rand: ReturnType<typeof texts>): Case[] {
  return [
    { name: 'nested bounded repetition (issue #23), backtracking worst', pattern: '^(\\w{1,20}\\s?){1,20}$', input: () => 'a'.repeat(N - 1) + '!' },
    { name: 'nested bounded repetition (issue #23), random words', pattern: '^(\\w{1,20}\\s?){1,20}$', input: () => rand(N, 'ab ') },
    { name: 'overlapping alternatives, 120 times', pattern: '(?:a|b|aa|ab|ba){120}c', input: () => rand(N - 1, 'ab') + 'c' },
    { name: 'one or two of [ab], 220 times', pattern: '(?:[ab]|[ab][ab]){220}c', input: () => rand(N - 1, 'ab') + 'c' },
    { name: 'an a 760 characters from the end', pattern: '[ab]*a[ab]{760}c', input: () => rand(N - 1, 'ab') + 'c' },
    { name: 'an a 12 characters from the end (cache-defeating)', pattern: '[ab]*a[ab]{12}c', input: () => rand(N - 1, 'ab') + 'c' },
  ];
}
const TRIVIAL: Case = { name: 'trivial: ^[a-z0-9-]+$', pattern: '^[a-z0-9-]+$', input: (i) => (i % 2 ? 'a'.repeat(N) : 'a'.repeat(N - 1) + '!') };

const schemaOf = (pattern: string, maxItems = 1): JsonSchema => ({
  type: 'object',
  properties: { s: { type: 'array', maxItems, items: { type: 'string', maxLength: N, pattern } } },
  additionalProperties: false,
});

function time(schema: JsonSchema, argsOf: (i: number) => unknown, calls: number) {
  checkArguments(schema, argsOf(-1)); // compiled and warmed
  const ms: number[] = [];
  let refused = 0;
  for (let i = 0; i < calls; i++) {
    const args = argsOf(i);
    const t = performance.now();
    const r = checkArguments(schema, args);
    ms.push(performance.now() - t);
    if (!r.ok) refused++;
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
  return { calls, refused, p50: round(at(0.5)), p99: round(at(0.99)), max: round(ms[ms.length - 1]!) };
}
const round = (x: number) => Math.round(x * 1000) / 1000;

/** JavaScript's backtracking RegExp on the issue's pattern, at lengths it still finishes (context, not a goal). */
function backtracking() {
  const re = new RegExp('^(\\w{1,20}\\s?){1,20}$', 'u');
  const out: { characters: number; ms: number }[] = [];
  for (const n of [16, 18, 20, 22]) {
    const s = 'a'.repeat(n - 1) + '!';
    const t = performance.now();
    re.test(s);
    out.push({ characters: n, ms: round(performance.now() - t) });
  }
  return out;
}

export function measurePatterns(quick = false) {
  const started = performance.now();
  const calls = quick ? 10 : 40;
  const rand = texts(23);
  const rows = [];
  for (const c of [TRIVIAL, ...cases(rand)]) {
    const problem = patternProblem(c.pattern, N);
    if (problem) throw new Error(`${c.pattern} is not accepted at maxLength ${N}: ${problem}`);
    const { steps } = linearPattern(c.pattern).pattern;
    rows.push({ name: c.name, pattern: c.pattern, steps, ...time(schemaOf(c.pattern), (i) => ({ s: [c.input(i)] }), calls) });
  }
  const [trivial, ...rest] = rows;
  const worst = rest.reduce((a, b) => (b.p50 > a.p50 ? b : a));
  // A whole call at its budget: as many longest strings against the worst pattern as it may check.
  const perString = N * (worst.steps + PATTERN_STEP_OVERHEAD);
  const fit = Math.floor(ARGUMENT_LIMITS.patternSteps / perString);
  const worstCase = [TRIVIAL, ...cases(rand)].find((c) => c.pattern === worst.pattern && c.name === worst.name)!;
  const fullCall = {
    strings: fit,
    ...time(schemaOf(worst.pattern, fit + 1), (i) => ({ s: Array.from({ length: fit }, (_, k) => worstCase.input(i * fit + k)) }), Math.max(5, calls / 4)),
  };
  const result = {
    characters: N,
    budget: { perCheckSteps: SCHEMA_LIMITS.patternSteps, perCallSteps: ARGUMENT_LIMITS.patternSteps, stepOverhead: PATTERN_STEP_OVERHEAD },
    trivial: trivial!,
    cases: rest,
    worst: { name: worst.name, pattern: worst.pattern, p50: worst.p50, p99: worst.p99, ratioP50: round(worst.p50 / trivial!.p50), ratioP99: round(worst.p99 / trivial!.p99) },
    fullCall,
    backtracking: backtracking(),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
  return result;
}

/** The markdown section of the bench results. */
export function patternsMarkdown(p: ReturnType<typeof measurePatterns>): string[] {
  const lines = [
    '',
    `## Argument patterns: the worst allowed pattern at the longest allowed input (${p.characters.toLocaleString('en')} characters)`,
    '',
    `checkArguments in one process, one call per input (fresh inputs, so the engine's state cache is not what is measured); ms per call. Each pattern is accepted at \`maxLength\` ${p.characters}: its steps per character (program + ${p.budget.stepOverhead}) × ${p.characters} stay within ${p.budget.perCheckSteps.toLocaleString('en')}, and a call's pattern work within ${p.budget.perCallSteps.toLocaleString('en')}.`,
    '',
    '| pattern | input | steps | p50 ms | p99 ms | max ms | × trivial p50 |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of [p.trivial, ...p.cases]) {
    lines.push(`| \`${r.pattern}\` | ${r.name} | ${r.steps} | ${r.p50} | ${r.p99} | ${r.max} | ${round(r.p50 / p.trivial.p50)} |`);
  }
  lines.push(
    '',
    `A whole call at its budget (${p.fullCall.strings} strings of ${p.characters} characters against the worst, \`${p.worst.pattern}\`): p50 ${p.fullCall.p50} ms, p99 ${p.fullCall.p99} ms, max ${p.fullCall.max} ms.`,
    `JavaScript's backtracking RegExp on \`^(\\w{1,20}\\s?){1,20}$\` (what Ajv ran before), for context: ${p.backtracking.map((b) => `${b.characters} characters ${b.ms} ms`).join(', ')}; each 2 characters more costs about 3×, so ${p.characters.toLocaleString('en')} never ends.`,
  );
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const p = measurePatterns(process.argv.includes('--quick'));
  console.log(patternsMarkdown(p).join('\n'));
  console.log(`\n${JSON.stringify(p, null, 2)}`);
}
