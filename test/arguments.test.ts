import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  checkArguments,
  checkManifest,
  compileArguments,
  validatorFor,
  ToolportError,
  type ArgumentKind,
  type JsonSchema,
  type ManifestArgument,
} from '@toolport/core';

const schema = compileArguments([
  { name: 'query', summary: 'Words.', kind: { text: { maxLength: 10 } } },
  { name: 'limit', summary: 'How many.', kind: { number: { minimum: 1, maximum: 10, whole: true } }, required: false },
  { name: 'ratio', summary: 'A share.', kind: { number: { minimum: 0, maximum: 1 } }, required: false },
  { name: 'exact', summary: 'Exact match.', kind: 'boolean', required: false },
  { name: 'colour', summary: 'A colour.', kind: { choice: ['red', 'green', 'caf\u00e9'] }, required: false },
]);

const nested: JsonSchema = {
  type: 'object',
  properties: {
    filters: {
      type: 'object',
      properties: {
        tags: { type: 'array', maxItems: 3, items: { type: 'string', maxLength: 5 } },
        since: { type: 'string', maxLength: 40, format: 'date' },
        code: { type: 'string', maxLength: 10, pattern: '^[A-Z]{3}$' },
      },
      required: ['since'],
      additionalProperties: false,
    },
    pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, maxItems: 2 },
    step: { type: 'number', multipleOf: 5, exclusiveMaximum: 100 },
    note: { type: ['string', 'null'], maxLength: 3 },
  },
  additionalProperties: false,
};

const ok = (s: JsonSchema, args: unknown) => {
  const r = checkArguments(s, args);
  assert.ok(r.ok, JSON.stringify(r));
  return r.value;
};
const problems = (s: JsonSchema, args: unknown) => {
  const r = checkArguments(s, args);
  if (r.ok) assert.fail('accepted: ' + JSON.stringify(r.value));
  return r.problems;
};

describe('arguments: each kind', () => {
  it('accepts valid arguments of every kind and returns a fresh copy', () => {
    const args = { query: 'oat milk', limit: 3, ratio: 0.5, exact: false, colour: 'green' };
    const value = ok(schema, args);
    assert.deepEqual(value, args);
    assert.notEqual(value, args);
  });

  it('refuses unknown arguments, naming those the tool takes', () => {
    assert.deepEqual(problems(schema, { query: 'x', foo: 1 }), [
      'Unknown argument `foo`; this tool takes `query`, `limit`, `ratio`, `exact`, `colour`.',
    ]);
    const none = compileArguments([]);
    assert.deepEqual(problems(none, { foo: 1 }), ['Unknown argument `foo`; this tool takes no arguments.']);
  });

  it('refuses missing required arguments; undefined arguments are {}', () => {
    assert.deepEqual(problems(schema, {}), ['Missing required argument `query`.']);
    assert.deepEqual(problems(schema, undefined), ['Missing required argument `query`.']);
    assert.deepEqual(ok(compileArguments([]), undefined), {});
  });

  it('refuses arguments that are not an object', () => {
    assert.deepEqual(problems(schema, null), ['The arguments must be a JSON object of named arguments (got null).']);
    assert.deepEqual(problems(schema, ['x']), ['The arguments must be a JSON object of named arguments (got a list).']);
    assert.deepEqual(problems(schema, 'x'), ['The arguments must be a JSON object of named arguments (got text).']);
    assert.deepEqual(problems(schema, new Date()), ['The arguments must be a JSON object of named arguments (got an object).']);
  });

  it('refuses the wrong kind with one sentence per argument', () => {
    assert.deepEqual(problems(schema, { query: 5, limit: 'ten', exact: 'yes', colour: 3 }), [
      'Argument `query` must be text.',
      'Argument `limit` must be a whole number.',
      'Argument `exact` must be true or false.',
      'Argument `colour` must be text.',
    ]);
  });

  it('refuses text that is too long', () => {
    assert.deepEqual(problems(schema, { query: 'x'.repeat(25) }), ['Argument `query` is too long: at most 10 characters (got 25).']);
  });

  it('refuses numbers out of range or not whole', () => {
    assert.deepEqual(problems(schema, { query: 'x', limit: 11 }), ['Argument `limit` must be at most 10.']);
    assert.deepEqual(problems(schema, { query: 'x', limit: 0 }), ['Argument `limit` must be at least 1.']);
    assert.deepEqual(problems(schema, { query: 'x', limit: 2.5 }), ['Argument `limit` must be a whole number.']);
    assert.deepEqual(problems(schema, { query: 'x', ratio: 1.5 }), ['Argument `ratio` must be at most 1.']);
    assert.equal(ok(schema, { query: 'x', ratio: 0.25 }).ratio, 0.25);
  });

  it('refuses a value outside the choice', () => {
    assert.deepEqual(problems(schema, { query: 'x', colour: 'blue' }), ['Argument `colour` must be one of: red, green, caf\u00e9.']);
  });

  it('lists every problem, deduplicated, in a stable order', () => {
    const args = { query: 'x'.repeat(11), limit: 99, colour: 'blue', zzz: 1, aaa: 2 };
    const first = problems(schema, args);
    assert.deepEqual(first, [
      'Unknown argument `zzz`; this tool takes `query`, `limit`, `ratio`, `exact`, `colour`.',
      'Unknown argument `aaa`; this tool takes `query`, `limit`, `ratio`, `exact`, `colour`.',
      'Argument `query` is too long: at most 10 characters (got 11).',
      'Argument `limit` must be at most 10.',
      'Argument `colour` must be one of: red, green, caf\u00e9.',
    ]);
    assert.deepEqual(problems(schema, args), first);
    assert.equal(new Set(first).size, first.length);
  });

  it('caps a flood of problems with one closing sentence', () => {
    const flood = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    const ps = problems(schema, { query: 'x', ...flood });
    assert.equal(ps.length, 21);
    assert.equal(ps[20], '…and 30 more problems.');
  });
});

