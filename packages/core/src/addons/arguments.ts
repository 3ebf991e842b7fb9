import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { fastFormats } from 'ajv-formats/dist/formats.js';
import { ToolportError } from '../errors';
import {
  LONE_SURROGATE, PATTERN_COMPILE_STEPS, PATTERN_STEP_OVERHEAD, RESERVED_KEYS, SCHEMA_FORMATS, SCHEMA_LIMITS,
  PatternRefusal, canonicalJson, codePoints, linearPattern,
} from './schema';
import type { ArgumentCheck, JsonSchema } from './types';

export const ARGUMENT_LIMITS = {
  /** Levels of nested objects and lists, the arguments object being level 1. */
  depth: 16,
  /** Values of any kind, containers included. */
  nodes: 10_000,
  /** The arguments as JSON, in UTF-8 bytes. */
  bytes: 256 * 1024,
  /** Problems reported for one call; the rest are summarised in one sentence. */
  problems: 20,
  /**
   * Pattern work for one call, in steps (characters × (program + PATTERN_STEP_OVERHEAD), and each
   * compile): two of the costliest checks a manifest may declare.
   */
  patternSteps: 2 * SCHEMA_LIMITS.patternSteps,
} as const;

/** Compiled validators kept by schema text; evicted ones are also dropped from Ajv's own cache. */
const MAX_VALIDATORS = 2_000;

/** The pattern work of the check under way (checkArguments resets it); validation is synchronous. */
const patternWork = { steps: 0, exceeded: false };

/**
 * Linear-time (RE2), counted against the call's budget: past it a check fails. Ajv's allErrors
 * tests a pattern even when maxLength failed, so the input is bounded here too.
 */
function testPattern(source: string, s: string): boolean {
  if (s.length > SCHEMA_LIMITS.patternInput) return false;
  let compiled;
  try {
    compiled = linearPattern(source); // cached; compiled again only after eviction
  } catch {
    return false; // refused at registration; validatorFor refuses it first
  }
  const { pattern, fresh } = compiled;
  const cost = s.length * (pattern.steps + PATTERN_STEP_OVERHEAD) + (fresh ? pattern.steps * PATTERN_COMPILE_STEPS : 0);
  if (patternWork.steps + cost > ARGUMENT_LIMITS.patternSteps) {
    patternWork.exceeded = true;
    return false;
  }
  patternWork.steps += cost;
  return pattern.test(s);
}

/** Ajv's `code.regExp`, so no pattern ever reaches a backtracking RegExp. */
const linearRegExp = Object.assign(
  (source: string, flags: string) => {
    if (flags !== 'u') throw new Error(`patterns are read with the u flag only (got "${flags}")`);
    try {
      linearPattern(source);
    } catch (err) {
      if (err instanceof PatternRefusal) throw new Error(`the pattern ${JSON.stringify(source)} ${err.message}`);
      throw err;
    }
    return { test: (s: string) => testPattern(source, s), toString: () => `re2js:${source}` };
  },
  { code: 'linearRegExp' },
);

// One Ajv for the process: building one costs far more than a validation (PERFORMANCE.md).
const ajv = new Ajv2020({
  allErrors: true,
  verbose: true,
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  strict: true,
  strictTuples: false,
  allowUnionTypes: true,
  ownProperties: true,
  addUsedSchema: false,
  unicodeRegExp: true,
  code: { regExp: linearRegExp },
  logger: false,
});

/**
 * Longest string each format can match. With allErrors a format is tested even when maxLength
 * failed, and some of ajv-formats' expressions (email) grow super-linearly on long input.
 */
const FORMAT_MAX_LENGTH: Record<(typeof SCHEMA_FORMATS)[number], number> = {
  'date-time': 64, date: 16, time: 48, email: 320, hostname: 254, ipv4: 15, ipv6: 64, uri: 8_192, uuid: 45,
};
for (const name of SCHEMA_FORMATS) {
  const def = fastFormats[name];
  const check = def instanceof RegExp ? def : typeof def === 'object' && 'validate' in def ? def.validate : def;
  const test = check instanceof RegExp ? (s: string) => check.test(s) : (check as (s: string) => boolean);
  const max = FORMAT_MAX_LENGTH[name];
  ajv.addFormat(name, { type: 'string', validate: (s: string) => s.length <= max && test(s) });
}

// Not a per-services cache (caches.ts): a validator belongs to its schema object and goes with it.
const byObject = new WeakMap<object, ValidateFunction>();
const byText = new Map<string, ValidateFunction>();

