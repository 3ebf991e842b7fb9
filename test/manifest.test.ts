import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { checkArguments, checkManifest, compileArguments, lintManifest } from '@toolport/core';
import { conservativePatternProblem, patternCheckerIsRecheck, patternLint } from '../packages/core/src/addons/schema';
import { notesManifestOf } from './helpers/addon-server';
import { manifestProblems as refused } from './helpers/manifest';

/** The DESIGN.md Notes example, fresh each time. */
const notes = (): any => notesManifestOf(['search_notes', 'delete_note']);

/** A manifest with one tool, changed by `edit`. */
const oneTool = (edit: (tool: any, m: any) => void = () => {}) => {
  const m = notes();
  m.tools = [m.tools[0]];
  edit(m.tools[0], m);
  return m;
};
const withArg = (arg: any) => oneTool((t) => { t.arguments = [{ name: 'x', summary: 'The thing to use.', ...arg }]; });
const withSchema = (schema: unknown) => oneTool((t) => { delete t.arguments; t.inputSchema = schema; });
const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties, additionalProperties: false });


/** Refused with exactly one problem, at `path`, whose message matches. */
function refusedAt(input: unknown, path: string, message: RegExp) {
  const errors = refused(input);
  assert.deepEqual(errors.map((e) => e.path), [path], JSON.stringify(errors));
  assert.match(errors[0]!.message, message);
}

const warningsOf = (m: unknown) => checkManifest(m).warnings;

describe('manifest: accepted and normalised', () => {
  it('accepts the DESIGN.md Notes example, without warnings, and compiles its arguments', () => {
    const { manifest, tools, warnings } = checkManifest(notes());
    assert.deepEqual(warnings, []);
    assert.equal(manifest.visibility, 'private');
    assert.equal(manifest.tools[1]!.arguments![0]!.required, true);
    assert.deepEqual(tools.map((t) => [t.name, t.destructive, t.readOnly, t.confirm]), [
      ['search_notes', false, false, false],
      ['delete_note', true, false, true],
    ]);
    assert.deepEqual(tools[0]!.inputSchema, {
      type: 'object',
      properties: { query: { type: 'string', maxLength: 200, description: 'Words to look for.' } },
      required: [],
      additionalProperties: false,
    });
    assert.deepEqual(tools[1]!.inputSchema.required, ['id']);
  });

  it('compiles every kind to JSON Schema 2020-12', () => {
    assert.deepEqual(compileArguments([
      { name: 't', summary: 'Text.', kind: { text: { maxLength: 5 } } },
      { name: 'n', summary: '', kind: { number: { minimum: 1, maximum: 10, whole: true } } },
      { name: 'f', summary: 'Fraction.', kind: { number: { minimum: 0 } }, required: false },
      { name: 'b', summary: 'Flag.', kind: 'boolean' },
      { name: 'c', summary: 'Colour.', kind: { choice: ['red', 'green'] } },
    ]), {
      type: 'object',
      properties: {
        t: { type: 'string', maxLength: 5, description: 'Text.' },
        n: { type: 'integer', minimum: 1, maximum: 10 },
        f: { type: 'number', minimum: 0, description: 'Fraction.' },
        b: { type: 'boolean', description: 'Flag.' },
        c: { type: 'string', enum: ['red', 'green'], description: 'Colour.' },
      },
      required: ['t', 'n', 'b', 'c'],
      additionalProperties: false,
    });
  });

  it('normalises text to NFC and trims it, keeps visibility, canonicalises the webhook', () => {
    const m = oneTool((t, m) => {
      t.title = '  Cafe\u0301 search ';
      m.visibility = 'public';
      m.webhook = 'https://NOTES.example.com:443/toolport';
    });
    const { manifest } = checkManifest(m);
    assert.equal(manifest.tools[0]!.title, 'Caf\u00e9 search');
    assert.equal(manifest.visibility, 'public');
    assert.equal(manifest.webhook, 'https://notes.example.com/toolport');
  });

  it('accepts a tool without arguments as taking none', () => {
    const { tools } = checkManifest(oneTool((t) => { delete t.arguments; }));
    assert.deepEqual(tools[0]!.inputSchema, { type: 'object', properties: {}, required: [], additionalProperties: false });
  });
});

