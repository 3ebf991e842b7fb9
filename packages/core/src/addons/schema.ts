import { createRequire } from 'node:module';
import { ToolportError, type FieldError } from '../errors';
import type { ArgumentKind, JsonSchema, ManifestArgument } from './types';

/** Names that would reach an object's prototype when used as a key; never accepted anywhere. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/** In `u` mode a paired surrogate is one code point, so this matches lone surrogates only. */
export const LONE_SURROGATE = /\p{Surrogate}/u;
/** C0/C1 controls and the bidi overrides that can disguise text; `\n` and `\t` are allowed in prose. */
const CONTROL_IN_PROSE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
const CONTROL_ANY = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** The dialect of every inputSchema Toolport keeps and lists (MCP's default). */
export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** The draft-07 `$schema` (what MCP SDK v1 servers and zod-to-json-schema write). */
export const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

/**
 * The dialect a top-level `$schema` names, or undefined when it names one Toolport does not take.
 * Draft-07 is accepted and rewritten to 2020-12 (its `definitions`, tuple `items` and
 * `additionalItems`), so apps that only know 2020-12 can use it.
 */
function dialectOf(value: unknown): '2020-12' | 'draft-07' | undefined {
  if (typeof value !== 'string') return undefined;
  const uri = value.replace(/^https?:\/\//, '').replace(/#$/, '');
  if (uri === 'json-schema.org/draft/2020-12/schema') return '2020-12';
  if (uri === 'json-schema.org/draft-07/schema') return 'draft-07';
  return undefined;
}
/** Formats an inputSchema may use: each has a linear-time check in ajv-formats' fast mode. */
export const SCHEMA_FORMATS = ['date-time', 'date', 'time', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid'] as const;

export const SCHEMA_LIMITS = {
  /** Levels of subschemas, the root being level 1. */
  depth: 8,
  /** Properties declared across the whole inputSchema. */
  properties: 100,
  /** The inputSchema as JSON text. */
  bytes: 64 * 1024,
  maxLength: 65_536,
  maxItems: 1_000,
  enumValues: 100,
  prefixItems: 20,
  propertyName: 64,
  patternLength: 300,
  /** maxLength of a string with a pattern; longer strings never reach the expression. */
  patternInput: 4_096,
  /** Patterns per manifest: each costs a ReDoS analysis. */
  patterns: 32,
  description: 1_000,
  title: 200,
} as const;

/** Time for one pattern's ReDoS analysis, and for all of a manifest's together (it runs on the event loop). */
const PATTERN_TIMEOUT_MS = 3_000;
const PATTERN_BUDGET_MS = 8_000;

/** JSON pointer: `ptr('/tools', 0, 'name')` is `/tools/0/name`. */
export const ptr = (base: string, ...segments: (string | number)[]) =>
  base + segments.map((s) => '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('');

export const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** Why a string cannot be used as text, or null. `prose` allows newlines and tabs. */
export function textProblem(s: string, prose: boolean): string | null {
  if (LONE_SURROGATE.test(s)) return 'contains a lone UTF-16 surrogate, which is not valid Unicode';
  const m = (prose ? CONTROL_IN_PROSE : CONTROL_ANY).exec(s);
  if (m) return `contains the control character U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}; remove it`;
  return null;
}

/** Length in code points, which is what JSON Schema's maxLength counts. */
export function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** JSON text with object keys sorted, so equal schemas give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return '[' + value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',') + ']';
  if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(obj[k])).join(',') + '}';
  }
  return JSON.stringify(value) ?? 'null';
}

// ---------------------------------------------------------------------------------------------
// Argument kinds → JSON Schema 2020-12

/** The JSON Schema of one argument kind. */
export function kindSchema(kind: ArgumentKind): JsonSchema {
  if (kind === 'boolean') return { type: 'boolean' };
  if ('text' in kind) return { type: 'string', maxLength: kind.text.maxLength };
  if ('choice' in kind) return { type: 'string', enum: [...kind.choice] };
  const { minimum, maximum, whole } = kind.number;
  const out: JsonSchema = { type: whole ? 'integer' : 'number' };
  if (minimum !== undefined) out.minimum = minimum;
  if (maximum !== undefined) out.maximum = maximum;
  return out;
}