/** By object identity first (the call path reuses one cached schema object), then canonical JSON. */
export function validatorFor(schema: JsonSchema): ValidateFunction {
  const hit = byObject.get(schema);
  if (hit) return hit;
  const text = canonicalJson(schema);
  let validate = byText.get(text);
  if (validate) {
    byText.delete(text);
    byText.set(text, validate);
  } else {
    try {
      // Compile a private copy, so Ajv's cache entry can be removed on eviction; in the schema's
      // own key order, which is the order problems and property lists are told in.
      validate = ajv.compile(JSON.parse(JSON.stringify(schema)) as JsonSchema);
    } catch (err) {
      throw new ToolportError('VALIDATION', `The input schema cannot be enforced: ${(err as Error).message}.`);
    }
    byText.set(text, validate);
    if (byText.size > MAX_VALIDATORS) {
      const [oldText, old] = byText.entries().next().value!;
      byText.delete(oldText);
      ajv.removeSchema(old.schema as object);
    }
  }
  byObject.set(schema, validate);
  return validate;
}

class Refusal extends Error {}

interface Walk {
  nodes: number;
  bytes: number;
  path: (string | number)[];
  problems: string[];
}

const IDENT = /^[\p{L}_$][\p{L}\p{M}\p{N}_$]*$/u;

/** `filters.tags[2]` */
function argumentPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (IDENT.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

const kindOf = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'string' ? 'text' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

const isPlain = (v: object) => {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** Exceeded bounds abort at once, before more work is spent; value problems are collected. */
function copy(v: unknown, depth: number, w: Walk): unknown {
  if (++w.nodes > ARGUMENT_LIMITS.nodes) {
    throw new Refusal(`The arguments hold too many values: at most ${ARGUMENT_LIMITS.nodes.toLocaleString('en-US')}.`);
  }
  switch (typeof v) {
    case 'string': {
      // UTF-8 takes at least one byte per UTF-16 unit: a cheap bound before normalising.
      if (w.bytes + v.length > ARGUMENT_LIMITS.bytes) throw tooLarge();
      if (LONE_SURROGATE.test(v)) {
        w.problems.push(`Argument \`${argumentPath(w.path)}\` contains a lone UTF-16 surrogate, which is not valid Unicode; send valid text.`);
        return v;
      }
      const s = v.normalize('NFC');
      w.bytes += Buffer.byteLength(s) + 2;
      if (w.bytes > ARGUMENT_LIMITS.bytes) throw tooLarge();
      return s;
    }
    case 'number':
      w.bytes += 8;
      if (!Number.isFinite(v)) {
        w.problems.push(`Argument \`${argumentPath(w.path)}\` must be a finite number.`);
      } else if (Number.isInteger(v) && !Number.isSafeInteger(v)) {
        w.problems.push(`Argument \`${argumentPath(w.path)}\` is too large to be exact: whole numbers must be between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}.`);
      }
      return v;
    case 'boolean':
      w.bytes += 5;
      return v;
    case 'object': {
      if (v === null) {
        w.bytes += 4;
        return v;
      }
      if (depth > ARGUMENT_LIMITS.depth) {
        throw new Refusal(`The arguments are nested too deeply: at most ${ARGUMENT_LIMITS.depth} levels.`);
      }
      if (Array.isArray(v)) {
        w.bytes += 2 + v.length;
        const out: unknown[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          w.path.push(i);
          const item = v[i];
          if (item === undefined) w.problems.push(`Argument \`${argumentPath(w.path)}\` must be a JSON value.`);
          out[i] = copy(item, depth + 1, w);
          w.path.pop();
        }
        return out;
      }
      if (!isPlain(v)) {
        w.problems.push(`Argument \`${argumentPath(w.path)}\` must be a JSON value.`);
        return null;
      }
      return copyObject(v as Record<string, unknown>, depth, w);
    }
    case 'undefined':
      return undefined;
    default:
      w.problems.push(`Argument \`${argumentPath(w.path)}\` must be a JSON value.`);
      return null;
  }
}

function copyObject(v: Record<string, unknown>, depth: number, w: Walk): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(v);
  w.bytes += 2 + keys.length;
  for (const key of keys) {
    if (w.bytes + key.length > ARGUMENT_LIMITS.bytes) throw tooLarge();
    w.path.push(key);
    if (RESERVED_KEYS.has(key)) {
      w.problems.push(`Argument \`${argumentPath(w.path)}\` is not allowed: \`__proto__\`, \`constructor\` and \`prototype\` are never accepted as names.`);
    } else if (LONE_SURROGATE.test(key)) {
      w.problems.push(`The argument name \`${argumentPath(w.path.slice(0, -1).concat('…'))}\` contains a lone UTF-16 surrogate, which is not valid Unicode.`);
    } else {
      const name = key.normalize('NFC');
      w.path[w.path.length - 1] = name;
      w.bytes += Buffer.byteLength(name) + 3;
      const value = copy(v[key], depth + 1, w);
      if (value !== undefined) {
        if (Object.hasOwn(out, name)) {
          w.problems.push(`Argument \`${argumentPath(w.path)}\` is given twice (in two Unicode forms of the same name).`);
        } else if (RESERVED_KEYS.has(name)) {
          w.problems.push(`Argument \`${argumentPath(w.path)}\` is not allowed: \`__proto__\`, \`constructor\` and \`prototype\` are never accepted as names.`);
        } else out[name] = value;
      }
    }
    w.path.pop();
  }
  return out;
}

const tooLarge = () => new Refusal(`The arguments are too large: at most ${ARGUMENT_LIMITS.bytes / 1024} KB as JSON.`);

/** Returns the arguments NFC-normalised, exactly as they will be sent; or a sentence per problem. */
export function checkArguments(schema: JsonSchema, args: unknown): ArgumentCheck {
  const validate = validatorFor(schema);
  if (args === undefined) args = {};
  if (typeof args !== 'object' || args === null || Array.isArray(args) || !isPlain(args)) {
    return { ok: false, problems: [`The arguments must be a JSON object of named arguments (got ${kindOf(args)}).`] };
  }
  const w: Walk = { nodes: 0, bytes: 0, path: [], problems: [] };
  let value: Record<string, unknown>;
  try {
    w.nodes++;
    value = copyObject(args as Record<string, unknown>, 1, w);
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, problems: [err.message] };
    throw err;
  }
  const { valid, exceeded, errors } = validateOnce(validate, value);
  if (valid && w.problems.length === 0) return { ok: true, value };
  const problems = [...w.problems, ...(exceeded ? [PATTERN_BUDGET_SENTENCE] : []), ...describeErrors(errors, value)];
  return { ok: false, problems: finish(problems) };
}

