import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ARGUMENT_LIMITS, checkArguments, checkManifest, SCHEMA_LIMITS, type JsonSchema, type ToolportError } from '@toolport/core';
import { linearPattern, patternLint, PATTERN_STEP_OVERHEAD } from '../packages/core/src/addons/schema';

/**
 * Patterns (issue #23): matched by a linear-time engine (re2js) with JavaScript's meaning, refused
 * at registration only for what that engine cannot run, and linted for backtracking engines.
 */
const PATHOLOGICAL = '^(\\w{1,20}\\s?){1,20}$';
const AT = '/tools/0/inputSchema/properties/a/pattern';

const manifestWith = (inputSchema: unknown) => ({
  id: 'patterns', name: 'Patterns', description: 'Patterns.', webhook: 'https://patterns.example.com/',
  tools: [{ name: 'tool', title: 'Tool', summary: 'Returns something.', inputSchema }],
});
const withPattern = (pattern: string, maxLength = 50): JsonSchema => ({
  type: 'object',
  properties: { a: { type: 'string', maxLength, pattern, description: 'A value.' } },
  additionalProperties: false,
});
function refusal(pattern: string, maxLength?: number) {
  try {
    checkManifest(manifestWith(withPattern(pattern, maxLength)));
  } catch (err) {
    return (err as ToolportError).details?.errors ?? [];
  }
  return assert.fail(`${pattern} was accepted`);
}
const accepted = (pattern: string, maxLength?: number) => checkManifest(manifestWith(withPattern(pattern, maxLength)));
const matches = (pattern: string, s: string) => checkArguments(withPattern(pattern, SCHEMA_LIMITS.patternInput), { a: s }).ok;

describe('patterns: registration', () => {
  it('refuses what linear-time matching cannot run, with a sentence at the pattern', () => {
    for (const [pattern, message] of [
      ['(?=a)\\w+', /lookahead or lookbehind/],
      ['(?!a)\\w+', /lookahead or lookbehind/],
      ['(?<=a)b', /lookahead or lookbehind/],
      ['(?<!a)b', /lookahead or lookbehind/],
      ['(a)\\1', /backreference/],
      ['(?<x>a)\\k<x>', /backreference/],
      ['(x{1,60}){1,60}y', /repetitions nested in each other multiply.*at most 1000/],
      ['((a{10}){10}){11}', /repetitions nested in each other multiply/],
      ['^[^<>]{0,2000}$', /repeats more than 1000 times \(`\{0,2000\}`\).*use `\*` or `\+` and let `maxLength` bound/],
      ['\\p{Emoji}', /Unicode property `\\p\{Emoji\}`/],
      ['\\p{Script=Grek}', /Unicode property.*full name/],
      ['(?:a{1000}){1}'.repeat(10), /too large for linear-time matching/],
      ['(', /not a valid regular expression/],
    ] as const) {
      const errors = refusal(pattern);
      assert.deepEqual(errors.map((e) => e.path), [AT], pattern);
      assert.match(errors[0]!.message, message, pattern);
      assert.ok(errors[0]!.message.startsWith(`The pattern ${JSON.stringify(pattern).slice(0, 37)}`), errors[0]!.message);
    }
  });

  it('refuses a pattern too costly for its maxLength, and says which maxLength it may have', () => {
    const [error] = refusal('(x{1,30}){1,30}y', SCHEMA_LIMITS.patternInput);
    assert.equal(error!.path, AT);
    const most = Number(/a `maxLength` of at most (\d+)/.exec(error!.message)?.[1]);
    const { steps } = linearPattern('(x{1,30}){1,30}y').pattern;
    assert.equal(most, Math.floor(SCHEMA_LIMITS.patternSteps / (steps + PATTERN_STEP_OVERHEAD)));
    assert.ok(accepted('(x{1,30}){1,30}y', most));
    refusal('(x{1,30}){1,30}y', most + 1);
  });

  it('reports a refused pattern inside a definition where it is written', () => {
    const schema = { type: 'object', properties: { a: { $ref: '#/$defs/A' } }, additionalProperties: false, $defs: { A: { type: 'string', maxLength: 5, pattern: '(?=x)' } } };
    assert.throws(() => checkManifest(manifestWith(schema)), (err: ToolportError) => {
      assert.deepEqual(err.details?.errors?.map((e) => e.path), ['/tools/0/inputSchema/$defs/A/pattern']);
      return true;
    });
  });

  it('accepts what backtracks elsewhere, with a lint warning at the pattern, and checks its worst input at the longest allowed length', () => {
    for (const pattern of ['^(a+)+$', '(x+x+)+y', PATHOLOGICAL]) {
      const { warnings } = accepted(pattern, SCHEMA_LIMITS.patternInput);
      const w = warnings.filter((x) => x.path === AT);
      assert.equal(w.length, 1, `${pattern}: ${JSON.stringify(warnings)}`);
      assert.match(w[0]!.message, /can backtrack catastrophically in backtracking engines.*Toolport matches it in linear time/);
    }
    // The inputs that take a backtracking engine forever, as long as allowed.
    assert.equal(matches(PATHOLOGICAL, 'a'.repeat(SCHEMA_LIMITS.patternInput - 1) + '!'), false);
    assert.equal(matches(PATHOLOGICAL, ('a'.repeat(19) + ' ').repeat(20).trimEnd()), true);
    assert.equal(matches('^(a+)+$', 'a'.repeat(SCHEMA_LIMITS.patternInput - 1) + 'b'), false);
    assert.equal(matches('(x+x+)+y', 'x'.repeat(SCHEMA_LIMITS.patternInput)), false);
    const most = Number(/at most (\d+)/.exec(refusal('(x{1,30}){1,30}y', SCHEMA_LIMITS.patternInput)[0]!.message)?.[1]);
    const nested = withPattern('(x{1,30}){1,30}y', most);
    assert.equal(checkArguments(nested, { a: 'x'.repeat(most) }).ok, false);
    assert.equal(checkArguments(nested, { a: 'x'.repeat(most - 1) + 'y' }).ok, true);
  });

  it('gives ordinary patterns no warning', () => {
    for (const pattern of ['^[a-z0-9-]+$', '\\d{4}-\\d{2}-\\d{2}', '^[a-z]+(-[a-z]+)*$', '^[a-z]{1,20}(-[a-z]{1,20}){0,5}$', '^\\p{Lu}\\p{Ll}+$', '^[0-9a-f]{8}-[0-9a-f]{4}$']) {
      assert.deepEqual(accepted(pattern).warnings.filter((w) => w.path === AT), [], pattern);
      assert.equal(patternLint(pattern, performance.now() + 60_000), null, pattern);
    }
  });
});