describe('manifest: every violation, with its path', () => {
  it('refuses what is not an object at the root', () => {
    refusedAt([], '', /must be a JSON object/);
    refusedAt('notes', '', /must be a JSON object/);
  });

  it('lists every violation at once', () => {
    const m = notes();
    m.id = 'Notes';
    m.name = '';
    m.webhook = 'ftp://x.example.com/';
    m.tools[0].name = 'Search';
    m.tools[1].arguments[0].kind = { text: { maxLength: 0 } };
    const errors = refused(m);
    assert.deepEqual(errors.map((e) => e.path), [
      '/id', '/name', '/webhook', '/tools/0/name', '/tools/1/arguments/0/kind/text/maxLength',
    ]);
  });

  it('refuses add-on ids outside ^[a-z][a-z0-9-]{1,29}$', () => {
    for (const id of ['N', 'a', 'Notes', '1notes', 'no_tes', 'a'.repeat(31), 42]) {
      refusedAt({ ...notes(), id }, '/id', /add-on id/);
    }
    assert.equal(checkManifest({ ...notes(), id: 'a' + '-'.repeat(29) }).manifest.id.length, 30);
  });

  it('refuses a missing, empty or over-long name', () => {
    refusedAt({ ...notes(), name: '' }, '/name', /must not be empty/);
    refusedAt({ ...notes(), name: 'n'.repeat(61) }, '/name', /at most 60 characters \(got 61\)/);
    const m = notes();
    delete m.name;
    refusedAt(m, '/name', /missing/);
  });

  it('refuses a description over 300 characters', () => {
    refusedAt({ ...notes(), description: 'd'.repeat(301) }, '/description', /at most 300 characters \(got 301\)/);
    assert.ok(checkManifest({ ...notes(), description: 'd'.repeat(300) }));
  });

  it('refuses a webhook that is not an absolute http(s) URL without credentials or fragment', () => {
    refusedAt({ ...notes(), webhook: 'notes.example.com/x' }, '/webhook', /absolute http\(s\) URL/);
    refusedAt({ ...notes(), webhook: 'ftp://notes.example.com/x' }, '/webhook', /must use https or http/);
    refusedAt({ ...notes(), webhook: 'https://u:p@notes.example.com/x' }, '/webhook', /credentials/);
    refusedAt({ ...notes(), webhook: 'https://notes.example.com/x#frag' }, '/webhook', /fragment/);
    refusedAt({ ...notes(), webhook: 'https://notes.example.com/ x' }, '/webhook', /spaces/);
    refusedAt({ ...notes(), webhook: 'https://notes.example.com/' + 'x'.repeat(2048) }, '/webhook', /at most 2048/);
  });

  it('refuses a visibility other than private or public', () => {
    refusedAt({ ...notes(), visibility: 'everyone' }, '/visibility', /"private" or "public"/);
  });

  it('needs 1 to 16 tools', () => {
    refusedAt({ ...notes(), tools: [] }, '/tools', /at least one tool/);
    refusedAt({ ...notes(), tools: {} }, '/tools', /must be a list/);
    const many = Array.from({ length: 17 }, (_, i) => ({ ...notes().tools[0], name: `tool_${i}` }));
    refusedAt({ ...notes(), tools: many }, '/tools', /at most 16 tools \(got 17\)/);
  });

  it('refuses tool names outside ^[a-z][a-z0-9_]{0,31}$', () => {
    for (const name of ['Search', '_x', 'search-notes', 'a'.repeat(33), '']) {
      refusedAt(oneTool((t) => { t.name = name; }), '/tools/0/name', /tool name/);
    }
  });

  it('refuses a tool name used twice', () => {
    const m = notes();
    m.tools[1].name = 'search_notes';
    refusedAt(m, '/tools/1/name', /already used by \/tools\/0/);
  });

  it('refuses titles over 60 and summaries over 300 characters, or empty', () => {
    refusedAt(oneTool((t) => { t.title = 't'.repeat(61); }), '/tools/0/title', /at most 60 characters/);
    refusedAt(oneTool((t) => { t.summary = 's'.repeat(301); }), '/tools/0/summary', /at most 300 characters/);
    refusedAt(oneTool((t) => { t.summary = '   '; }), '/tools/0/summary', /must not be empty/);
  });

  it('refuses control characters and lone surrogates in text', () => {
    refusedAt(oneTool((t) => { t.title = 'Search\u0007'; }), '/tools/0/title', /control character U\+0007/);
    refusedAt(oneTool((t) => { t.title = 'Search\u202e'; }), '/tools/0/title', /contains U\+202E \(a bidi control\)/);
    refusedAt(oneTool((t) => { t.summary = 'Returns \ud800 notes.'; }), '/tools/0/summary', /lone UTF-16 surrogate/);
    // Newlines are fine in prose, not in a title.
    assert.ok(checkManifest(oneTool((t) => { t.summary = 'Finds notes.\nReturns their ids.'; })));
    refusedAt(oneTool((t) => { t.title = 'Search\nnotes'; }), '/tools/0/title', /control character U\+000A/);
  });

  it('refuses more than 10 arguments per tool', () => {
    const args = Array.from({ length: 11 }, (_, i) => ({ name: `a${i}`, summary: 'An arg.', kind: 'boolean' }));
    refusedAt(oneTool((t) => { t.arguments = args; }), '/tools/0/arguments', /at most 10 arguments \(got 11\)/);
  });

  it('refuses bad, reserved and repeated argument names', () => {
    refusedAt(withArg({ name: '1st', kind: 'boolean' }), '/tools/0/arguments/0/name', /argument name/);
    refusedAt(withArg({ name: 'a-b', kind: 'boolean' }), '/tools/0/arguments/0/name', /argument name/);
    refusedAt(withArg({ name: 'constructor', kind: 'boolean' }), '/tools/0/arguments/0/name', /prototype/);
    refusedAt(withArg({ name: 'prototype', kind: 'boolean' }), '/tools/0/arguments/0/name', /prototype/);
    const proto = JSON.parse('{"name": "__proto__", "summary": "P.", "kind": "boolean"}');
    refusedAt(oneTool((t) => { t.arguments = [proto]; }), '/tools/0/arguments/0/name', /argument name/);
    refusedAt(oneTool((t) => {
      t.arguments = [{ name: 'q', summary: 'Q.', kind: 'boolean' }, { name: 'q', summary: 'Q again.', kind: 'boolean' }];
    }), '/tools/0/arguments/1/name', /already used by \/tools\/0\/arguments\/0/);
  });

  it('refuses a text kind without a whole maxLength from 1 to 65536', () => {
    for (const maxLength of [0, 65_537, 1.5, '10', -1]) {
      refusedAt(withArg({ kind: { text: { maxLength } } }), '/tools/0/arguments/0/kind/text/maxLength', /whole number from 1 to 65536/);
    }
    refusedAt(withArg({ kind: { text: {} } }), '/tools/0/arguments/0/kind/text/maxLength', /needs `maxLength`/);
    refusedAt(withArg({ kind: 'text' }), '/tools/0/arguments/0/kind', /needs its settings/);
    assert.ok(checkManifest(withArg({ kind: { text: { maxLength: 65_536 } } })));
  });

  it('refuses a number kind with non-finite bounds, minimum above maximum, or a non-boolean whole', () => {
    refusedAt(withArg({ kind: { number: { minimum: 5, maximum: 1 } } }), '/tools/0/arguments/0/kind/number/minimum', /greater than `maximum`/);
    refusedAt(withArg({ kind: { number: { maximum: Infinity } } }), '/tools/0/arguments/0/kind/number/maximum', /finite number/);
    refusedAt(withArg({ kind: { number: { minimum: '1' } } }), '/tools/0/arguments/0/kind/number/minimum', /finite number/);
    refusedAt(withArg({ kind: { number: { whole: 'yes' } } }), '/tools/0/arguments/0/kind/number/whole', /true or false/);
    assert.ok(checkManifest(withArg({ kind: { number: { minimum: 1, maximum: 1, whole: true } } })));
  });

  it('refuses a choice that is not 1 to 100 distinct non-empty strings', () => {
    refusedAt(withArg({ kind: { choice: [] } }), '/tools/0/arguments/0/kind/choice', /1 to 100/);
    refusedAt(withArg({ kind: { choice: Array.from({ length: 101 }, (_, i) => `c${i}`) } }), '/tools/0/arguments/0/kind/choice', /got 101/);
    refusedAt(withArg({ kind: { choice: ['red', 'red'] } }), '/tools/0/arguments/0/kind/choice/1', /listed twice/);
    // The same text in two Unicode forms is the same choice.
    refusedAt(withArg({ kind: { choice: ['caf\u00e9', 'cafe\u0301'] } }), '/tools/0/arguments/0/kind/choice/1', /listed twice/);
    refusedAt(withArg({ kind: { choice: ['red', ''] } }), '/tools/0/arguments/0/kind/choice/1', /not be empty/);
    refusedAt(withArg({ kind: { choice: ['red', 3] } }), '/tools/0/arguments/0/kind/choice/1', /must be a string/);
  });

  it('refuses unknown kinds, naming the one meant', () => {
    refusedAt(withArg({ kind: { string: { maxLength: 3 } } }), '/tools/0/arguments/0/kind/string', /did you mean \{"text"/);
    refusedAt(withArg({ kind: 'integer' }), '/tools/0/arguments/0/kind', /did you mean \{"number": \{"whole": true\}\}/);
    refusedAt(withArg({ kind: { text: { maxLength: 3 }, number: {} } }), '/tools/0/arguments/0/kind', /exactly one of/);
    refusedAt(withArg({}), '/tools/0/arguments/0/kind', /missing/);
  });

  it('refuses non-boolean required, destructive, readOnly and confirm', () => {
    refusedAt(withArg({ kind: 'boolean', required: 'no' }), '/tools/0/arguments/0/required', /true or false/);
    for (const key of ['destructive', 'readOnly', 'confirm']) {
      refusedAt(oneTool((t) => { t[key] = 1; }), `/tools/0/${key}`, /true or false/);
    }
  });

  it('refuses a tool both destructive and readOnly', () => {
    refusedAt(oneTool((t) => { t.destructive = true; t.readOnly = true; }), '/tools/0/readOnly', /both `destructive` and `readOnly`/);
  });

  it('refuses a tool giving both arguments and inputSchema', () => {
    refusedAt(oneTool((t) => { t.inputSchema = obj({}); }), '/tools/0/inputSchema', /either `arguments` or `inputSchema`/);
  });

  it('refuses unknown keys with their path, suggesting the key meant', () => {
    refusedAt({ ...notes(), tool: [] }, '/tool', /did you mean `tools`/);
    refusedAt(oneTool((t) => { t.destrutive = true; }), '/tools/0/destrutive', /did you mean `destructive`/);
    refusedAt(withArg({ kind: 'boolean', optional: true }), '/tools/0/arguments/0/optional', /Unknown key `optional` in an argument/);
    refusedAt(withArg({ kind: { text: { maxLength: 5, minLength: 1 } } }), '/tools/0/arguments/0/kind/text/minLength', /text kind/);
    refusedAt(oneTool((t) => { t['a/b'] = 1; }), '/tools/0/a~1b', /Unknown key/);
  });
});

/** Far enough that a loaded test machine never turns an analysis into a timeout. */
const patient = () => performance.now() + 60_000;

describe('manifest: raw inputSchema', () => {
  const textProp = { type: 'string', maxLength: 50, description: 'A text.' };
  // Lint verdicts are cached per pattern: analyse these without a deadline first.
  before(() => {
    for (const p of ['^[a-z]+(-[a-z]+)*$', '^(a+)+$']) patternLint(p, patient());
  });

  it('accepts a bounded nested schema and keeps it as given', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        filters: {
          type: 'object',
          description: 'What to match.',
          properties: {
            tags: { type: 'array', maxItems: 5, items: { type: 'string', maxLength: 20, pattern: '^[a-z]+(-[a-z]+)*$' } },
            since: { type: 'string', maxLength: 40, format: 'date-time' },
            kind: { enum: ['a', 'b'] },
          },
          required: ['tags'],
          additionalProperties: false,
        },
        limit: { type: 'integer', minimum: 1, maximum: 100, description: 'How many.' },
        note: { type: ['string', 'null'], maxLength: 10, description: 'A note.' },
        pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, maxItems: 2, description: 'x, y.' },
      },
      required: ['filters'],
      additionalProperties: false,
    };
    const { tools } = checkManifest(withSchema(schema));
    assert.deepEqual(tools[0]!.inputSchema, schema);
  });

  it('needs an object schema with type object at the top', () => {
    refusedAt(withSchema({ type: 'string', maxLength: 3 }), '/tools/0/inputSchema/type', /top level/);
    refusedAt(withSchema('object'), '/tools/0/inputSchema', /JSON object/);
  });

  it('refuses a remote $ref', () => {
    refusedAt(withSchema(obj({ a: { $ref: 'https://evil.example.com/s.json' } })), '/tools/0/inputSchema/properties/a/$ref', /Remote `\$ref`/);
  });

  it('refuses recursion through $ref and $dynamicRef', () => {
    refusedAt(withSchema(obj({ a: { $ref: '#' } })), '/tools/0/inputSchema/properties/a/$ref', /recurse/);
    refusedAt(withSchema(obj({ a: { $dynamicRef: '#node' } })), '/tools/0/inputSchema/properties/a/$dynamicRef', /recursion/);
    // A tree node that contains itself, and two definitions that contain each other.
    const node = { type: 'object', properties: { child: { $ref: '#/$defs/Node' } }, additionalProperties: false };
    refusedAt(withSchema({ ...obj({ root: { $ref: '#/$defs/Node' } }), $defs: { Node: node } }), '/tools/0/inputSchema/$defs/Node/properties/child/$ref', /recurse without bound/);
    const a = { type: 'object', properties: { b: { $ref: '#/$defs/B' } }, additionalProperties: false };
    const b = { type: 'object', properties: { a: { $ref: '#/$defs/A' } }, additionalProperties: false };
    refusedAt(withSchema({ ...obj({ x: { $ref: '#/$defs/A' } }), $defs: { A: a, B: b } }), '/tools/0/inputSchema/$defs/B/properties/a/$ref', /recurse/);
    // A reference to an enclosing property, and a chain of bare references.
    refusedAt(withSchema(obj({ a: { ...obj({ b: { $ref: '#/properties/a' } }) } })), '/tools/0/inputSchema/properties/a/properties/b/$ref', /recurse/);
    refusedAt(withSchema({ ...obj({ x: { $ref: '#/$defs/P' } }), $defs: { P: { $ref: '#/$defs/Q' }, Q: { $ref: '#/$defs/P' } } }), '/tools/0/inputSchema/$defs/Q/$ref', /recurse/);
  });

  describe('local $ref', () => {
    const address = {
      type: 'object',
      description: 'A postal address.',
      properties: { street: { type: 'string', maxLength: 100, description: 'Street and number.' }, city: { type: 'string', maxLength: 60, description: 'City.' } },
      required: ['city'],
      additionalProperties: false,
    };
    /** The shape Pydantic v2 and zod 4 write: shared models under `$defs`, annotations beside `$ref`. */
    const generated = (defs: Record<string, unknown> = { Address: address }) => ({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        home: { $ref: '#/$defs/Address', description: 'Where you live.' },
        work: { $ref: '#/$defs/Address' },
        stops: { type: 'array', maxItems: 5, items: { $ref: '#/$defs/Address' }, description: 'On the way.' },
      },
      required: ['home'],
      additionalProperties: false,
      $defs: defs,
    });

    it('writes references out: what is enforced and listed has no $ref and no $defs', () => {
      const { tools } = checkManifest(withSchema(generated()));
      const schema = tools[0]!.inputSchema as any;
      assert.equal(JSON.stringify(schema).includes('$ref'), false);
      assert.equal('$defs' in schema, false);
      assert.deepEqual(schema.properties.work, address);
      assert.deepEqual(schema.properties.stops.items, address);
      // An annotation beside the reference wins over the referenced schema's own.
      assert.deepEqual(schema.properties.home, { ...address, description: 'Where you live.' });
      assert.equal(address.description, 'A postal address.', 'the input is not changed');
      const ok = checkArguments(schema, { home: { city: 'Lyon' }, stops: [{ city: 'Dijon', street: '1 rue X' }] });
      assert.ok(ok.ok, JSON.stringify(ok));
      const bad = checkArguments(schema, { home: { city: 'Lyon', zip: '69001' }, stops: [{ street: 'x' }] });
      assert.equal(bad.ok, false);
    });

    it('reports a problem inside a shared definition once, where it is written', () => {
      const broken = { ...address, properties: { ...address.properties, street: { type: 'string', description: 'Street.' } } };
      refusedAt(withSchema(generated({ Address: broken })), '/tools/0/inputSchema/$defs/Address/properties/street', /must have a `maxLength`/);
    });

    it('counts the properties and depth of the written-out schema', () => {
      const props = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p${i}`, { type: 'boolean' }]));
      const wide = { type: 'object', properties: props, additionalProperties: false };
      refusedAt(
        withSchema({ ...obj({ a: { $ref: '#/$defs/W' }, b: { $ref: '#/$defs/W' }, c: { $ref: '#/$defs/W' }, d: { $ref: '#/$defs/W' } }), $defs: { W: wide } }),
        '/tools/0/inputSchema',
        /too many properties: at most 100 in all \(got 124\)/,
      );
      // Ten levels of definitions, each holding the next twice: 2^10 copies once written out.
      const defs: Record<string, unknown> = { L10: { type: 'boolean' } };
      for (let i = 9; i >= 0; i--) defs[`L${i}`] = obj({ x: { $ref: `#/$defs/L${i + 1}` }, y: { $ref: `#/$defs/L${i + 1}` } });
      const errors = refused(withSchema({ ...obj({ top: { $ref: '#/$defs/L0' } }), $defs: defs }));
      assert.ok(errors.some((e) => /nests too deeply/.test(e.message)), JSON.stringify(errors));
      assert.ok(errors.length < 20, `each problem once, not once per copy: ${errors.length}`);
    });

    it('refuses a reference that grows too large once written out', () => {
      // Eight levels, each holding the next ten times: far past any legal schema, and never built whole.
      const defs: Record<string, unknown> = { L7: { type: 'boolean' } };
      for (let i = 6; i >= 0; i--) {
        defs[`L${i}`] = obj(Object.fromEntries(Array.from({ length: 10 }, (_, j) => [`p${j}`, { $ref: `#/$defs/L${i + 1}` }])));
      }
      const started = performance.now();
      refusedAt(withSchema({ ...obj({ top: { $ref: '#/$defs/L0' } }), $defs: defs }), '/tools/0/inputSchema', /too large once its `\$ref`s are written out/);
      // A 50 KB definition used a hundred times: refused before 5 MB of copies are made.
      const big = { type: 'string', enum: Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(490, 'x')) };
      refusedAt(
        withSchema({ ...obj(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, { $ref: '#/$defs/Big' }]))), $defs: { Big: big } }),
        '/tools/0/inputSchema',
        /too large once its `\$ref`s are written out: at most 64 KB of JSON/,
      );
      // Writing out the first one (10^7 copies) would take minutes: a generous bound tells it apart.
      assert.ok(performance.now() - started < 20_000);
    });

    it('refuses what it cannot write out, each at its pointer', () => {
      refusedAt(withSchema({ ...obj({ a: { $ref: '#/$defs/Nope' } }), $defs: {} }), '/tools/0/inputSchema/properties/a/$ref', /points at nothing/);
      refusedAt(withSchema(obj({ a: { $ref: '#address' } })), '/tools/0/inputSchema/properties/a/$ref', /JSON pointer .* anchors are not supported/);
      refusedAt(withSchema(obj({ a: { $ref: '#/properties/%E0%A4%A' } })), '/tools/0/inputSchema/properties/a/$ref', /not a valid URI fragment/);
      refusedAt(withSchema(obj({ a: { $ref: '#/__proto__' } })), '/tools/0/inputSchema/properties/a/$ref', /points at nothing/);
      refusedAt(
        withSchema({ ...obj({ a: { $ref: '#/$defs/S', maxLength: 3 } }), $defs: { S: { type: 'string', maxLength: 9 } } }),
        '/tools/0/inputSchema/properties/a/maxLength',
        /Beside `\$ref` only description, title, default, examples are accepted/,
      );
      refusedAt(withSchema({ ...obj({ a: { type: 'string', maxLength: 5, $defs: {} } }) }), '/tools/0/inputSchema/properties/a/$defs', /only accepted at the top/);
      refusedAt(withSchema({ ...obj({}), $defs: [] }), '/tools/0/inputSchema/$defs', /object of named schemas/);
      refusedAt(withSchema({ ...obj({}), definitions: {} }), '/tools/0/inputSchema/definitions', /`\$defs`/);
    });

    it('follows escaped pointers, and pointers to any subschema', () => {
      const { tools } = checkManifest(withSchema({
        ...obj({ a: { $ref: '#/$defs/a~1b' }, b: { $ref: '#/%24defs/c~0d' }, c: { $ref: '#/properties/a' } }),
        $defs: { 'a/b': { type: 'integer', minimum: 1 }, 'c~d': { type: 'boolean' } },
      }));
      assert.deepEqual((tools[0]!.inputSchema as any).properties, { a: { type: 'integer', minimum: 1 }, b: { type: 'boolean' }, c: { type: 'integer', minimum: 1 } });
    });

    it('takes a reference at the top, as zod-to-json-schema writes a named schema', () => {
      const args = obj({ q: { type: 'string', maxLength: 9 } });
      const { tools } = checkManifest(withSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', $ref: '#/$defs/Args', description: 'The arguments.', $defs: { Args: args } }));
      assert.deepEqual(tools[0]!.inputSchema, { ...args, $schema: 'https://json-schema.org/draft/2020-12/schema', description: 'The arguments.' });
      refusedAt(withSchema({ $ref: '#/$defs/S', $defs: { S: { type: 'string', maxLength: 9 } } }), '/tools/0/inputSchema/type', /top level/);
    });

    it('takes an optional field as Pydantic writes it: anyOf of a schema and null', () => {
      const { tools } = checkManifest(withSchema({
        ...obj({
          s: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }], default: null, description: 'A text or nothing.' },
          e: { anyOf: [{ type: 'null' }, { enum: ['a', 'b'] }] },
          c: { anyOf: [{ const: 'x', title: 'X' }, { type: 'null' }], title: 'C' },
          t: { anyOf: [{ type: 'string', enum: ['a'] }, { type: 'null' }] },
          m: { anyOf: [{ $ref: '#/$defs/M' }, { type: 'null' }] },
        }),
        $defs: { M: obj({ n: { type: 'integer', minimum: 0 } }) },
      }));
      const props = (tools[0]!.inputSchema as any).properties;
      assert.deepEqual(props.s, { type: ['string', 'null'], maxLength: 5, default: null, description: 'A text or nothing.' });
      assert.deepEqual(props.e, { enum: ['a', 'b', null] });
      assert.deepEqual(props.c, { enum: ['x', null], title: 'C' });
      assert.deepEqual(props.t, { type: ['string', 'null'], enum: ['a', null] });
      assert.deepEqual(props.m, { ...obj({ n: { type: 'integer', minimum: 0 } }), type: ['object', 'null'] });
      // oneOf says the same while the schema itself refuses null; one that takes null is refused.
      const { tools: one } = checkManifest(withSchema(obj({ s: { oneOf: [{ type: 'null' }, { type: 'integer', maximum: 3 }] } })));
      assert.deepEqual((one[0]!.inputSchema as any).properties.s, { type: ['integer', 'null'], maximum: 3 });
      refusedAt(withSchema(obj({ s: { oneOf: [{ type: ['string', 'null'], maxLength: 5 }, { type: 'null' }] } })), '/tools/0/inputSchema/properties/s/oneOf', /except as one schema or null/);
      // A problem inside the branch is reported where the branch is written.
      refusedAt(withSchema(obj({ s: { anyOf: [{ type: 'string' }, { type: 'null' }] } })), '/tools/0/inputSchema/properties/s/anyOf/0', /must have a `maxLength`/);
      // Anything else is still refused.
      refusedAt(withSchema(obj({ s: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'integer' }] } })), '/tools/0/inputSchema/properties/s/anyOf', /except as one schema or null/);
      const beside = refused(withSchema(obj({ s: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }], maxLength: 3 } })));
      assert.ok(beside.some((e) => e.path === '/tools/0/inputSchema/properties/s/anyOf' && /nothing but annotations/.test(e.message)), JSON.stringify(beside));
    });

    describe('draft-07, as MCP SDK v1 servers and zod-to-json-schema write it', () => {
      const D7 = 'http://json-schema.org/draft-07/schema#';
      const place = obj({ city: { type: 'string', maxLength: 60 } });

      it('is rewritten to 2020-12: definitions, tuples, additionalItems, the $schema itself', () => {
        const original = {
          ...obj({
            at: { type: 'array', minItems: 2, maxItems: 2, items: [{ type: 'number' }, { type: 'number' }] },
            tags: { type: 'array', maxItems: 9, items: [{ type: 'string', maxLength: 3 }], additionalItems: { type: 'integer' } },
            list: { type: 'array', maxItems: 3, items: { $ref: '#/definitions/Place' }, additionalItems: false },
            home: { $ref: '#/definitions/Place', description: 'Home.' },
          }),
          definitions: { Place: place },
          $schema: D7,
        };
        const copy = structuredClone(original);
        const schema = checkManifest(withSchema(original)).tools[0]!.inputSchema as any;
        assert.deepEqual(schema, {
          ...obj({
            at: { type: 'array', minItems: 2, maxItems: 2, prefixItems: [{ type: 'number' }, { type: 'number' }], items: false },
            tags: { type: 'array', maxItems: 9, prefixItems: [{ type: 'string', maxLength: 3 }], items: { type: 'integer' } },
            // additionalItems without a list of items means nothing in draft-07.
            list: { type: 'array', maxItems: 3, items: place },
            home: { ...place, description: 'Home.' },
          }),
          $schema: 'https://json-schema.org/draft/2020-12/schema',
        });
        assert.deepEqual(original, copy, 'the input is not changed');
        assert.equal(checkArguments(schema, { at: [1, 2], tags: ['a', 7] }).ok, true);
        assert.equal(checkArguments(schema, { at: [1, 2, 3] }).ok, false);
        assert.equal(checkArguments(schema, { tags: ['a', 'b'] }).ok, false);
      });

      it('takes $defs too, a reference at the top, and the 2020-12 $schema written with # or http', () => {
        const args = obj({ q: { type: 'string', maxLength: 9 } });
        const top = checkManifest(withSchema({ $schema: D7, $ref: '#/definitions/Args', definitions: { Args: args } })).tools[0]!.inputSchema;
        assert.deepEqual(top, { ...args, $schema: 'https://json-schema.org/draft/2020-12/schema' });
        const both = checkManifest(withSchema({ ...obj({ a: { $ref: '#/$defs/P' } }), $defs: { P: place }, $schema: 'http://json-schema.org/draft-07/schema' })).tools[0]!.inputSchema;
        assert.deepEqual(both, { ...obj({ a: place }), $schema: 'https://json-schema.org/draft/2020-12/schema' });
        for (const spelling of ['https://json-schema.org/draft/2020-12/schema#', 'http://json-schema.org/draft/2020-12/schema']) {
          assert.equal((checkManifest(withSchema({ ...args, $schema: spelling })).tools[0]!.inputSchema as any).$schema, 'https://json-schema.org/draft/2020-12/schema');
        }
      });

      it('says where a draft-07 schema goes wrong, where it is written', () => {
        refusedAt(withSchema({ ...obj({ t: { type: 'array', maxItems: 5, items: [{ type: 'number' }] } }), $schema: D7 }), '/tools/0/inputSchema/properties/t/items', /must say what may follow/);
        refusedAt(withSchema({ ...obj({ t: { type: 'array', maxItems: 2, prefixItems: [{ type: 'number' }], items: false } }), $schema: D7 }), '/tools/0/inputSchema/properties/t/prefixItems', /not a draft-07 keyword/);
        refusedAt(withSchema({ ...obj({ a: { $ref: '#/definitions/S' } }), definitions: { S: { type: 'string' } }, $schema: D7 }), '/tools/0/inputSchema/definitions/S', /must have a `maxLength`/);
        refusedAt(withSchema({ ...obj({ t: { type: 'array', maxItems: 2, items: [{ type: 'string' }], additionalItems: false } }), $schema: D7 }), '/tools/0/inputSchema/properties/t/items/0', /must have a `maxLength`/);
        refusedAt(withSchema({ ...obj({}), definitions: [], $schema: D7 }), '/tools/0/inputSchema/definitions', /object of named schemas/);
        refusedAt(withSchema({ ...obj({ a: { type: 'integer', definitions: {} } }), $schema: D7 }), '/tools/0/inputSchema/properties/a/definitions', /at the top/);
      });

      it('is the only other dialect; its forms without it are refused, saying what to write', () => {
        refusedAt(withSchema({ ...obj({}), $schema: 'http://json-schema.org/draft-04/schema#' }), '/tools/0/inputSchema/$schema', /draft-07/);
        refusedAt(withSchema({ ...obj({}), definitions: {} }), '/tools/0/inputSchema/definitions', /`\$defs`.*draft-07/);
        refusedAt(withSchema(obj({ t: { type: 'array', maxItems: 2, items: [{ type: 'number' }] } })), '/tools/0/inputSchema/properties/t/items', /`prefixItems`/);
        refusedAt(withSchema(obj({ t: { type: 'array', maxItems: 2, prefixItems: [{ type: 'number' }], items: false, additionalItems: false } })), '/tools/0/inputSchema/properties/t/additionalItems', /is `items`/);
      });
    });

    it('leaves a $ref inside a value alone: only subschemas are followed', () => {
      const { tools } = checkManifest(withSchema(obj({ a: { const: { $ref: '#/nothing' } }, b: { type: 'string', maxLength: 9, default: '$ref' } })));
      assert.deepEqual((tools[0]!.inputSchema as any).properties.a, { const: { $ref: '#/nothing' } });
    });
  });

  it('refuses $data', () => {
    refusedAt(withSchema(obj({ a: { type: 'number', maximum: { $data: '1/b' } } })), '/tools/0/inputSchema/properties/a/maximum', /finite number/);
    refusedAt(withSchema(obj({ a: { type: 'number', $data: '1/b' } })), '/tools/0/inputSchema/properties/a/$data', /`\$data`/);
  });

  it('refuses if/then/else, patternProperties, unevaluated* and combinators', () => {
    for (const [key, value] of [
      ['if', {}], ['patternProperties', {}], ['unevaluatedProperties', false], ['unevaluatedItems', false], ['anyOf', []], ['not', {}],
    ] as const) {
      refusedAt(withSchema({ ...obj({}), [key]: value }), `/tools/0/inputSchema/${key}`, /not supported/);
    }
  });

  it('refuses a string without maxLength and an array without maxItems', () => {
    refusedAt(withSchema(obj({ a: { type: 'string' } })), '/tools/0/inputSchema/properties/a', /must have a `maxLength`/);
    refusedAt(withSchema(obj({ a: { type: 'array', items: textProp } })), '/tools/0/inputSchema/properties/a', /must have `maxItems`/);
    refusedAt(withSchema(obj({ a: { type: 'array', maxItems: 5 } })), '/tools/0/inputSchema/properties/a', /give `items`/);
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 65_537 } })), '/tools/0/inputSchema/properties/a/maxLength', /0 to 65536/);
  });

  it('refuses an object without additionalProperties', () => {
    refusedAt(withSchema({ type: 'object', properties: {} }), '/tools/0/inputSchema', /additionalProperties/);
  });

  it('refuses a pattern linear-time matching cannot run, and only warns that one backtracks', () => {
    const at = '/tools/0/inputSchema/properties/a/pattern';
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 50, pattern: '(?=a)\\w+' } })), at, /lookahead or lookbehind/);
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 50, pattern: '(' } })), at, /not a valid regular expression/);
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 5000, pattern: '^a$' } })), '/tools/0/inputSchema/properties/a/maxLength', /at most 4096/);
    const { warnings } = checkManifest(withSchema(obj({ a: { type: 'string', maxLength: 50, pattern: '^(a+)+$' } })));
    assert.match(warnings.find((w) => w.path === at)?.message ?? '', /backtrack catastrophically/);
  });

  it('lints patterns with recheck, and has a conservative fallback', () => {
    assert.equal(patternCheckerIsRecheck(), true);
    assert.match(patternLint('(x+x+)+y', patient()) ?? '', /exponential/);
    assert.match(patternLint('^\\d+\\d+\\d+x', patient()) ?? '', /polynomial/);
    assert.equal(patternLint('^[a-z0-9_-]{1,20}$', patient()), null);
    for (const p of ['^(a+)+$', '(a|ab)*c', '(a)\\1', '(?=a)b', '((ab)*c)+']) assert.notEqual(conservativePatternProblem(p), null, p);
    for (const p of ['^[a-z]+$', '^[a-z]{2,3}-\\d+$', '^(ab)?c*$', '[(+)]*']) assert.equal(conservativePatternProblem(p), null, p);
  });

  it('refuses schemas nested deeper than 8 levels', () => {
    let deep: any = textProp;
    for (let i = 0; i < 8; i++) deep = obj({ a: deep });
    const errors = refused(withSchema(deep));
    assert.deepEqual(errors.map((e) => e.path), ['/tools/0/inputSchema' + '/properties/a'.repeat(8)]);
    assert.match(errors[0]!.message, /at most 8 levels/);
    let ok: any = textProp;
    for (let i = 0; i < 7; i++) ok = obj({ a: ok });
    assert.ok(checkManifest(withSchema(ok)));
  });

  it('refuses more than 100 properties in all', () => {
    const props = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`p${i}`, { type: 'boolean' }]));
    refusedAt(withSchema(obj(props)), '/tools/0/inputSchema', /at most 100 in all \(got 101\)/);
  });

  it('refuses keywords outside the whitelist, another $schema, formats outside the list, misplaced keywords', () => {
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 5, contentEncoding: 'base64' } })), '/tools/0/inputSchema/properties/a/contentEncoding', /not a supported keyword/);
    refusedAt(withSchema({ ...obj({}), $schema: 'https://json-schema.org/draft/2019-09/schema' }), '/tools/0/inputSchema/$schema', /2020-12/);
    refusedAt(withSchema(obj({ a: { type: 'string', maxLength: 5, format: 'regex' } })), '/tools/0/inputSchema/properties/a/format', /must be one of/);
    refusedAt(withSchema(obj({ a: { type: 'number', maxLength: 5 } })), '/tools/0/inputSchema/properties/a/maxLength', /applies to strings/);
    refusedAt(withSchema(obj({ a: true })), '/tools/0/inputSchema/properties/a', /accepts any value/);
    refusedAt(withSchema({ ...obj({}), required: ['ghost'] }), '/tools/0/inputSchema/required/0', /not declared/);
  });

  it('refuses property names that are reserved or not NFC', () => {
    const reserved = JSON.parse('{"type":"object","additionalProperties":false,"properties":{"__proto__":{"type":"boolean"}}}');
    refusedAt(withSchema(reserved), '/tools/0/inputSchema/properties/__proto__', /cannot be a property name/);
    refusedAt(withSchema(obj({ 'cafe\u0301': { type: 'boolean' } })), '/tools/0/inputSchema/properties/cafe\u0301', /NFC/);
  });
});