/** One validation within its own pattern budget; past the budget, pattern failures say nothing. */
function validateOnce(validate: ValidateFunction, value: unknown): { valid: boolean; exceeded: boolean; errors: ErrorObject[] } {
  patternWork.steps = 0;
  patternWork.exceeded = false;
  const valid = validate(value) as boolean;
  const exceeded = patternWork.exceeded;
  patternWork.steps = 0;
  patternWork.exceeded = false;
  let errors = valid ? [] : (validate.errors ?? []);
  if (exceeded) errors = errors.filter((e) => e.keyword !== 'pattern');
  return { valid: valid && !exceeded, exceeded, errors };
}

const PATTERN_BUDGET_SENTENCE = "The arguments hold more text than this tool's patterns can check in one call; send fewer or shorter values.";

/** Problems told of one answer: a model reads them, and the add-on's developer fixes them. */
const OUTPUT_PROBLEMS = 5;

/** Null when it matches; else a sentence per problem naming the field, never its value. */
export function checkStructured(schema: JsonSchema, value: Record<string, unknown>): string[] | null {
  const { valid, exceeded, errors } = validateOnce(validatorFor(schema), value);
  if (valid) return null;
  const problems = [...(exceeded ? ['It holds more text than the patterns of the outputSchema can check in one call.'] : []), ...describeErrors(errors, value, true)];
  const unique = [...new Set(problems)];
  return unique.length <= OUTPUT_PROBLEMS ? unique : [...unique.slice(0, OUTPUT_PROBLEMS), `…and ${unique.length - OUTPUT_PROBLEMS} more.`];
}

function finish(problems: string[]): string[] {
  const unique = [...new Set(problems)];
  if (unique.length <= ARGUMENT_LIMITS.problems) return unique;
  const rest = unique.length - ARGUMENT_LIMITS.problems;
  return [...unique.slice(0, ARGUMENT_LIMITS.problems), `…and ${rest} more problem${rest === 1 ? '' : 's'}.`];
}

// ---------------------------------------------------------------------------------------------
// Ajv errors → sentences a model can act on

const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  null: 'null',
};