describe('patterns: the same verdicts as JavaScript', () => {
  const ORDINARY = [
    '^[a-z0-9-]+$', '\\d{4}-\\d{2}-\\d{2}', '^\\d{4}-\\d{2}-\\d{2}$', '^[A-Z]{3}$', '^\\p{L}+$', '^\\p{Lu}\\p{Ll}*$',
    '^[\\p{L}\\p{N}_-]{1,20}$', '^\\P{Cc}*$', '^.$', '^.+$', '^\\s+$', '^[^\\s]+$', '\\S', '^\\w+@\\w+\\.\\w{2,}$',
    '^\\u{1F600}$', '^\\uD83D\\uDE00$', '^[\\u0041-\\u005A]+$', '^\\x41\\cJ$', '\\bfoo\\b', '\\Bo', '^a|b$', '^(?:ab)*c?$',
    '^(?<year>\\d{4})$', '^[]$', '^[^]$', '^[\\b]$', '^[\\-a]$', '^\\/\\.\\*\\?\\$$', '^\\p{Script=Greek}+$', '^\\p{sc=Latin}+$',
    '^\\p{General_Category=Decimal_Number}$', '^\\p{Letter}$', '^\\p{ASCII}+$', '^[^\\P{ASCII}]$', '^\\P{Assigned}$', '^\\p{Any}$',
    '^a{0}b$', '^(a|)$', 'é', '^😀+$', '[😀-😂]', '^\\0$', '^[\\d\\s]+$', '^[\\D]$', '^[\\W]+$', '^a+?b??c*?$', '^\\t\\n\\v\\f\\r$',
  ];
  const SAMPLES = [
    '', 'a', 'abc', 'ABC', 'a-b', '2026-01-31', 'x2026-01-31y', 'é', 'e\u0301', 'Ωμέγα', 'Straße', '😀', '😀😁', '\u00a0', ' \t\n',
    '\u2028', '\r', '\n', 'foo', 'a foo b', 'afoo', 'foo.', 'a@b.cd', 'A\n', 'ab', 'ababc', 'c', '2026', '/.*?$', '\b', '-', 'b',
    '\u0085', '\ufeff', '\u180e', 'ǅ', '\u0378', '\u0000', '\t\n\v\f\r', 'AJ', 'A\n', 'ɐ', '١٢٣', 'Ω', 'x'.repeat(40),
  ];

  it('ordinary patterns give exactly the verdicts JavaScript gives, through the argument check', () => {
    for (const pattern of ORDINARY) {
      const js = new RegExp(pattern, 'u');
      assert.ok(accepted(pattern), pattern);
      for (const s of SAMPLES) {
        // The check normalises text to NFC first, as it did before.
        assert.equal(matches(pattern, s), js.test(s.normalize('NFC')), `${pattern} on ${JSON.stringify(s)}`);
      }
    }
  });

  it('random patterns and strings: the linear-time engine agrees with JavaScript\'s RegExp', () => {
    const chars = ['a', 'b', 'c', 'A', '-', ' ', '.', '1', '_', 'é', '😀', '\n', '\u00a0', 'Ω'];
    const atom = fc.constantFrom(
      'a', 'b', 'c', 'A', '1', '-', ' ', '\\.', 'é', '😀', '.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\p{L}', '\\P{L}',
      '\\p{Lu}', '\\p{Nd}', '[abc]', '[^a]', '[a-c]', '[\\d-]', '[\\s_]', '[^\\w]', '[\\p{L}\\d]', '\\u00e9', '\\u{1F600}', '\\x41', '[😀-😂]',
    );
    const quantifier = fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,2}', '{2,}', '*?', '+?');
    const pattern: fc.Arbitrary<string> = fc.letrec((tie) => ({
      term: fc.oneof(
        { weight: 5, arbitrary: fc.tuple(atom, quantifier).map(([a, q]) => a + q) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', '(?:'), tie('seq'), quantifier).map(([g, s, q]) => `${g}${s})${q}`) },
        // Not `\B`: V8 also finds it inside a surrogate pair (`/\B/u` matches "a😀a"); RE2 reads code points.
        { weight: 1, arbitrary: fc.constant('\\b') },
      ),
      seq: fc.array(tie('term'), { minLength: 1, maxLength: 4 }).map((t) => (t as string[]).join('')),
      alt: fc.array(tie('seq'), { minLength: 1, maxLength: 3 }).map((s) => (s as string[]).join('|')),
      top: fc.tuple(fc.boolean(), tie('alt'), fc.boolean()).map(([a, s, z]) => `${a ? '^' : ''}${s}${z ? '$' : ''}`),
    })).top as fc.Arbitrary<string>;
    const text = fc.array(fc.constantFrom(...chars), { maxLength: 10 }).map((c) => c.join(''));
    let matched = 0;
    let missed = 0;
    fc.assert(
      fc.property(pattern, fc.array(text, { minLength: 6, maxLength: 6 }), (p, inputs) => {
        const js = new RegExp(p, 'u');
        const ours = linearPattern(p).pattern;
        for (const s of inputs) {
          const expected = js.test(s);
          assert.equal(ours.test(s), expected, `${p} on ${JSON.stringify(s)} (RE2: ${ours.re2})`);
          if (expected) matched++;
          else missed++;
        }
      }),
      { numRuns: 400 },
    );
    // Both verdicts were exercised.
    assert.ok(matched > 200 && missed > 200, `matched ${matched}, missed ${missed}`);
  });

  it('Unicode categories and scripts mean what they mean to this Node (sampled code points)', () => {
    const names = ['L', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'M', 'Mn', 'Mc', 'Me', 'N', 'Nd', 'Nl', 'No', 'P', 'Pc', 'Pd', 'Ps', 'Pe', 'Pi', 'Pf', 'Po',
      'S', 'Sm', 'Sc', 'Sk', 'So', 'Z', 'Zs', 'Zl', 'Zp', 'C', 'Cc', 'Cf', 'Co', 'Cn', 'Script=Latin', 'Script=Greek', 'Script=Cyrillic',
      'Script=Han', 'Script=Arabic', 'Script=Hebrew', 'Script=Devanagari', 'Script=Hiragana', 'Script=Common', 'Script=Inherited'];
    for (const name of names) {
      const p = `^\\p{${name}}$`;
      const js = new RegExp(p, 'u');
      const ours = linearPattern(p).pattern;
      for (let cp = 0; cp <= 0x10ffff; cp += cp < 0x3400 ? 1 : 89) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const s = String.fromCodePoint(cp);
        if (ours.test(s) !== js.test(s)) assert.fail(`\\p{${name}} differs at U+${cp.toString(16).toUpperCase()}`);
      }
    }
  });
});