describe('arguments: nested schemas', () => {
  it('names nested arguments by path', () => {
    assert.deepEqual(problems(nested, { filters: { tags: ['a', 'b', 'toolong'], code: 'abc', extra: 1 } }), [
      'Missing required argument `filters.since`.',
      'Unknown argument `filters.extra`; `filters` takes `tags`, `since`, `code`.',
      'Argument `filters.tags[2]` is too long: at most 5 characters (got 7).',
      'Argument `filters.code` must match the pattern `^[A-Z]{3}$`.',
    ]);
  });

  it('explains formats, list bounds, multiples and exclusive bounds', () => {
    assert.deepEqual(problems(nested, {
      filters: { since: 'tomorrow', tags: ['a', 'b', 'c', 'd'] }, pair: [1, 2, 3], step: 100,
    }), [
      'Argument `filters.tags` has too many items: at most 3 (got 4).',
      'Argument `filters.since` must be a date such as 2026-01-31.',
      'Argument `pair` has too many items: at most 2 (got 3).',
      'Argument `pair` has too many items: at most 2.',
      'Argument `step` must be less than 100.',
    ]);
    assert.deepEqual(problems(nested, { step: 7 }), ['Argument `step` must be a multiple of 5.']);
    assert.deepEqual(problems(nested, { note: 5 }), ['Argument `note` must be text or null.']);
    assert.deepEqual(ok(nested, { filters: { since: '2026-01-31', code: 'ABC' }, pair: [1, 2], note: null }), {
      filters: { since: '2026-01-31', code: 'ABC' }, pair: [1, 2], note: null,
    });
  });

  it('quotes keys that are not identifiers', () => {
    assert.deepEqual(problems(schema, { query: 'x', 'a b': 1 })[0], 'Unknown argument `["a b"]`; this tool takes `query`, `limit`, `ratio`, `exact`, `colour`.');
  });
});