/** Compiles checked manifest arguments to one object schema; each summary becomes a description. */
export function compileArguments(args: readonly ManifestArgument[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const arg of args) {
    if (RESERVED_KEYS.has(arg.name)) {
      throw new ToolportError('VALIDATION', `\`${arg.name}\` cannot be an argument name.`);
    }
    const prop = kindSchema(arg.kind);
    if (arg.summary) prop.description = arg.summary;
    properties[arg.name] = prop;
    if (arg.required !== false) required.push(arg.name);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

// ---------------------------------------------------------------------------------------------
// Patterns: ReDoS check

interface RecheckDiagnostics {
  status: 'safe' | 'vulnerable' | 'unknown';
  complexity?: { type: string };
  error?: { kind: string };
}
type RecheckSync = (
  source: string,
  flags: string,
  params?: { timeout?: number | null; checker?: 'auto' | 'automaton' | 'fuzz' },
) => RecheckDiagnostics;

let recheck: RecheckSync | null | undefined;
/**
 * recheck's browser build runs its pure-JS analysis in this thread: no worker, no child process,
 * no Java, no environment variables read (its Node entry picks a backend from process.env).
 */
function loadRecheck(): RecheckSync | null {
  if (recheck === undefined) {
    try {
      const mod = createRequire(import.meta.url)('recheck/lib/browser.js') as { checkSync?: RecheckSync };
      recheck = typeof mod.checkSync === 'function' ? mod.checkSync : null;
      // The first analyses pay for warming the Scala.js runtime; keep that out of any timeout.
      recheck?.('^(a|b)+c$', 'u', { timeout: null });
    } catch {
      recheck = null;
    }
  }
  return recheck;
}

/** Whether patterns are checked by recheck (true) or by the conservative fallback (false). */
export const patternCheckerIsRecheck = () => loadRecheck() !== null;

const QUANTIFIER_AFTER = /^(?:[*+]|\{\d+,\d*\})/;

/**
 * The fallback when recheck is unavailable: refuses what could backtrack badly without proving
 * anything — backreferences, lookarounds, and repeated groups that contain a repetition or an
 * alternation (`(a+)+`, `(a|ab)*`).
 */
export function conservativePatternProblem(p: string): string | null {
  if (/\\[1-9]|\\k</.test(p)) return 'uses a backreference; remove it';
  if (/\(\?<?[=!]/.test(p)) return 'uses a lookaround; remove it';
  const stack: { risky: boolean }[] = [];
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') { i++; continue; }
    if (inClass) { if (c === ']') inClass = false; continue; }
    if (c === '[') { inClass = true; continue; }
    if (c === '(') { stack.push({ risky: false }); continue; }
    if (c === '|' && stack.length) { stack[stack.length - 1]!.risky = true; continue; }
    const rest = p.slice(i + 1);
    if (c === ')') {
      const group = stack.pop();
      const repeated = QUANTIFIER_AFTER.test(rest);
      if (group?.risky && repeated) {
        return 'repeats a group that itself repeats or alternates, which can backtrack catastrophically; rewrite it without nested repetition';
      }
      if ((group?.risky || repeated) && stack.length) stack[stack.length - 1]!.risky = true;
      continue;
    }
    if ((c === '*' || c === '+' || (c === '{' && /^\d+,\d*\}/.test(rest))) && stack.length) {
      stack[stack.length - 1]!.risky = true;
    }
  }
  return null;
}

const patternVerdicts = new Map<string, string | null>();
const MAX_PATTERN_VERDICTS = 1_000;

/**
 * Why a pattern cannot be used, or null when it is safe. Ajv compiles patterns with the `u` flag,
 * and an unanchored pattern is a search, so that is what is analysed.
 */
export function patternProblem(p: string, deadline = performance.now() + PATTERN_TIMEOUT_MS): string | null {
  if (p.length > SCHEMA_LIMITS.patternLength) return `is too long: at most ${SCHEMA_LIMITS.patternLength} characters (got ${p.length})`;
  try {
    new RegExp(p, 'u');
  } catch (err) {
    return `is not a valid regular expression with the \`u\` flag (${(err as Error).message})`;
  }
  const known = patternVerdicts.get(p);
  if (known !== undefined) return known;
  const check = loadRecheck();
  let verdict: string | null;
  if (!check) {
    verdict = conservativePatternProblem(p);
  } else {
    // recheck wants a whole number of milliseconds.
    const timeout = Math.max(1, Math.floor(Math.min(PATTERN_TIMEOUT_MS, deadline - performance.now())));
    let r: RecheckDiagnostics;
    try {
      // The automaton checker proves or refutes; what it cannot model (backreferences,
      // lookarounds) comes back unknown and is refused rather than fuzzed.
      r = check(p, 'u', { timeout, checker: 'automaton' });
    } catch {
      r = { status: 'unknown', error: { kind: 'unexpected' } };
    }
    if (r.status === 'safe') verdict = null;
    else if (r.status === 'vulnerable') {
      verdict = `can backtrack catastrophically (${r.complexity?.type ?? 'super-linear'} time on some inputs); rewrite it without nested or overlapping repetition, e.g. \`^[a-z]+(-[a-z]+)*$\` instead of \`^([a-z]+-?)+$\``;
    } else if (r.error?.kind === 'timeout') {
      // Not cached: a later check with more time may prove it safe.
      return 'could not be proven safe in time; simplify it';
    } else verdict = 'could not be proven safe against catastrophic backtracking; simplify it';
  }
  if (patternVerdicts.size >= MAX_PATTERN_VERDICTS) patternVerdicts.delete(patternVerdicts.keys().next().value!);
  patternVerdicts.set(p, verdict);
  return verdict;
}

// ---------------------------------------------------------------------------------------------
// Raw inputSchema: a whitelist of what can be enforced safely

const KEYWORDS = new Set([
  '$schema', 'type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems',
  'minItems', 'maxItems', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'multipleOf', 'enum', 'const', 'description', 'title', 'default', 'examples',
  'format', 'pattern',
]);
const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
const ARRAY_KEYWORDS = ['items', 'prefixItems', 'minItems', 'maxItems'];
const OBJECT_KEYWORDS = ['properties', 'required', 'additionalProperties'];

const REFUSED: Record<string, string> = {
  $data: '`$data` references are refused: every bound must be fixed in the schema',
  $dynamicRef: '`$dynamicRef` is refused: it allows recursion without bound',
  $recursiveRef: '`$recursiveRef` is refused: it allows recursion without bound',
  $dynamicAnchor: '`$dynamicAnchor` is refused: it allows recursion without bound',
  $defs: '`$defs` is only accepted at the top of the inputSchema',
  definitions: `\`definitions\` is the draft-07 name for \`$defs\`: put shared subschemas under \`$defs\` at the top of the inputSchema, or declare "$schema": "${DRAFT_07}"`,
  additionalItems: '`additionalItems` is the draft-07 name: in 2020-12 a tuple is `prefixItems`, and what may follow it is `items`',
  dependencies: '`dependencies` is not supported; explain the dependency in the description',
  if: 'conditional schemas (`if`/`then`/`else`) are not supported; describe one shape',
  then: 'conditional schemas (`if`/`then`/`else`) are not supported; describe one shape',
  else: 'conditional schemas (`if`/`then`/`else`) are not supported; describe one shape',
  patternProperties: '`patternProperties` is not supported; name every property in `properties`',
  propertyNames: '`propertyNames` is not supported; name every property in `properties`',
  unevaluatedProperties: '`unevaluatedProperties` is not supported; use `additionalProperties: false`',
  unevaluatedItems: '`unevaluatedItems` is not supported; use `items`',
  allOf: '`allOf` is not supported; merge the subschemas into one',
  anyOf: '`anyOf` is not supported except as one schema or null (`"anyOf": [{...}, {"type": "null"}]`, as Pydantic writes an optional field, with nothing but annotations beside it); otherwise use `enum`, or a `type` list such as ["string", "null"]',
  oneOf: '`oneOf` is not supported except as one schema or null, like `anyOf`; otherwise use `enum`, or a `type` list such as ["string", "null"]',
  not: '`not` is not supported',
  dependentSchemas: '`dependentSchemas` is not supported',
  dependentRequired: '`dependentRequired` is not supported; explain the dependency in the description',
  contains: '`contains` is not supported',
  uniqueItems: '`uniqueItems` is not supported (its cost grows with the square of the list); check uniqueness in the add-on',
  $id: '`$id` is not supported: the schema is identified by its tool',
  $anchor: '`$anchor` is not supported: refer to a subschema by its JSON pointer, such as "#/$defs/address"',
};

export interface SchemaCheckState {
  properties: number;
  /** The distinct patterns analysed: a verdict is cached, so a repeated pattern costs nothing more. */
  patterns: Set<string>;
  /** performance.now() after which pattern analysis stops. */
  deadline: number;
}

export const newSchemaCheckState = (): SchemaCheckState => ({
  properties: 0,
  patterns: new Set(),
  deadline: performance.now() + PATTERN_BUDGET_MS,
});

const describeValue = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? s.slice(0, 37) + '...' : s;
};
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * Checks a raw inputSchema (2020-12, or draft-07 rewritten to it) against the whitelist; every refusal is added to `errors` with
 * its pointer under `path`. Returns a JSON copy of the schema when nothing was refused.
 */