describe('manifest: lint warnings (never refusals)', () => {
  const paths = (m: unknown) => warningsOf(m).map((w) => w.path);

  it('warns when a name, title or summary sounds destructive but the tool is not marked so', () => {
    const m = oneTool((t) => { t.name = 'bulk_delete_notes'; });
    const [w] = warningsOf(m);
    assert.equal(w!.path, '/tools/0/name');
    assert.match(w!.message, /sounds destructive \("delete"\).*not marked `destructive: true`/);
    assert.deepEqual(paths(oneTool((t) => { t.name = 'team_news'; t.title = 'Send an email'; })), ['/tools/0/title']);
    assert.deepEqual(paths(oneTool((t) => { t.name = 'tidy'; t.title = 'Tidy up'; t.summary = 'Permanently purges old notes and returns how many.'; })), ['/tools/0/summary']);
    for (const name of ['publish_post', 'pay_invoice', 'transfer_funds', 'cancel_order', 'revoke_token', 'archive_note', 'unsubscribe', 'wipe', 'overwrite_file']) {
      assert.deepEqual(paths(oneTool((t) => { t.name = name; t.title = 'Tool'; t.summary = 'Returns ok.'; })), ['/tools/0/name'], name);
    }
    // A leading read verb makes the rest nouns.
    assert.deepEqual(paths(oneTool((t) => { t.name = 'list_sent_emails'; t.title = 'Sent emails'; t.summary = 'Lists sent emails with their subjects.'; })), ['/tools/0/title']);
  });

  it('warns when a destructive-sounding tool is marked readOnly', () => {
    const [w] = warningsOf(oneTool((t) => { t.name = 'delete_all'; t.readOnly = true; }));
    assert.match(w!.message, /marked `readOnly`/);
  });

  it('warns when a read-only-sounding tool is marked destructive', () => {
    const ws = warningsOf(oneTool((t) => { t.destructive = true; }));
    assert.deepEqual(ws.map((w) => w.path), ['/tools/0/destructive']);
    assert.match(ws[0]!.message, /sounds read-only \("search"\)/);
  });

  it('warns when the summary does not say what the tool returns', () => {
    const ws = warningsOf(oneTool((t) => { t.summary = 'Searches the notes.'; }));
    assert.deepEqual(ws.map((w) => w.path), ['/tools/0/summary']);
    assert.match(ws[0]!.message, /does not say what the tool returns/);
  });

  it('warns that confirm without destructive has no effect', () => {
    assert.deepEqual(paths(oneTool((t) => { t.confirm = true; })), ['/tools/0/confirm']);
  });

  it('warns about an argument summary that is empty or repeats the name', () => {
    assert.deepEqual(paths(withArg({ name: 'query', summary: '', kind: 'boolean' })), ['/tools/0/arguments/0/summary']);
    const [w] = warningsOf(withArg({ name: 'user_id', summary: 'The user ID.', kind: 'boolean' }));
    assert.equal(w!.path, '/tools/0/arguments/0/summary');
    assert.match(w!.message, /only repeats its name/);
  });

  it('warns about a number without bounds, an http webhook, an empty description, an undescribed schema property', () => {
    assert.deepEqual(paths(withArg({ kind: { number: {} } })), ['/tools/0/arguments/0/kind/number']);
    assert.deepEqual(paths({ ...notes(), webhook: 'http://notes.example.com/' }), ['/webhook']);
    assert.deepEqual(paths({ ...notes(), webhook: 'http://localhost:3000/' }), []);
    assert.deepEqual(paths({ ...notes(), description: '' }), ['/description']);
    assert.deepEqual(paths(withSchema(obj({ a: { type: 'boolean' } }))), ['/tools/0/inputSchema/properties/a']);
  });

  it('lints a normalised manifest directly, and warnings never refuse', () => {
    const m = notes();
    m.tools[1].destructive = false;
    m.tools[1].confirm = true;
    const { manifest, warnings } = checkManifest(m);
    assert.deepEqual(warnings.map((w) => w.path), ['/tools/1/name', '/tools/1/confirm', '/tools/1/summary']);
    assert.deepEqual(lintManifest(manifest), warnings);
  });

  it('lints a refused manifest as far as its shape allows, without throwing', () => {
    const raw = { tools: [{ name: 'drop_table', arguments: [null, { name: 'n', kind: { number: {} } }] }, 'x'] };
    assert.deepEqual(lintManifest(raw as never).map((w) => w.path), [
      '/description', '/tools/0/name', '/tools/0/summary', '/tools/0/arguments/1/summary', '/tools/0/arguments/1/kind/number',
    ]);
  });
});