describe('arguments: text is normalised to NFC', () => {
  it('counts e + U+0301 as one character and returns it composed', () => {
    const one = compileArguments([{ name: 'c', summary: 'One letter.', kind: { text: { maxLength: 1 } } }]);
    const value = ok(one, { c: 'e\u0301' });
    assert.equal(value.c, '\u00e9');
    assert.deepEqual(problems(one, { c: 'e\u0301e\u0301' }), ['Argument `c` is too long: at most 1 characters (got 2).']);
  });

  it('matches a choice given in decomposed form', () => {
    assert.equal(ok(schema, { query: 'x', colour: 'cafe\u0301' }).colour, 'caf\u00e9');
  });

  it('normalises keys and nested strings too', () => {
    const s = compileArguments([{ name: 'q', summary: 'Q.', kind: { text: { maxLength: 5 } } }]);
    const r = checkArguments(nested, { filters: { since: '2026-01-31', tags: ['e\u0301'] } });
    assert.ok(r.ok);
    assert.deepEqual((r.value.filters as any).tags, ['\u00e9']);
    assert.deepEqual(problems(s, { q: 'a', ['cafe\u0301']: 1 }), ['Unknown argument `caf\u00e9`; this tool takes `q`.']);
  });

  it('refuses a key given twice in two Unicode forms', () => {
    const s: JsonSchema = { type: 'object', properties: { 'caf\u00e9': { type: 'boolean' } }, additionalProperties: false };
    assert.deepEqual(problems(s, { 'caf\u00e9': true, 'cafe\u0301': false }), [
      'Argument `caf\u00e9` is given twice (in two Unicode forms of the same name).',
    ]);
  });

  it('refuses lone surrogates in values and keys', () => {
    assert.deepEqual(problems(schema, { query: 'a\ud800' }), [
      'Argument `query` contains a lone UTF-16 surrogate, which is not valid Unicode; send valid text.',
    ]);
    assert.match(problems(schema, { query: 'a', ['\udc00']: 1 })[0]!, /argument name .* lone UTF-16 surrogate/);
    // A surrogate pair is one character, and fine.
    assert.equal(ok(schema, { query: '\ud83d\ude00' }).query, '\ud83d\ude00');
  });
});

describe('arguments: hostile values', () => {
  it('refuses __proto__ from JSON.parse without polluting Object.prototype', () => {
    const args = JSON.parse('{"query": "x", "__proto__": {"polluted": true}}');
    assert.deepEqual(problems(schema, args), [
      'Argument `__proto__` is not allowed: `__proto__`, `constructor` and `prototype` are never accepted as names.',
    ]);
    assert.equal(({} as any).polluted, undefined);
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
  });

  it('refuses constructor and prototype keys anywhere', () => {
    const ps = problems(nested, JSON.parse('{"filters": {"since": "2026-01-01", "constructor": {"prototype": 1}}, "prototype": 2}'));
    assert.deepEqual(ps, [
      'Argument `filters.constructor` is not allowed: `__proto__`, `constructor` and `prototype` are never accepted as names.',
      'Argument `prototype` is not allowed: `__proto__`, `constructor` and `prototype` are never accepted as names.',
    ]);
  });

  it('refuses non-finite numbers and unsafe integers', () => {
    assert.deepEqual(problems(schema, { query: 'x', ratio: NaN }), ['Argument `ratio` must be a finite number.', 'Argument `ratio` must be a number.']);
    assert.equal(problems(schema, { query: 'x', ratio: Infinity })[0], 'Argument `ratio` must be a finite number.');
    const big = compileArguments([{ name: 'n', summary: 'N.', kind: { number: {} } }]);
    assert.match(problems(big, { n: 2 ** 53 })[0]!, /^Argument `n` is too large to be exact/);
    assert.match(problems(big, JSON.parse('{"n": -12345678901234567890}'))[0]!, /too large to be exact/);
    assert.equal(ok(big, { n: Number.MAX_SAFE_INTEGER }).n, Number.MAX_SAFE_INTEGER);
    assert.match(problems(big, { n: 1e300 })[0]!, /too large to be exact/);
    assert.equal(ok(big, { n: 0.5 }).n, 0.5);
  });

  it('refuses values nested deeper than 16 levels', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.deepEqual(problems(schema, { query: deep }), ['The arguments are nested too deeply: at most 16 levels.']);
    let fifteen: unknown = 1;
    for (let i = 0; i < 15; i++) fifteen = { a: fifteen };
    const any: JsonSchema = { type: 'object', additionalProperties: true };
    // The arguments object is level 1: sixteen levels pass, seventeen do not.
    assert.ok(checkArguments(any, { a: fifteen }).ok);
    assert.deepEqual(problems(any, { a: { a: fifteen } }), ['The arguments are nested too deeply: at most 16 levels.']);
  });

  it('refuses more than 10,000 values and more than 256 KB', () => {
    assert.deepEqual(problems(schema, { query: new Array(20_000).fill(0) }), ['The arguments hold too many values: at most 10,000.']);
    assert.deepEqual(problems(schema, { query: 'x'.repeat(300 * 1024) }), ['The arguments are too large: at most 256 KB as JSON.']);
    assert.deepEqual(problems(schema, { query: new Array(100).fill('é'.repeat(1500)) }), ['The arguments are too large: at most 256 KB as JSON.']);
  });

  it('bounds format checks by length, so a long string never reaches a format expression', () => {
    const s: JsonSchema = {
      type: 'object',
      properties: { to: { type: 'string', maxLength: 1000, format: 'email' }, at: { type: 'string', maxLength: 100, format: 'date-time' } },
      additionalProperties: false,
    };
    assert.deepEqual(ok(s, { to: 'ada@example.com', at: '2026-01-31T09:30:00Z' }), { to: 'ada@example.com', at: '2026-01-31T09:30:00Z' });
    assert.deepEqual(problems(s, { to: 'a'.repeat(400) + '@example.com' }), ['Argument `to` must be an email address such as ada@example.com.']);
    const attack = '!@00' + '0.0-'.repeat(60_000) + '\x00';
    assert.deepEqual(problems(s, { to: attack }), [
      'Argument `to` is too long: at most 1000 characters (got 240005).',
      'Argument `to` must be an email address such as ada@example.com.',
    ]);
  });

  it('never runs a pattern on a string longer than 4096 characters', () => {
    const s: JsonSchema = { type: 'object', properties: { code: { type: 'string', maxLength: 10, pattern: '^a+$' } }, additionalProperties: false };
    assert.deepEqual(problems(s, { code: 'a'.repeat(5000) }), [
      'Argument `code` is too long: at most 10 characters (got 5000).',
      'Argument `code` must match the pattern `^a+$`.',
    ]);
    assert.deepEqual(problems(s, { code: 'a'.repeat(11) }), ['Argument `code` is too long: at most 10 characters (got 11).']);
  });

  it('refuses values that are not JSON', () => {
    assert.deepEqual(problems(schema, { query: 'x', exact: () => true }), [
      'Argument `exact` must be a JSON value.',
      'Argument `exact` must be true or false.',
    ]);
    assert.deepEqual(problems(schema, { query: 'x', exact: new Map() }), [
      'Argument `exact` must be a JSON value.',
      'Argument `exact` must be true or false.',
    ]);
  });
});