export function checkInputSchema(
  input: unknown,
  path: string,
  errors: FieldError[],
  state: SchemaCheckState = newSchemaCheckState(),
): JsonSchema | undefined {
  const before = errors.length;
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch {
    text = undefined;
  }
  if (text === undefined || !isPlainObject(input)) {
    errors.push({ path, message: 'The inputSchema must be a JSON object: {"type": "object", "properties": {...}, "additionalProperties": false}.' });
    return undefined;
  }
  if (text.length > SCHEMA_LIMITS.bytes) {
    errors.push({ path, message: `The inputSchema is too large: at most ${SCHEMA_LIMITS.bytes / 1024} KB of JSON (got ${Math.ceil(text.length / 1024)} KB).` });
    return undefined;
  }
  // References are written out first: what is checked is what is enforced and listed.
  let schema: Record<string, unknown> = input;
  let origins: Origins | undefined;
  const dialect = dialectOf(input.$schema);
  if (text.includes('"$ref"') || text.includes('"anyOf"') || text.includes('"oneOf"') || '$defs' in input || (dialect && input.$schema !== SCHEMA_DIALECT)) {
    const expanded = writeOut(input, path, errors, dialect);
    if (!expanded) return undefined;
    ({ schema, origins } = expanded);
    text = JSON.stringify(schema);
    if (text.length > SCHEMA_LIMITS.bytes) {
      errors.push({ path, message: `The inputSchema is too large once its \`$ref\`s are written out: at most ${SCHEMA_LIMITS.bytes / 1024} KB of JSON (got ${Math.ceil(text.length / 1024)} KB).` });
      return undefined;
    }
  }
  if (schema.type !== 'object') {
    errors.push({ path: ptr(path, 'type'), message: 'The top level of an inputSchema must be `"type": "object"`: tool arguments are named.' });
  }
  const propsBefore = state.properties;
  checkNode(schema, path, 1, true, errors, state, origins);
  if (state.properties - propsBefore > SCHEMA_LIMITS.properties) {
    errors.push({ path, message: `The inputSchema declares too many properties: at most ${SCHEMA_LIMITS.properties} in all (got ${state.properties - propsBefore}).` });
  }
  // A subschema used through several references is checked at each use; say each problem once.
  if (origins) dedupe(errors, before);
  return errors.length === before ? (JSON.parse(text) as JsonSchema) : undefined;
}