describe('patterns: the work of one call is bounded', () => {
  it('checks as many longest strings against the costliest pattern as the budget holds, and says so past it', () => {
    const { steps } = linearPattern(PATHOLOGICAL).pattern;
    const perString = SCHEMA_LIMITS.patternInput * (steps + PATTERN_STEP_OVERHEAD);
    // One check of the longest allowed string always fits in a call.
    assert.ok(perString <= SCHEMA_LIMITS.patternSteps && SCHEMA_LIMITS.patternSteps <= ARGUMENT_LIMITS.patternSteps);
    const fit = Math.floor(ARGUMENT_LIMITS.patternSteps / perString);
    const schema: JsonSchema = {
      type: 'object',
      properties: { a: { type: 'array', maxItems: fit + 1, items: { type: 'string', maxLength: SCHEMA_LIMITS.patternInput, pattern: PATHOLOGICAL } } },
      additionalProperties: false,
    };
    const worst = 'a'.repeat(SCHEMA_LIMITS.patternInput - 1) + '!';
    const within = checkArguments(schema, { a: Array(fit).fill(worst) });
    assert.deepEqual(within.ok ? [] : within.problems, Array.from({ length: fit }, (_, i) => `Argument \`a[${i}]\` must match the pattern \`${PATHOLOGICAL}\`.`));
    const past = checkArguments(schema, { a: Array(fit + 1).fill(worst) });
    assert.deepEqual(past.ok ? [] : past.problems, ["The arguments hold more text than this tool's patterns can check in one call; send fewer or shorter values."]);
    // The budget is the call's: the next call starts afresh.
    assert.equal(checkArguments(schema, { a: [('a'.repeat(19) + ' ').repeat(20).trimEnd()] }).ok, true);
  });
});