describe('arguments: validator cache', () => {
  it('compiles one validator per schema, found by object and by canonical text', () => {
    const a = compileArguments([{ name: 'q', summary: 'Q.', kind: { text: { maxLength: 7 } } }]);
    const v = validatorFor(a);
    assert.equal(validatorFor(a), v);
    const reordered = { additionalProperties: false, required: ['q'], properties: { q: { description: 'Q.', maxLength: 7, type: 'string' } }, type: 'object' };
    assert.equal(validatorFor(reordered), v);
    assert.notEqual(validatorFor({ ...a, required: [] }), v);
  });

  it('throws a VALIDATION error for a schema Ajv cannot compile', () => {
    assert.throws(() => checkArguments({ type: 'object', properties: { a: { type: 'nonsense' } } }, {}), { code: 'VALIDATION' });
  });
});

// ---------------------------------------------------------------------------------------------
// Property: compiled manifests and random inputs never throw, and agree with a plain oracle.

const CHOICES = ['red', 'green', 'caf\u00e9', 'cafe\u0301x', 'é'];
const kindArb: fc.Arbitrary<ArgumentKind> = fc.oneof(
  fc.integer({ min: 1, max: 12 }).map((maxLength) => ({ text: { maxLength } })),
  fc.record(
    { minimum: fc.integer({ min: -5, max: 0 }), maximum: fc.integer({ min: 0, max: 5 }), whole: fc.boolean() },
    { requiredKeys: [] },
  ).map((number) => ({ number })),
  fc.constant('boolean' as const),
  fc.uniqueArray(fc.constantFrom(...CHOICES), { minLength: 1, maxLength: 4 }).map((choice) => ({ choice })),
);
const NAMES = ['a', 'b', 'query', 'limit', 'colour'];
const argsArb: fc.Arbitrary<ManifestArgument[]> = fc.uniqueArray(
  fc.record({ name: fc.constantFrom(...NAMES), summary: fc.constant('Something to give.'), kind: kindArb, required: fc.boolean() }),
  { selector: (a) => a.name, maxLength: 5 },
);
const leaf = fc.oneof(
  fc.string({ maxLength: 14 }),
  fc.string({ maxLength: 6, unit: 'binary' }),
  fc.constantFrom(...CHOICES, 'e\u0301', '\ud800', ''),
  fc.integer({ min: -8, max: 8 }),
  fc.double(),
  fc.constantFrom(2 ** 53, -(2 ** 60), 0.5, NaN, Infinity),
  fc.boolean(),
  fc.constant(null),
);
const valueArb = fc.oneof(
  { weight: 5, arbitrary: leaf },
  { weight: 1, arbitrary: fc.array(leaf, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 3 }), leaf, { maxKeys: 3 }) },
);
/** Values near each kind's edges: lengths around maxLength, decomposed text, bounds, other choices. */
function nearKind(kind: ArgumentKind): fc.Arbitrary<unknown> {
  if (kind === 'boolean') return fc.boolean();
  if ('text' in kind) {
    const max = kind.text.maxLength;
    return fc.oneof(fc.string({ maxLength: max + 2 }), fc.constant('e\u0301'.repeat(max)), fc.constant('e\u0301'.repeat(max + 1)));
  }
  if ('choice' in kind) return fc.constantFrom(...kind.choice, ...CHOICES, 'blue');
  return fc.oneof(fc.integer({ min: -7, max: 7 }), fc.double({ min: -7, max: 7, noNaN: true }));
}
/** Mostly the tool's own arguments, near their edges; sometimes noise, extra or hostile keys. */
const inputFor = (args: ManifestArgument[]) => fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      Object.fromEntries(args.map((a) => [a.name, fc.oneof({ weight: 4, arbitrary: nearKind(a.kind) }, { weight: 1, arbitrary: valueArb })])),
      { requiredKeys: [] },
    ),
  },
  { weight: 2, arbitrary: fc.dictionary(fc.constantFrom(...NAMES, 'extra', '__proto__', 'constructor'), valueArb, { maxKeys: 6 }) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: valueArb },
);