function dedupe(errors: FieldError[], from: number) {
  const seen = new Set<string>();
  const kept = errors.slice(from).filter((e) => {
    const key = `${e.path}\n${e.message}`;
    return !seen.has(key) && !!seen.add(key);
  });
  errors.splice(from, errors.length - from, ...kept);
}

// ---------------------------------------------------------------------------------------------
// Written out in place: local $ref, and optional values as anyOf with null

/** Where each object of a written-out schema was written in the manifest, for error paths. */
type Origins = WeakMap<object, string>;

/** Subschemas a schema may have once its references are written out (a legal one has a few hundred). */
export const MAX_EXPANDED_SUBSCHEMAS = 2_000;
/** What may stand beside a `$ref`: annotations, which override the referenced schema's own. */
const REF_ANNOTATIONS = new Set(['description', 'title', 'default', 'examples']);

/** Sets an own property, even one named `__proto__` (checkNode refuses that name by its own rule). */
const setOwn = (o: Record<string, unknown>, k: string, v: unknown) =>
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

/** The value a local reference (`#/$defs/address`, any JSON pointer into the schema) points at, or why none. */
function resolveRef(root: Record<string, unknown>, ref: string): { value: unknown; at: string } | string {
  if (ref !== '#' && !ref.startsWith('#/')) {
    return `\`$ref\` must be a JSON pointer into this inputSchema, such as "#/$defs/address" (got ${describeValue(ref)}); anchors are not supported.`;
  }
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return `\`$ref\` ${describeValue(ref)} is not a valid URI fragment.`;
  }
  const segments = pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let value: unknown = root;
  for (const s of segments) {
    if (isPlainObject(value) && Object.hasOwn(value, s) && !RESERVED_KEYS.has(s)) value = value[s];
    else if (Array.isArray(value) && /^(0|[1-9]\d*)$/.test(s) && Number(s) < value.length) value = value[Number(s)];
    else return `\`$ref\` to \`${ref}\` points at nothing in this inputSchema.`;
  }
  return { value, at: ptr('', ...segments) };
}

/**
 * `x` that also accepts null, or undefined when `x` says nothing of its kind (no `type`, `enum` or
 * `const`). Every other keyword applies to one kind of value only, so null passes it.
 */
function orNull(x: Record<string, unknown>): Record<string, unknown> | undefined {
  if ('const' in x && 'enum' in x) return undefined;
  const out = { ...x };
  if (typeof x.type === 'string') out.type = x.type === 'null' ? 'null' : [x.type, 'null'];
  else if (Array.isArray(x.type)) out.type = x.type.includes('null') ? x.type : [...x.type, 'null'];
  if (Array.isArray(x.enum)) out.enum = x.enum.includes(null) ? x.enum : [...x.enum, null];
  if ('const' in x) {
    delete out.const;
    out.enum = x.const === null ? [null] : [x.const, null];
  }
  return 'type' in x || 'enum' in x || 'const' in x ? out : undefined;
}

/** Whether a schema that says its kind refuses null (then "one of it or null" is "any of"). */
const refusesNull = (x: Record<string, unknown>) =>
  (typeof x.type === 'string' && x.type !== 'null') ||
  (Array.isArray(x.type) && !x.type.includes('null')) ||
  (Array.isArray(x.enum) && !x.enum.includes(null)) ||
  ('const' in x && x.const !== null);

/**
 * In `{"anyOf": [X, {"type": "null"}], ...annotations}` (either order; or `oneOf`), which keyword
 * and the index of X.
 */
function nullableBranch(node: Record<string, unknown>): { key: 'anyOf' | 'oneOf'; index: number } | undefined {
  const key = 'anyOf' in node ? 'anyOf' : 'oneOf';
  const list = node[key];
  if (!Array.isArray(list) || list.length !== 2) return undefined;
  if (Object.keys(node).some((k) => k !== key && !REF_ANNOTATIONS.has(k))) return undefined;
  const isNull = (s: unknown) => isPlainObject(s) && s.type === 'null' && Object.keys(s).length === 1;
  if (isNull(list[1]) && isPlainObject(list[0])) return { key, index: 0 };
  if (isNull(list[0]) && isPlainObject(list[1])) return { key, index: 1 };
  return undefined;
}

