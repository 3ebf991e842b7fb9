// Issue #43, "people read names, never ids or codes": an update's review says a tool's argument
// types in words, never as JSON Schema. Every keyword a manifest may use is said here, on schemas
// the manifest rules accept.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { schemaInWords } from '../apps/dashboard/src/app/schema-words';
import type { FieldError } from '../packages/core/src/errors';
import { checkInputSchema, compileArguments, SCHEMA_KEYWORDS } from '../packages/core/src/addons/schema';
import type { ArgumentKind } from '../packages/core/src/addons/types';

/** One argument of each manifest kind, as registration compiles it. */
const compiled = (kind: ArgumentKind) => (compileArguments([{ name: 'x', summary: 'An argument.', kind }]).properties as Record<string, unknown>).x;

/** Each property of this inputSchema, and the words it must read as. */
const CASES: Array<[name: string, schema: Record<string, unknown>, words: string]> = [
  ['flag', { type: 'boolean', description: 'Whether to.', title: 'Flag' }, 'a yes/no choice'],
  ['text', { type: 'string', maxLength: 200 }, 'text up to 200 characters'],
  ['code', { type: 'string', minLength: 3, maxLength: 8, pattern: '^[A-Z]+$' }, 'text of 3 to 8 characters, matching the pattern ^[A-Z]+$'],
  ['pin', { type: 'string', minLength: 4, maxLength: 4 }, 'text of exactly 4 characters'],
  ['when', { type: 'string', format: 'date-time', maxLength: 40 }, 'a date and time, up to 40 characters'],
  ['mail', { type: 'string', format: 'email', maxLength: 254, examples: ['ada@example.com'] }, 'an email address, up to 254 characters; for example ada@example.com'],
  ['count', { type: 'integer', minimum: 1, maximum: 10, default: 3 }, 'a whole number from 1 to 10; 3 if not given'],
  ['ratio', { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1, multipleOf: 0.01 }, 'a number greater than 0 and less than 1, a multiple of 0.01'],
  ['size', { type: 'number', maximum: 5 }, 'a number up to 5'],
  ['level', { type: 'string', enum: ['low', 'medium', 'high'] }, 'one of: low, medium, high'],
  ['version', { const: 'v1' }, 'always v1'],
  ['note', { type: ['string', 'null'], maxLength: 50 }, 'text up to 50 characters, or nothing'],
  ['tags', { type: 'array', minItems: 1, maxItems: 10, items: { type: 'string', maxLength: 20 } }, 'a list of 1 to 10 items, each text up to 20 characters'],
  [
    'point',
    { type: 'array', maxItems: 2, prefixItems: [{ type: 'number' }, { type: 'number' }], items: false },
    'a list of up to 2 items whose first items are: a number; then a number, and nothing after them',
  ],
  [
    'person',
    { type: 'object', properties: { name: { type: 'string', maxLength: 80 }, age: { type: 'integer', minimum: 0 } }, required: ['name'], additionalProperties: false },
    'a group of fields: name (text up to 80 characters); age (optional: a whole number of at least 0)',
  ],
  ['labels', { type: 'object', additionalProperties: { type: 'string', maxLength: 30 } }, 'a group of other fields, each text up to 30 characters'],
];

describe('argument types in words', () => {
  it('says each kind a manifest argument can have', () => {
    assert.equal(schemaInWords(compiled('boolean')), 'a yes/no choice');
    assert.equal(schemaInWords(compiled({ text: { maxLength: 200 } })), 'text up to 200 characters');
    assert.equal(schemaInWords(compiled({ text: { maxLength: 1 } })), 'text up to 1 character');
    assert.equal(schemaInWords(compiled({ number: { whole: true, minimum: 1, maximum: 10 } })), 'a whole number from 1 to 10');
    assert.equal(schemaInWords(compiled({ number: { minimum: 0 } })), 'a number of at least 0');
    assert.equal(schemaInWords(compiled({ choice: ['a', 'b', 'c'] })), 'one of: a, b, c');
  });

  it('says every keyword of an inputSchema the manifest rules accept', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: Object.fromEntries(CASES.map(([name, s]) => [name, s])),
      required: ['flag'],
      additionalProperties: false,
    };
    const errors: FieldError[] = [];
    assert.ok(checkInputSchema(structuredClone(schema), '/inputSchema', errors), JSON.stringify(errors));
    assert.deepEqual(errors, [], 'a schema the manifest rules accept');
    const used = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) { used.add(k); if (k !== 'properties') walk(x); else Object.values(x as object).forEach(walk); }
    };
    walk(schema);
    assert.deepEqual([...SCHEMA_KEYWORDS].filter((k) => !used.has(k)), [], 'every keyword the manifest allows is said in words below');
    for (const [name, s, words] of CASES) assert.equal(schemaInWords(s), words, name);
    assert.match(schemaInWords(schema), /^a group of fields: flag \(a yes\/no choice\); text \(optional: text up to 200 characters\)/);
  });

  it('never shows JSON', () => {
    const odd = [{}, true, false, null, { type: 'null' }, { enum: [1, true, null, 'a, b', ''] }, { type: ['integer', 'string'], maxLength: 3 }, { type: 'object', properties: {} }, { items: { type: 'boolean' }, maxItems: 3 }];
    assert.deepEqual(odd.map(schemaInWords), [
      'any value',
      'any value',
      'nothing at all',
      'any value',
      'nothing',
      'one of: 1, yes, nothing, “a, b”, “”',
      'a whole number or text up to 3 characters',
      'an empty group of fields',
      'a list of up to 3 items, each a yes/no choice',
    ]);
    for (const s of [...odd, ...CASES.map((c) => c[1])]) assert.doesNotMatch(schemaInWords(s), /[{}"]|\btype\b/, JSON.stringify(s));
  });
});