const LONE = /\p{Surrogate}/u;
function valid(kind: ArgumentKind, v: unknown): boolean {
  if (kind === 'boolean') return typeof v === 'boolean';
  if ('text' in kind) return typeof v === 'string' && !LONE.test(v) && [...v.normalize('NFC')].length <= kind.text.maxLength;
  if ('choice' in kind) return typeof v === 'string' && !LONE.test(v) && kind.choice.map((c) => c.normalize('NFC')).includes(v.normalize('NFC'));
  if (typeof v !== 'number' || !Number.isFinite(v)) return false;
  if (Number.isInteger(v) && !Number.isSafeInteger(v)) return false;
  const { minimum, maximum, whole } = kind.number;
  return (!whole || Number.isInteger(v)) && (minimum === undefined || v >= minimum) && (maximum === undefined || v <= maximum);
}
/** What the contract says, written plainly. */
function oracle(args: ManifestArgument[], input: unknown): boolean {
  if (input === undefined) input = {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return false;
  const given = input as Record<string, unknown>;
  if (Object.keys(given).some((k) => !args.some((a) => a.name === k))) return false;
  return args.every((a) => (Object.hasOwn(given, a.name) ? valid(a.kind, given[a.name]) : a.required === false));
}

describe('arguments: property', () => {
  it('random manifests compile; random inputs never throw; the gate agrees with the contract', () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(argsArb.chain((args) => fc.tuple(fc.constant(args), inputFor(args))), ([args, input]) => {
        const { tools } = checkManifest({
          id: 'prop', name: 'Prop', description: 'Generated.', webhook: 'https://prop.example.com/',
          tools: [{ name: 'tool', title: 'Tool', summary: 'Returns something.', arguments: args }],
        });
        const r = checkArguments(tools[0]!.inputSchema, input);
        const expected = oracle(args, input);
        assert.equal(r.ok, expected, JSON.stringify(r));
        if (r.ok) accepted++;
        else refused++;
        if (r.ok) {
          for (const [k, v] of Object.entries(r.value)) if (typeof v === 'string') assert.equal(v, v.normalize('NFC'), k);
        } else {
          assert.ok(r.problems.length > 0 && r.problems.every((p) => typeof p === 'string' && p.length > 0));
        }
      }),
      { numRuns: 500 },
    );
    // Both sides of the gate were exercised, not just refusals.
    assert.ok(accepted > 50 && refused > 50, `accepted ${accepted}, refused ${refused}`);
  });
});