/**
 * Writes out what generated schemas say indirectly, so that what is checked, enforced and listed
 * says it directly: local references (and the top-level `$defs` they point into), and an optional
 * value as Pydantic writes it, `{"anyOf": [X, {"type": "null"}]}` (or `oneOf`, X refusing null),
 * which becomes X accepting null. A draft-07 schema (`dialect`) is said the 2020-12 way as well:
 * its top-level `definitions` go the way of `$defs`, and its tuples become `prefixItems` and `items`.
 * A reference that leads back to itself (directly or through others) would recurse without bound
 * and is refused (added to `errors`, the reference left in place, the rest still written out and
 * checked). Remote references and other `anyOf`s are left for checkNode to refuse. Undefined when
 * the written-out schema would be too large to check.
 */
function writeOut(
  root: Record<string, unknown>,
  path: string,
  errors: FieldError[],
  dialect: ReturnType<typeof dialectOf>,
): { schema: Record<string, unknown>; origins: Origins } | undefined {
  const origins: Origins = new WeakMap();
  const draft07 = dialect === 'draft-07';
  // Where shared subschemas may stand: only at the top, and `definitions` only in draft-07.
  const defsKeys = draft07 ? ['$defs', 'definitions'] : ['$defs'];
  const isDefs = (at: string, k: string) => at === '' && defsKeys.includes(k);
  for (const k of defsKeys) {
    if (k in root && !isPlainObject(root[k])) {
      errors.push({ path: ptr(path, k), message: `\`${k}\` must be an object of named schemas.` });
      return undefined;
    }
  }
  let subschemas = 0;
  /** JSON text the references have copied so far: the written-out schema is held to the size limit. */
  let copied = 0;
  let tooLarge = false;
  const tooLargeAt = (what: string) => {
    tooLarge = true;
    errors.push({ path, message: `The inputSchema is too large once its \`$ref\`s are written out: at most ${what}.` });
  };
  /** Where the objects being written out stand in the schema: a reference to one of them recurses. */
  const chain: string[] = [];

  const expand = (node: unknown, at: string, depth: number): unknown => {
    // Past the depth limit checkNode refuses the subtree; past the budget the whole schema is refused.
    if (!isPlainObject(node) || depth > SCHEMA_LIMITS.depth || tooLarge) return node;
    if (++subschemas > MAX_EXPANDED_SUBSCHEMAS) {
      tooLargeAt(`${MAX_EXPANDED_SUBSCHEMAS} subschemas`);
      return node;
    }
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#')) {
      // A reference that cannot be written out stays, and is reported where it is written.
      const refused = (problems: [at: string, message: string][]) => {
        for (const [p, message] of problems) errors.push({ path: p, message });
        origins.set(node, path + at);
        return node;
      };
      const refAt = ptr(path + at, '$ref');
      const target = resolveRef(root, ref);
      if (typeof target === 'string') return refused([[refAt, target]]);
      if (chain.includes(target.at)) {
        return refused([[refAt, `\`$ref\` to \`${ref}\` refers back to a schema that contains it, so it would recurse without bound; write out a fixed number of levels instead.`]]);
      }
      // Beside a reference at the top (`{"$ref": "#/$defs/Args", "$defs": {...}}`) `$defs` is
      // dropped as everywhere, and `$schema` kept.
      const extra = Object.keys(node).filter((k) => k !== '$ref' && !isDefs(at, k));
      const invalid = extra.filter((k) => !REF_ANNOTATIONS.has(k) && !(at === '' && k === '$schema'));
      if (invalid.length) {
        return refused(invalid.map((k) => [ptr(path + at, k), `Beside \`$ref\` only ${[...REF_ANNOTATIONS].join(', ')} are accepted; put \`${k}\` in the schema it refers to.`]));
      }
      // Each use copies the target: a large definition used many times is refused before it is built.
      copied += JSON.stringify(target.value)?.length ?? 0;
      if (copied > SCHEMA_LIMITS.bytes) {
        tooLargeAt(`${SCHEMA_LIMITS.bytes / 1024} KB of JSON`);
        return node;
      }
      chain.push(at);
      let out = expand(target.value, target.at, depth);
      chain.pop();
      if (extra.length && isPlainObject(out)) {
        out = { ...out };
        for (const k of extra) setOwn(out as Record<string, unknown>, k, node[k]);
        origins.set(out as object, path + at);
      }
      return out;
    }
    const branch = nullableBranch(node);
    if (branch !== undefined) {
      const branchAt = ptr(at, branch.key, branch.index);
      chain.push(at);
      const inner = expand((node[branch.key] as unknown[])[branch.index], branchAt, depth);
      chain.pop();
      // "Exactly one of" is "any of" only while X itself refuses null.
      const merged = isPlainObject(inner) && (branch.key === 'anyOf' || refusesNull(inner)) ? orNull(inner) : undefined;
      if (merged) {
        for (const k of Object.keys(node)) if (k !== branch.key) setOwn(merged, k, node[k]);
        // Reported where the schema that is now nullable is written.
        origins.set(merged, origins.get(inner as object) ?? path + branchAt);
        return merged;
      }
    }
    chain.push(at);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (isDefs(at, k)) continue;
      if (draft07 && k === 'items' && Array.isArray(v)) {
        tuple(node, v, out, at, depth);
        continue;
      }
      // Said by tuple() beside a list of items; beside one items schema it means nothing in draft-07.
      if (draft07 && k === 'additionalItems') continue;
      if (draft07 && k === 'prefixItems') {
        errors.push({ path: ptr(path + at, k), message: '`prefixItems` is not a draft-07 keyword: a draft-07 tuple is `items` as a list, followed by `additionalItems`.' });
        continue;
      }
      if (k === 'properties' && isPlainObject(v)) {
        const props: Record<string, unknown> = {};
        for (const [name, s] of Object.entries(v)) setOwn(props, name, expand(s, ptr(at, k, name), depth + 1));
        setOwn(out, k, props);
      } else if (k === 'items' || k === 'additionalProperties') setOwn(out, k, expand(v, ptr(at, k), depth + 1));
      else if (k === 'prefixItems' && Array.isArray(v)) setOwn(out, k, v.map((s, i) => expand(s, ptr(at, k, i), depth + 1)));
      else setOwn(out, k, v);
    }
    chain.pop();
    origins.set(out, path + at);
    return out;
  };

  /**
   * A draft-07 tuple as 2020-12 says it: the list of `items` is `prefixItems`, and
   * `additionalItems` becomes `items`.
   */
  const tuple = (node: Record<string, unknown>, items: unknown[], out: Record<string, unknown>, at: string, depth: number) => {
    setOwn(out, 'prefixItems', items.map((s, i) => expand(s, ptr(at, 'items', i), depth + 1)));
    if ('additionalItems' in node) return setOwn(out, 'items', expand(node.additionalItems, ptr(at, 'additionalItems'), depth + 1));
    // Nothing can follow a list that maxItems already fills.
    if (!(isWhole(node.maxItems) && node.maxItems <= items.length)) {
      errors.push({
        path: ptr(path + at, 'items'),
        message: 'A tuple (`items` as a list) must say what may follow the listed items: give `additionalItems` (false, or a schema), or a `maxItems` no larger than the list.',
      });
    }
    setOwn(out, 'items', false);
  };

  let schema = expand(root, '', 1) as Record<string, unknown>;
  // What is kept and listed says 2020-12, whatever spelling of a dialect Toolport takes it came in.
  if (dialect && isPlainObject(schema) && '$schema' in schema) {
    const origin = origins.get(schema);
    schema = { ...schema, $schema: SCHEMA_DIALECT };
    if (origin !== undefined) origins.set(schema, origin);
  }
  return tooLarge ? undefined : { schema, origins };
}