const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': 'a date and time such as 2026-01-31T09:30:00Z',
  date: 'a date such as 2026-01-31',
  time: 'a time such as 09:30:00Z',
  email: 'an email address such as ada@example.com',
  hostname: 'a host name such as example.com',
  ipv4: 'an IPv4 address such as 192.0.2.1',
  ipv6: 'an IPv6 address such as 2001:db8::1',
  uri: 'an absolute URI such as https://example.com/page',
  uuid: 'a UUID such as 123e4567-e89b-12d3-a456-426614174000',
};

const listOf = (values: readonly unknown[]) => values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
const names = (keys: readonly string[]) => keys.map((k) => `\`${k}\``).join(', ');

/** Pointer segments of an Ajv instancePath, numbers where the data holds a list. */
function segmentsOf(pointer: string, data: unknown): (string | number)[] {
  if (!pointer) return [];
  const out: (string | number)[] = [];
  let at = data;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      out.push(Number(seg));
      at = at[Number(seg)];
    } else {
      out.push(seg);
      at = at && typeof at === 'object' ? (at as Record<string, unknown>)[seg] : undefined;
    }
  }
  return out;
}

function describeErrors(errors: readonly ErrorObject[], data: unknown, output = false): string[] {
  // A value of the wrong type makes its other keyword errors noise.
  const wrongType = new Set(errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  const out: string[] = [];
  for (const e of errors) {
    if (e.keyword !== 'type' && wrongType.has(e.instancePath)) continue;
    out.push(describeError(e, segmentsOf(e.instancePath, data), output));
  }
  return out;
}

/** One problem as a sentence: of an argument, or (`output`) of a field of the add-on's answer. */
function describeError(e: ErrorObject, segs: (string | number)[], output = false): string {
  const at = argumentPath(segs);
  const arg = output ? (segs.length ? `\`${at}\`` : 'The result') : `Argument \`${at}\``;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const extra = argumentPath([...segs, String(p.additionalProperty)]);
      const props = Object.keys(((e.parentSchema as JsonSchema | undefined)?.properties ?? {}) as object);
      if (output) return `\`${extra}\` is not declared${props.length ? `; ${segs.length ? `\`${at}\`` : 'the result'} has ${names(props)}` : ''}.`;
      const owner = segs.length === 0 ? 'this tool' : `\`${at}\``;
      const takes = props.length ? `${owner} takes ${names(props)}` : `${owner} takes no arguments`;
      return `Unknown argument \`${extra}\`; ${takes}.`;
    }
    case 'required':
      if (output) return `\`${argumentPath([...segs, String(p.missingProperty)])}\` is missing.`;
      return `Missing required argument \`${argumentPath([...segs, String(p.missingProperty)])}\`.`;
    case 'type': {
      const types = (Array.isArray(p.type) ? p.type : String(p.type).split(',')) as string[];
      return `${arg} must be ${types.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}.`;
    }
    case 'maxLength':
      return `${arg} is too long: at most ${p.limit} characters (got ${typeof e.data === 'string' ? codePoints(e.data) : '?'}).`;
    case 'minLength':
      return `${arg} is too short: at least ${p.limit} characters (got ${typeof e.data === 'string' ? codePoints(e.data) : '?'}).`;
    case 'maximum':
      return `${arg} must be at most ${p.limit}.`;
    case 'minimum':
      return `${arg} must be at least ${p.limit}.`;
    case 'exclusiveMaximum':
      return `${arg} must be less than ${p.limit}.`;
    case 'exclusiveMinimum':
      return `${arg} must be greater than ${p.limit}.`;
    case 'multipleOf':
      return `${arg} must be a multiple of ${p.multipleOf}.`;
    case 'enum':
      return `${arg} must be one of: ${listOf(p.allowedValues as unknown[])}.`;
    case 'const':
      return `${arg} must be exactly ${JSON.stringify(p.allowedValue)}.`;
    case 'maxItems':
      return `${arg} has too many items: at most ${p.limit} (got ${Array.isArray(e.data) ? e.data.length : '?'}).`;
    case 'minItems':
      return `${arg} has too few items: at least ${p.limit} (got ${Array.isArray(e.data) ? e.data.length : '?'}).`;
    case 'items':
      return `${arg} has too many items: at most ${p.limit}.`;
    case 'pattern':
      return `${arg} must match the pattern \`${p.pattern}\`.`;
    case 'format':
      return `${arg} must be ${FORMAT_EXAMPLES[String(p.format)] ?? `a valid ${p.format}`}.`;
    case 'false schema':
      return `${arg} is not allowed.`;
    default:
      return `${arg} ${e.message ?? 'is not valid'}.`;
  }
}