/** A manifest whose one tool takes `inputSchema`. */
const oneToolTaking = (inputSchema: unknown) => ({
  id: 'generated', name: 'Generated', description: 'Generated.', webhook: 'https://generated.example.com/',
  tools: [{ name: 'tool', title: 'Tool', summary: 'Returns something.', inputSchema }],
});

/** Toolport's verdict on each input, against the schema it wrote out, is Ajv's on the original; counts both verdicts. */
function sameVerdicts(reference: (v: unknown) => boolean, written: unknown, original: unknown, inputs: unknown[], tally: { accepted: number; refused: number }) {
  for (const given of inputs) {
    const ours = checkArguments(written as Parameters<typeof checkArguments>[0], given).ok;
    assert.equal(ours, reference(given), `${JSON.stringify(given)} against ${JSON.stringify(original)}`);
    if (ours) tally.accepted++;
    else tally.refused++;
  }
}

describe('arguments: a schema with $ref or a nullable anyOf means what it meant once written out', () => {
  it('random shared definitions and optional values: the written-out schema accepts exactly what Ajv accepts on the original', async () => {
    const { default: Ajv2020 } = await import('ajv/dist/2020.js');
    /** Leaves a definition can hold; definition i may refer only to later ones, so nothing recurses. */
    const leaf = fc.constantFrom<Record<string, unknown>>(
      { type: 'string', maxLength: 3 },
      { const: 'a' },
      { type: 'string', maxLength: 4, enum: ['a', 'abcd'] },
      { type: 'integer', minimum: 0, maximum: 5 },
      { type: 'boolean' },
      { enum: ['a', 'b'] },
      { type: ['string', 'null'], maxLength: 2 },
    );
    const names = ['D0', 'D1', 'D2', 'D3'];
    const refTo = (i: number) => fc.integer({ min: i + 1, max: names.length }).map((j) => (j < names.length ? { $ref: `#/$defs/${names[j]}` } : null));
    const plainMember = (i: number) => fc.oneof(leaf, refTo(i).map((r) => r ?? { type: 'boolean' }));
    // An optional value as Pydantic writes it: anyOf of the schema and null, in either order.
    const member = (i: number) =>
      fc.oneof(
        { weight: 3, arbitrary: plainMember(i) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(plainMember(i), fc.boolean(), fc.constantFrom('anyOf', 'oneOf'))
            .map(([m, first, key]) => ({ [key]: first ? [m, { type: 'null' }] : [{ type: 'null' }, m] })),
        },
      );
    const shape = (i: number) =>
      fc.oneof(
        leaf,
        fc.record({ a: member(i), b: member(i), req: fc.boolean() }).map(({ a, b, req }) => ({
          type: 'object', properties: { a, b }, required: req ? ['a'] : [], additionalProperties: false,
        })),
        member(i).map((items) => ({ type: 'array', maxItems: 2, items })),
      );
    const schemaArb = fc
      .tuple(fc.tuple(...names.map((_, i) => shape(i))), member(-1), member(-1), fc.boolean())
      .map(([defs, x, y, annotate]: [Record<string, unknown>[], Record<string, unknown>, Record<string, unknown>, boolean]) => ({
        type: 'object',
        properties: { x: annotate && '$ref' in x ? { ...x, description: 'Annotated.' } : x, y },
        additionalProperties: false,
        $defs: Object.fromEntries(names.map((n, i) => [n, defs[i]])),
      }));
    const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom('a', 'b', 'abcd', '', 0, 3, 7, -1, 1.5, true, null, null),
        fc.array(tie('v'), { maxLength: 3 }),
        fc.record({ a: tie('v'), b: tie('v') }, { requiredKeys: [] }),
      ),
    })).v;
    const input = fc.record({ x: value, y: value }, { requiredKeys: [] });

    const ajv = new Ajv2020({ strict: false, allErrors: false });
    const tally = { accepted: 0, refused: 0 };
    let oneOfRefused = 0;
    fc.assert(
      fc.property(schemaArb, fc.array(input, { minLength: 8, maxLength: 8 }), (original, inputs) => {
        let tools;
        try {
          ({ tools } = checkManifest(oneToolTaking(original)));
        } catch (err) {
          // Only "exactly one of X or null" where X takes null itself is refused: it is no optional X.
          const paths = (err as ToolportError).details?.errors?.map((e) => e.path) ?? [String(err)];
          assert.ok(paths.every((p) => p.endsWith('/oneOf')), JSON.stringify(paths));
          oneOfRefused++;
          return;
        }
        const written = tools[0]!.inputSchema;
        assert.equal(JSON.stringify(written).includes('$ref'), false);
        assert.equal(/"(anyOf|oneOf)"/.test(JSON.stringify(written)), false);
        sameVerdicts(ajv.compile(structuredClone(original)), written, original, inputs, tally);
      }),
      { numRuns: 300 },
    );
    // Both sides of the gate were exercised, not just refusals.
    assert.ok(tally.accepted > 50 && tally.refused > 50, JSON.stringify(tally));
    assert.ok(oneOfRefused < 150, `most schemas were taken (${oneOfRefused} of 300 refused)`);
  });

  it('random draft-07 schemas: the 2020-12 rewrite accepts exactly what Ajv accepts on the draft-07 original', async () => {
    const { default: Ajv } = await import('ajv');
    const plain = fc.constantFrom<Record<string, unknown>>(
      { type: 'string', maxLength: 3 },
      { type: 'integer', minimum: 0, maximum: 5 },
      { type: 'boolean' },
      { enum: ['a', 1] },
    );
    // P, the one definition, is used through `#/definitions/P` anywhere but in itself.
    const leaf = fc.oneof(plain, fc.constant({ $ref: '#/definitions/P' }));
    // A tuple as draft-07 writes it: a list of items, then additionalItems, or a maxItems that fills it.
    const tupleOf = (leaf: fc.Arbitrary<Record<string, unknown>>) => fc
      .tuple(fc.array(leaf, { minLength: 1, maxLength: 3 }), fc.oneof(fc.constant(undefined), fc.constant(false), leaf), fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 2 }))
      .map(([items, rest, max, min]) => {
        const maxItems = rest === undefined ? Math.min(max, items.length) : max;
        return { type: 'array', items, ...(rest === undefined ? {} : { additionalItems: rest }), maxItems, ...(min ? { minItems: Math.min(min, maxItems) } : {}) };
      });
    // additionalItems beside a single items schema means nothing in draft-07.
    const plainArray = fc.tuple(leaf, fc.oneof(fc.constant(false), leaf)).map(([items, rest]) => ({ type: 'array', maxItems: 3, items, additionalItems: rest }));
    const member = fc.oneof(leaf, tupleOf(leaf), plainArray);
    const schemaArb = fc.tuple(member, member, fc.oneof(plain, tupleOf(plain))).map(([x, y, p]) => ({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { x, y },
      additionalProperties: false,
      definitions: { P: p },
    }));
    const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.constantFrom('a', 'abcd', 0, 3, 7, 1, true, null), fc.array(tie('v'), { maxLength: 4 })),
    })).v;
    const input = fc.record({ x: value, y: value }, { requiredKeys: [] });

    const ajv = new Ajv({ strict: false });
    const tally = { accepted: 0, refused: 0 };
    fc.assert(
      fc.property(schemaArb, fc.array(input, { minLength: 8, maxLength: 8 }), (original, inputs) => {
        const written = checkManifest(oneToolTaking(original)).tools[0]!.inputSchema;
        assert.equal(/"(\$ref|definitions|additionalItems)"/.test(JSON.stringify(written)), false);
        sameVerdicts(ajv.compile(structuredClone(original)), written, original, inputs, tally);
      }),
      { numRuns: 300 },
    );
    assert.ok(tally.accepted > 50 && tally.refused > 50, JSON.stringify(tally));
  });
});