function checkNode(node: unknown, path: string, depth: number, root: boolean, errors: FieldError[], st: SchemaCheckState, origins?: Origins) {
  // A subschema that came through a `$ref` is reported where it is written.
  if (origins && typeof node === 'object' && node !== null) path = origins.get(node) ?? path;
  const err = (p: string, message: string) => errors.push({ path: p, message });
  if (node === true) return err(path, '`true` accepts any value; give a schema with a `type` and bounds.');
  if (node === false) return err(path, '`false` is only accepted as `additionalProperties` or `items`.');
  if (!isPlainObject(node)) return err(path, `A schema must be an object (got ${describeValue(node)}).`);
  if (depth > SCHEMA_LIMITS.depth) {
    return err(path, `The inputSchema nests too deeply: at most ${SCHEMA_LIMITS.depth} levels of subschemas.`);
  }
  // A local reference still here could not be written out, and writeOut said why, here.
  const local = typeof node.$ref === 'string' && node.$ref.startsWith('#');
  if (local && errors.some((e) => e.path === path || e.path.startsWith(path + '/'))) return;

  let refused = false;
  for (const key of Object.keys(node)) {
    if (KEYWORDS.has(key)) continue;
    refused = true;
    const at = ptr(path, key);
    if (key === '$ref') {
      const ref = node[key];
      if (typeof ref === 'string' && ref.startsWith('#')) {
        err(at, `\`$ref\` to \`${ref}\` could not be written out here.`);
      } else {
        err(at, `Remote \`$ref\` (${describeValue(ref)}) is refused: Toolport never fetches schemas; write the subschema out in place.`);
      }
    } else if (key in REFUSED) {
      err(at, REFUSED[key]! + '.');
    } else {
      err(at, `\`${key}\` is not a supported keyword; an inputSchema may use: ${[...KEYWORDS].join(', ')}.`);
    }
  }

  if ('$schema' in node && (!root || node.$schema !== SCHEMA_DIALECT)) {
    err(ptr(path, '$schema'), root
      ? `\`$schema\` may be "${SCHEMA_DIALECT}" (JSON Schema 2020-12, also what no \`$schema\` means) or "${DRAFT_07}" (rewritten to 2020-12).`
      : '`$schema` is only accepted at the top of the inputSchema.');
  }

  // type
  const types = new Set<string>();
  if ('type' in node) {
    const t = node.type;
    const list = Array.isArray(t) ? t : [t];
    const valid = list.length > 0 && list.every((x) => typeof x === 'string' && TYPES.has(x)) && new Set(list).size === list.length;
    if (!valid) err(ptr(path, 'type'), `\`type\` must be one of ${[...TYPES].join(', ')}, or a list of distinct ones (got ${describeValue(t)}).`);
    else for (const x of list) types.add(x as string);
  }
  const hasEnum = 'enum' in node || 'const' in node;
  if (!('type' in node) && !hasEnum && !refused && !root) err(path, 'Give a `type` (or an `enum`/`const`): Toolport bounds every value by its type.');
  if (types.has('integer')) types.add('number');

  const needType = (keys: string[], type: string, what: string) => {
    for (const k of keys) {
      if (k in node && !types.has(type)) err(ptr(path, k), `\`${k}\` applies to ${what}; add "${type}" to this schema's \`type\`.`);
    }
  };
  needType(STRING_KEYWORDS, 'string', 'strings');
  needType(NUMBER_KEYWORDS, 'number', 'numbers');
  needType(ARRAY_KEYWORDS, 'array', 'arrays');
  needType(OBJECT_KEYWORDS, 'object', 'objects');

  // enum / const
  if ('enum' in node) {
    const e = node.enum;
    if (!Array.isArray(e) || e.length === 0 || e.length > SCHEMA_LIMITS.enumValues) {
      err(ptr(path, 'enum'), `\`enum\` must be a list of 1 to ${SCHEMA_LIMITS.enumValues} values.`);
    } else {
      const seen = new Set<string>();
      e.forEach((v, i) => {
        const c = canonicalJson(v);
        if (seen.has(c)) err(ptr(path, 'enum', i), `${describeValue(v)} is listed twice.`);
        seen.add(c);
        checkJsonLiteral(v, ptr(path, 'enum', i), errors);
      });
    }
  }
  if ('const' in node) checkJsonLiteral(node.const, ptr(path, 'const'), errors);

  // annotations
  for (const [k, max] of [['description', SCHEMA_LIMITS.description], ['title', SCHEMA_LIMITS.title]] as const) {
    if (!(k in node)) continue;
    const v = node[k];
    if (typeof v !== 'string') err(ptr(path, k), `\`${k}\` must be a string.`);
    else if (codePoints(v) > max) err(ptr(path, k), `\`${k}\` is too long: at most ${max} characters (got ${codePoints(v)}).`);
    else {
      const problem = textProblem(v, true);
      if (problem) err(ptr(path, k), `\`${k}\` ${problem}.`);
    }
  }
  if ('examples' in node && !Array.isArray(node.examples)) err(ptr(path, 'examples'), '`examples` must be a list.');

  // strings
  if (types.has('string') && !hasEnum && !('maxLength' in node)) {
    err(path, `A string must have a \`maxLength\` (at most ${SCHEMA_LIMITS.maxLength}).`);
  }
  const bound = (k: string, max: number) => {
    if (!(k in node)) return undefined;
    const v = node[k];
    if (!isWhole(v) || v < 0 || v > max) {
      err(ptr(path, k), `\`${k}\` must be a whole number from 0 to ${max} (got ${describeValue(v)}).`);
      return undefined;
    }
    return v;
  };
  const minLength = bound('minLength', SCHEMA_LIMITS.maxLength);
  const maxLength = bound('maxLength', SCHEMA_LIMITS.maxLength);
  if (minLength !== undefined && maxLength !== undefined && minLength > maxLength) {
    err(ptr(path, 'minLength'), `\`minLength\` (${minLength}) is greater than \`maxLength\` (${maxLength}).`);
  }
  if ('format' in node && !(SCHEMA_FORMATS as readonly unknown[]).includes(node.format)) {
    err(ptr(path, 'format'), `\`format\` must be one of ${SCHEMA_FORMATS.join(', ')} (got ${describeValue(node.format)}).`);
  }
  if ('pattern' in node) {
    const p = node.pattern;
    if (typeof node.maxLength === 'number' && node.maxLength > SCHEMA_LIMITS.patternInput) {
      err(ptr(path, 'maxLength'), `A string with a \`pattern\` may be at most ${SCHEMA_LIMITS.patternInput} characters long (\`maxLength\` is ${node.maxLength}).`);
    }
    if (typeof p !== 'string') err(ptr(path, 'pattern'), '`pattern` must be a string.');
    else if (!st.patterns.has(p) && st.patterns.add(p).size > SCHEMA_LIMITS.patterns) {
      err(ptr(path, 'pattern'), `Too many patterns: at most ${SCHEMA_LIMITS.patterns} per manifest.`);
    } else {
      const problem = patternProblem(p, st.deadline);
      if (problem) err(ptr(path, 'pattern'), `The pattern ${describeValue(p)} ${problem}.`);
    }
  }

  // numbers
  const numbers: Record<string, number> = {};
  for (const k of NUMBER_KEYWORDS) {
    if (!(k in node)) continue;
    const v = node[k];
    if (!isFiniteNumber(v)) err(ptr(path, k), `\`${k}\` must be a finite number (got ${describeValue(v)}).`);
    else if (k === 'multipleOf' && v <= 0) err(ptr(path, k), '`multipleOf` must be greater than 0.');
    else numbers[k] = v;
  }
  const lo = numbers.minimum ?? numbers.exclusiveMinimum;
  const hi = numbers.maximum ?? numbers.exclusiveMaximum;
  if (lo !== undefined && hi !== undefined && lo > hi) {
    err(ptr(path, 'minimum' in numbers ? 'minimum' : 'exclusiveMinimum'), `The lower bound (${lo}) is greater than the upper bound (${hi}).`);
  }

  // arrays
  if (types.has('array')) {
    if (!('maxItems' in node)) err(path, `An array must have \`maxItems\` (at most ${SCHEMA_LIMITS.maxItems}).`);
    if (!('items' in node)) err(path, 'An array must say what its items are: give `items` (a schema, or false after `prefixItems`).');
  }
  const minItems = bound('minItems', SCHEMA_LIMITS.maxItems);
  const maxItems = bound('maxItems', SCHEMA_LIMITS.maxItems);
  if (minItems !== undefined && maxItems !== undefined && minItems > maxItems) {
    err(ptr(path, 'minItems'), `\`minItems\` (${minItems}) is greater than \`maxItems\` (${maxItems}).`);
  }
  if ('prefixItems' in node) {
    const pi = node.prefixItems;
    if (!Array.isArray(pi) || pi.length === 0 || pi.length > SCHEMA_LIMITS.prefixItems) {
      err(ptr(path, 'prefixItems'), `\`prefixItems\` must be a list of 1 to ${SCHEMA_LIMITS.prefixItems} schemas.`);
    } else pi.forEach((s, i) => checkNode(s, ptr(path, 'prefixItems', i), depth + 1, false, errors, st, origins));
  }
  if (Array.isArray(node.items)) {
    err(ptr(path, 'items'), `\`items\` as a list is a draft-07 tuple: in 2020-12 list them in \`prefixItems\` and give \`items\` for what may follow (false, or a schema), or declare "$schema": "${DRAFT_07}".`);
  } else if ('items' in node && node.items !== false) checkNode(node.items, ptr(path, 'items'), depth + 1, false, errors, st, origins);

  // objects
  if (types.has('object') && !('additionalProperties' in node)) {
    err(path, 'An object must say `"additionalProperties": false` (or give a schema for extra keys).');
  }
  if ('additionalProperties' in node && node.additionalProperties !== false) {
    checkNode(node.additionalProperties, ptr(path, 'additionalProperties'), depth + 1, false, errors, st, origins);
  }
  let names: Set<string> | undefined;
  if ('properties' in node) {
    const props = node.properties;
    if (!isPlainObject(props)) err(ptr(path, 'properties'), '`properties` must be an object of named schemas.');
    else {
      names = new Set();
      for (const name of Object.keys(props)) {
        const at = ptr(path, 'properties', name);
        st.properties++;
        const problem = propertyNameProblem(name);
        if (problem) err(at, problem);
        names.add(name);
        checkNode(props[name], at, depth + 1, false, errors, st, origins);
      }
    }
  }
  if ('required' in node) {
    const req = node.required;
    if (!Array.isArray(req) || !req.every((r) => typeof r === 'string')) err(ptr(path, 'required'), '`required` must be a list of property names.');
    else {
      const seen = new Set<string>();
      req.forEach((r: string, i) => {
        if (seen.has(r)) err(ptr(path, 'required', i), `\`${r}\` is listed twice.`);
        else if (!names?.has(r)) err(ptr(path, 'required', i), `\`${r}\` is required but not declared in \`properties\`.`);
        seen.add(r);
      });
    }
  }
}

function propertyNameProblem(name: string): string | null {
  if (RESERVED_KEYS.has(name)) return `\`${name}\` cannot be a property name.`;
  if (name.length === 0 || codePoints(name) > SCHEMA_LIMITS.propertyName) {
    return `A property name must be 1 to ${SCHEMA_LIMITS.propertyName} characters.`;
  }
  const problem = textProblem(name, false);
  if (problem) return `The property name ${describeValue(name)} ${problem}.`;
  // Arguments are normalised to NFC before checking, so a name in another form could never match.
  if (name.normalize('NFC') !== name) return `The property name ${describeValue(name)} must be in Unicode NFC form.`;
  return null;
}

/** An enum or const value: strings must be valid, NFC text (arguments are normalised to NFC). */
function checkJsonLiteral(v: unknown, path: string, errors: FieldError[]) {
  if (typeof v === 'string') {
    const problem = textProblem(v, true);
    if (problem) errors.push({ path, message: `This value ${problem}.` });
    else if (v.normalize('NFC') !== v) errors.push({ path, message: 'This value must be in Unicode NFC form: arguments are normalised to NFC before they are compared.' });
  }
}
