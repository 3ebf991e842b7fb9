import { createRequire } from 'node:module';
import { RE2JS, RE2Set } from 're2js';
import { ToolportError, type FieldError } from '../errors';
import type { ArgumentKind, JsonSchema, ManifestArgument } from './types';

/** Names that would reach an object's prototype when used as a key; never accepted anywhere. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/** In `u` mode a paired surrogate is one code point, so this matches lone surrogates only. */
export const LONE_SURROGATE = /\p{Surrogate}/u;
/** C0/C1 controls and the bidi overrides that can disguise text; `\n` and `\t` are allowed in prose. */
// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const CONTROL_IN_PROSE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const CONTROL_ANY = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** The dialect of every inputSchema Toolport keeps and lists (MCP's default). */
const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** The draft-07 `$schema` (what MCP SDK v1 servers and zod-to-json-schema write). */
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

/** Draft-07 is rewritten to 2020-12, so apps that only know 2020-12 can use it. */
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
  /** Instructions of a pattern's linear-time program: its matching work per character, at most. */
  patternProgram: 2_048,
  /**
   * The work of one pattern check, in steps: the string's maxLength × (the program's instructions
   * + PATTERN_STEP_OVERHEAD). A program of 896 instructions still checks 4,096 characters.
   */
  patternSteps: 4_096 * 1_024,
  /** Patterns per manifest: each costs a compile and a lint analysis. */
  patterns: 32,
  description: 1_000,
  title: 200,
} as const;

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

function kindSchema(kind: ArgumentKind): JsonSchema {
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
// Patterns: matched by a linear-time engine (RE2), linted for backtracking engines
//
// JavaScript's backtracking RegExp can take seconds on a short string, so patterns run on re2js.
// They are written in JavaScript's `u` syntax, so they are translated to RE2 with JavaScript's
// meaning; what RE2 cannot do in linear time (lookarounds, backreferences) is refused.

/** JavaScript's `\s`: WhiteSpace and LineTerminator (ECMA-262), as [from, to] code points. */
const JS_SPACE: readonly (readonly [number, number])[] = [
  [0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029],
  [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff],
];
const DIGIT: readonly (readonly [number, number])[] = [[0x30, 0x39]];
const WORD: readonly (readonly [number, number])[] = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
/** JavaScript's `.` without the `s` flag: anything but a line terminator. */
const LINE_TERMINATORS: readonly (readonly [number, number])[] = [[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]];

const hex = (cp: number) => `\\x{${cp.toString(16).toUpperCase()}}`;
/** A code point as RE2 reads it literally, in a class or out of one. */
const re2Char = (cp: number) => (/[0-9A-Za-z]/.test(String.fromCodePoint(cp)) ? String.fromCodePoint(cp) : hex(cp));
const re2Ranges = (ranges: readonly (readonly [number, number])[]) =>
  ranges.map(([a, b]) => (a === b ? re2Char(a) : `${re2Char(a)}-${re2Char(b)}`)).join('');
/** The code points not in `ranges` (sorted, disjoint), as ranges. */
function complement(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  let next = 0;
  for (const [a, b] of ranges) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= 0x10ffff) out.push([next, 0x10ffff]);
  return out;
}

/** General_Category values by their long names (JavaScript takes both, RE2 the short ones). */
const GENERAL_CATEGORIES: Record<string, string> = {
  Letter: 'L', Cased_Letter: 'LC', Uppercase_Letter: 'Lu', Lowercase_Letter: 'Ll', Titlecase_Letter: 'Lt',
  Modifier_Letter: 'Lm', Other_Letter: 'Lo', Mark: 'M', Combining_Mark: 'M', Nonspacing_Mark: 'Mn',
  Spacing_Mark: 'Mc', Enclosing_Mark: 'Me', Number: 'N', Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl',
  Other_Number: 'No', Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc', Dash_Punctuation: 'Pd',
  Open_Punctuation: 'Ps', Close_Punctuation: 'Pe', Initial_Punctuation: 'Pi', Final_Punctuation: 'Pf',
  Other_Punctuation: 'Po', Symbol: 'S', Math_Symbol: 'Sm', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk',
  Other_Symbol: 'So', Separator: 'Z', Space_Separator: 'Zs', Line_Separator: 'Zl', Paragraph_Separator: 'Zp',
  Other: 'C', Control: 'Cc', cntrl: 'Cc', Format: 'Cf', Surrogate: 'Cs', Private_Use: 'Co', Unassigned: 'Cn',
};
const SHORT_CATEGORIES = new Set(Object.values(GENERAL_CATEGORIES));

/** Why a pattern cannot be used, said to the add-on developer; thrown while reading it. */
export class PatternRefusal extends Error {}
const NESTED_REPEATS = 'repeats too often for linear-time matching: counted repetitions nested in each other multiply (`(x{1,60}){1,60}` is 3,600), and may make at most 1000; use `*` or `+` and let `maxLength` bound the length';

interface Piece {
  re2: string;
  /** An upper bound of its RE2 program size, known before compiling it. */
  size: number;
  /** Its outermost counted repetitions (`{n,m}`), each with those nested in it. */
  repeats?: Repeat[];
}
interface Repeat { count: number; inner: Repeat[] }

/**
 * RE2's rule for counted repetitions nested in each other (its `repeatIsValid`): they may make at
 * most 1000 copies, each level dividing what is left; `{0}` copies nothing.
 */
function repeatsFit(r: Repeat, left: number): boolean {
  if (r.count === 0) return true;
  if (r.count > left) return false;
  return r.inner.every((x) => repeatsFit(x, Math.trunc(left / r.count)));
}
const repeatsOf = (pieces: Piece[]) => pieces.flatMap((p) => p.repeats ?? []);

/** From JavaScript `u` syntax to RE2 with the same meaning; notes each `{n,m}` for the lint. */
class PatternReader {
  private i = 0;
  /** [start, end) of each `{n,m}` with m > n, in UTF-16 units of the source. */
  readonly ranges: [number, number, number][] = [];
  constructor(private readonly src: string) {}

  read(): Piece {
    const out = this.disjunction();
    if (this.i < this.src.length) throw new PatternRefusal('could not be read');
    return out;
  }

  private peek(k = 0) { return this.src[this.i + k]; }
  private eat(s: string) {
    if (this.src.startsWith(s, this.i)) { this.i += s.length; return true; }
    return false;
  }
  private nextCodePoint() {
    const cp = this.src.codePointAt(this.i)!;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }

  private disjunction(): Piece {
    const alts = [this.alternative()];
    while (this.eat('|')) alts.push(this.alternative());
    if (alts.length === 1) return alts[0]!;
    return { re2: alts.map((a) => a.re2).join('|'), size: alts.reduce((n, a) => n + a.size + 1, 0), repeats: repeatsOf(alts) };
  }

  private alternative(): Piece {
    const terms: Piece[] = [];
    while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') terms.push(this.term());
    return { re2: terms.map((t) => t.re2).join(''), size: terms.reduce((n, t) => n + t.size, 0), repeats: repeatsOf(terms) };
  }

  private term(): Piece {
    if (this.eat('^')) return { re2: '^', size: 1 };
    if (this.eat('$')) return { re2: '$', size: 1 };
    if (this.eat('\\b')) return { re2: '\\b', size: 1 };
    if (this.eat('\\B')) return { re2: '\\B', size: 1 };
    if (this.src.startsWith('(?=', this.i) || this.src.startsWith('(?!', this.i) || this.src.startsWith('(?<=', this.i) || this.src.startsWith('(?<!', this.i)) {
      throw new PatternRefusal('uses a lookahead or lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`), which linear-time matching cannot do; say the condition without it, or check it in the add-on');
    }
    const atom = this.atom();
    return this.quantifier(atom);
  }

  private quantifier(atom: Piece): Piece {
    const start = this.i;
    let min: number;
    let max: number;
    const c = this.peek();
    if (c === '*') { this.i++; min = 0; max = Infinity; }
    else if (c === '+') { this.i++; min = 1; max = Infinity; }
    else if (c === '?') { this.i++; min = 0; max = 1; }
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return atom;
      this.i += m[0].length;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (min > 1000 || (max !== Infinity && max > 1000)) {
        throw new PatternRefusal(`repeats more than 1000 times (\`${m[0]}\`), which a linear-time engine writes out one by one; use \`*\` or \`+\` and let \`maxLength\` bound the length`);
      }
      if (max !== Infinity && max > min) this.ranges.push([start, this.i, min]);
    } else return atom;
    const quant = this.src.slice(start, this.i);
    this.eat('?'); // lazy or greedy: the same for a test
    const re2 = atom.re2 + quant;
    const size = max === Infinity ? Math.max(min, 1) * atom.size + 1 : max * atom.size + (max - min);
    if (c !== '{') return { re2, size, repeats: atom.repeats };
    const repeat: Repeat = { count: max === Infinity ? min : max, inner: atom.repeats ?? [] };
    if ((min >= 2 || max >= 2) && !repeatsFit(repeat, 1000)) throw new PatternRefusal(NESTED_REPEATS);
    return { re2, size, repeats: [repeat] };
  }

  private atom(): Piece {
    const c = this.peek();
    if (c === '.') { this.i++; return { re2: `[^${re2Ranges(LINE_TERMINATORS)}]`, size: 1 }; }
    if (c === '[') return this.characterClass();
    if (c === '(') return this.group();
    if (c === '\\') return this.atomEscape();
    return { re2: re2Char(this.nextCodePoint()), size: 1 };
  }

  private group(): Piece {
    this.i++;
    if (this.eat('?:')) { /* non-capturing */ }
    else if (this.peek() === '?' && this.peek(1) === '<') {
      const end = this.src.indexOf('>', this.i);
      this.i = end + 1;
    } else if (this.peek() === '?') {
      throw new PatternRefusal('uses inline flags such as `(?i:...)`; spell both cases out instead, e.g. `[aA]`');
    }
    const body = this.disjunction();
    if (!this.eat(')')) throw new PatternRefusal('could not be read');
    return { re2: `(?:${body.re2})`, size: body.size, repeats: body.repeats };
  }

  private atomEscape(): Piece {
    this.i++;
    const c = this.peek()!;
    if (/[1-9]/.test(c) || c === 'k') {
      throw new PatternRefusal('uses a backreference (`\\1`, `\\k<name>`), which linear-time matching cannot do; remove it, or check it in the add-on');
    }
    const set = this.classEscape();
    if (set !== undefined) return { re2: `[${set}]`, size: 1 };
    return { re2: re2Char(this.characterEscape()), size: 1 };
  }

  /** `\d \D \w \W \s \S \p{..} \P{..}` (after the backslash) as the inside of an RE2 class, or `\p{..}`. */
  private classEscape(): string | undefined {
    const c = this.peek();
    const sets: Record<string, readonly (readonly [number, number])[]> = { d: DIGIT, w: WORD, s: JS_SPACE };
    if (c && c.toLowerCase() in sets && 'dDwWsS'.includes(c)) {
      this.i++;
      const ranges = sets[c.toLowerCase()]!;
      return re2Ranges(c === c.toLowerCase() ? ranges : complement(ranges));
    }
    if (c === 'p' || c === 'P') {
      const end = this.src.indexOf('}', this.i);
      const body = this.src.slice(this.i + 2, end);
      this.i = end + 1;
      return this.property(body, c === 'P');
    }
    return undefined;
  }

  private property(body: string, negated: boolean): string {
    const [name, value] = body.includes('=') ? body.split('=') as [string, string] : [undefined, body];
    const p = negated ? '\\P' : '\\p';
    if (name === undefined || name === 'General_Category' || name === 'gc') {
      const short = GENERAL_CATEGORIES[value] ?? (SHORT_CATEGORIES.has(value) ? value : undefined);
      if (short) return `${p}{${short}}`;
      if (name === undefined && value === 'Any') return `${p}{Any}`;
      if (name === undefined && value === 'ASCII') return re2Ranges(negated ? complement([[0, 0x7f]]) : [[0, 0x7f]]);
      if (name === undefined && value === 'Assigned') return `${negated ? '\\p' : '\\P'}{Cn}`;
    } else if ((name === 'Script' || name === 'sc') && /^[A-Za-z_]+$/.test(value)) {
      // RE2 knows scripts by their full names (`Greek`, not `Grek`); compiling tells.
      return `${p}{${value}}`;
    }
    throw new PatternRefusal(`uses the Unicode property \`\\${negated ? 'P' : 'p'}{${body}}\`, which the linear-time engine does not have; use a General_Category such as \`\\p{L}\` or \`\\p{Nd}\`, a script by its full name such as \`\\p{Script=Greek}\`, \`\\p{Any}\` or \`\\p{ASCII}\``);
  }

  /** One code point from an escape (after the backslash) that is not a class escape. */
  private characterEscape(): number {
    const c = this.peek()!;
    const controls: Record<string, number> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b };
    if (c in controls) { this.i++; return controls[c]!; }
    if (c === '0') { this.i++; return 0; }
    if (c === 'c') { this.i += 2; return this.src.charCodeAt(this.i - 1) % 32; }
    if (c === 'x') { this.i += 3; return parseInt(this.src.slice(this.i - 2, this.i), 16); }
    if (c === 'u') {
      if (this.peek(1) === '{') {
        const end = this.src.indexOf('}', this.i);
        const cp = parseInt(this.src.slice(this.i + 2, end), 16);
        this.i = end + 1;
        return cp;
      }
      const lead = parseInt(this.src.slice(this.i + 1, this.i + 5), 16);
      this.i += 5;
      // In `u` mode an escaped surrogate pair is one code point.
      const m = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(this.src.slice(this.i));
      if (lead >= 0xd800 && lead <= 0xdbff && m) {
        this.i += 6;
        return 0x10000 + ((lead - 0xd800) << 10) + (parseInt(m[1]!, 16) - 0xdc00);
      }
      return lead;
    }
    return this.nextCodePoint(); // an identity escape: `\.`, `\/`, `\-`...
  }

  private characterClass(): Piece {
    this.i++;
    const negated = this.eat('^');
    let inside = '';
    let empty = true;
    while (this.peek() !== ']') {
      const from = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && typeof from === 'number') {
        this.i++;
        const to = this.classAtom() as number; // `u` mode refuses a range to a class escape
        inside += `${re2Char(from)}-${re2Char(to)}`;
      } else inside += typeof from === 'number' ? re2Char(from) : from;
      empty = false;
    }
    this.i++;
    // `[]` matches nothing and `[^]` anything; RE2 has no empty class, so say them with ranges.
    if (empty) return { re2: negated ? '[\\x{0}-\\x{10FFFF}]' : '[^\\x{0}-\\x{10FFFF}]', size: 1 };
    return { re2: `[${negated ? '^' : ''}${inside}]`, size: 1 };
  }

  /** A code point, or a set as the inside of an RE2 class. */
  private classAtom(): number | string {
    if (this.peek() !== '\\') return this.nextCodePoint();
    this.i++;
    if (this.eat('b')) return 0x08;
    if (this.eat('-')) return 0x2d;
    return this.classEscape() ?? this.characterEscape();
  }
}

/** A pattern read and compiled for linear-time matching. */
export interface LinearPattern {
  re2: string;
  /** Its program size: an upper bound of the engine's work per character. */
  steps: number;
  /** Where a counted repetition `{n,m}` (m > n) stands: [start, end, n]. */
  ranges: readonly [number, number, number][];
  test(s: string): boolean;
}

/** The engine's work per character beyond the program, when its state cache overflows. */
export const PATTERN_STEP_OVERHEAD = 128;
/** What one compile costs, in steps per instruction of the program (with room). */
export const PATTERN_COMPILE_STEPS = 1_024;
/** Memory for each pattern's cache of automaton states; past it the engine simulates instead. */
const PATTERN_STATE_MEMORY = 64 * 1024;

/** Compiled patterns by source; bounded in number and in program size (each keeps its state cache). */
const compiledPatterns = new Map<string, LinearPattern | PatternRefusal>();
let compiledSteps = 0;
const MAX_COMPILED_PATTERNS = 500;
const MAX_COMPILED_STEPS = 250_000;

/** `fresh` when compiled just now. Throws only PatternRefusal. */
export function linearPattern(p: string): { pattern: LinearPattern; fresh: boolean } {
  const hit = compiledPatterns.get(p);
  if (hit !== undefined) {
    compiledPatterns.delete(p);
    compiledPatterns.set(p, hit);
    if (hit instanceof PatternRefusal) throw hit;
    return { pattern: hit, fresh: false };
  }
  let result: LinearPattern | PatternRefusal;
  try {
    result = compileLinear(p);
  } catch (err) {
    if (!(err instanceof PatternRefusal)) throw err;
    result = err;
  }
  compiledPatterns.set(p, result);
  if (!(result instanceof PatternRefusal)) compiledSteps += result.steps;
  while (compiledPatterns.size > MAX_COMPILED_PATTERNS || compiledSteps > MAX_COMPILED_STEPS) {
    const [oldKey, old] = compiledPatterns.entries().next().value!;
    compiledPatterns.delete(oldKey);
    if (!(old instanceof PatternRefusal)) compiledSteps -= old.steps;
  }
  if (result instanceof PatternRefusal) throw result;
  return { pattern: result, fresh: true };
}

function compileLinear(p: string): LinearPattern {
  if (p.length > SCHEMA_LIMITS.patternLength) throw new PatternRefusal(`is too long: at most ${SCHEMA_LIMITS.patternLength} characters (got ${p.length})`);
  try {
    new RegExp(p, 'u');
  } catch (err) {
    throw new PatternRefusal(`is not a valid regular expression with the \`u\` flag (${(err as Error).message})`);
  }
  const reader = new PatternReader(p);
  const piece = reader.read();
  const tooLarge = (n: number, exact: boolean) => new PatternRefusal(`is too large for linear-time matching: its program has ${exact ? `${n.toLocaleString('en-US')} steps, more than` : 'far more steps than'} ${SCHEMA_LIMITS.patternProgram.toLocaleString('en-US')}; every repetition \`{n,m}\` is written out m times, so use \`*\` or \`+\` and let \`maxLength\` bound the length`);
  // Refused before compiling (the bound is loose, so with room): compiling a program that large would itself take long.
  if (piece.size > SCHEMA_LIMITS.patternProgram * 2) throw tooLarge(piece.size, false);
  let steps: number;
  let set: RE2Set;
  try {
    steps = RE2JS.compile(piece.re2).programSize();
    if (steps > SCHEMA_LIMITS.patternProgram) throw tooLarge(steps, true);
    // A set of one: the only form whose state cache can be bounded.
    set = new RE2Set(RE2Set.UNANCHORED, 0, PATTERN_STATE_MEMORY);
    set.add(piece.re2);
    set.compile();
  } catch (err) {
    if (err instanceof PatternRefusal) throw err;
    const message = (err as Error).message;
    if (/repeat count/.test(message)) throw new PatternRefusal(NESTED_REPEATS);
    if (/character class range|Unicode class/i.test(message)) {
      throw new PatternRefusal('uses a Unicode property the linear-time engine does not have; use a General_Category such as `\\p{L}`, or a script by its full name such as `\\p{Script=Greek}`');
    }
    throw new PatternRefusal(`cannot be matched in linear time (${message})`);
  }
  return { re2: piece.re2, steps, ranges: reader.ranges, test: (s: string) => set.match(s).length > 0 };
}

/** Only what is certain: syntax, what RE2 cannot do, and the cost `maxLength` × (program + overhead). */
export function patternProblem(p: string, maxLength: number = SCHEMA_LIMITS.patternInput): string | null {
  let pattern: LinearPattern;
  try {
    pattern = linearPattern(p).pattern;
  } catch (err) {
    if (err instanceof PatternRefusal) return err.message;
    throw err;
  }
  const perChar = pattern.steps + PATTERN_STEP_OVERHEAD;
  const longest = Math.min(maxLength, SCHEMA_LIMITS.patternInput);
  if (longest * perChar > SCHEMA_LIMITS.patternSteps) {
    const most = Math.floor(SCHEMA_LIMITS.patternSteps / perChar);
    return `is too costly to check on strings of ${longest} characters: it takes ${pattern.steps} steps per character, and a \`maxLength\` of at most ${most} keeps one check within ${SCHEMA_LIMITS.patternSteps.toLocaleString('en-US')} steps; lower \`maxLength\`, or use smaller repetition counts (\`{1,64}\` is written out 64 times)`;
  }
  return null;
}

// The lint: whether a pattern backtracks in the engines other programs run it with.

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

/** It runs on the event loop at registration; only whether a warning is given depends on it. */
const LINT_PATTERN_MS = 2_000;
const LINT_PATTERNS_MS = 4_000;

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

/** Whether the lint analyses patterns with recheck (true) or with the conservative fallback (false). */
export const patternCheckerIsRecheck = () => loadRecheck() !== null;

const QUANTIFIER_AFTER = /^(?:[*+]|\{\d+,\d*\})/;

/** The lint's fallback without recheck: a heuristic, flags `(a+)+`, `(a|ab)*` and the like. */
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

const lintVerdicts = new Map<string, string | null>();
const MAX_LINT_VERDICTS = 1_000;
const REWRITE = 'rewrite it without nested or overlapping repetition, e.g. `^[a-z]+(-[a-z]+)*$` instead of `^([a-z]+-?)+$`';

/**
 * For the backtracking engines of add-ons and apps. Bounded repetitions are analysed as unbounded:
 * recheck calls `^(\w{1,20}\s?){1,20}$` safe, but its bound is 2^20. Null on timeout: not a proof.
 */
export function patternLint(p: string, deadline = performance.now() + LINT_PATTERN_MS): string | null {
  const verdict = lintVerdict(p, deadline);
  return verdict === 'timeout' ? null : verdict;
}

/** patternLint's verdict, or 'timeout' when the analysis ran out of time (then nothing is cached). */
function lintVerdict(p: string, deadline: number): string | null | 'timeout' {
  const known = lintVerdicts.get(p);
  if (known !== undefined) return known;
  let widened: string | undefined;
  try {
    const { ranges } = linearPattern(p).pattern;
    if (ranges.length) {
      widened = '';
      let at = 0;
      for (const [start, end, min] of ranges) {
        widened += p.slice(at, start) + `{${min},}`;
        at = end;
      }
      widened += p.slice(at);
    }
  } catch {
    return null; // refused, and said so
  }
  const check = loadRecheck();
  let verdict: string | null = null;
  if (!check) {
    const problem = conservativePatternProblem(p);
    if (problem) verdict = `may backtrack catastrophically in backtracking engines: it ${problem}`;
  } else {
    const analyse = (source: string): RecheckDiagnostics | 'timeout' => {
      // recheck wants a whole number of milliseconds.
      const timeout = Math.floor(Math.min(LINT_PATTERN_MS, deadline - performance.now()));
      if (timeout < 1) return 'timeout';
      try {
        const r = check(source, 'u', { timeout, checker: 'automaton' });
        return r.status === 'unknown' && r.error?.kind === 'timeout' ? 'timeout' : r;
      } catch {
        return { status: 'unknown' };
      }
    };
    const r = analyse(p);
    if (r === 'timeout') return r; // not cached: a later lint with more time may tell
    if (r.status === 'vulnerable') {
      verdict = `can backtrack catastrophically in backtracking engines (${r.complexity?.type ?? 'super-linear'} time on some inputs); Toolport matches it in linear time, but your add-on or an app that checks it with JavaScript, Python or Java regular expressions can freeze on one argument; ${REWRITE}`;
    } else if (r.status === 'safe' && widened !== undefined) {
      const w = analyse(widened);
      if (w === 'timeout') return w;
      if (w.status === 'vulnerable' && w.complexity?.type === 'exponential') {
        verdict = `can backtrack catastrophically in backtracking engines: its bounded repetitions nest, so its time grows exponentially up to the bounds (\`^(\\w{1,20}\\s?){1,20}$\` takes 20 s on 30 characters in JavaScript); Toolport matches it in linear time, but your add-on or an app that checks it with JavaScript, Python or Java regular expressions can freeze on one argument; ${REWRITE}`;
      }
    }
  }
  if (lintVerdicts.size >= MAX_LINT_VERDICTS) lintVerdicts.delete(lintVerdicts.keys().next().value!);
  lintVerdicts.set(p, verdict);
  return verdict;
}

/** One time budget for them all. Also run on refused manifests: assumes no checked shape. */
export function patternWarnings(schemas: ReadonlyArray<readonly [path: string, schema: unknown]>): FieldError[] {
  const out: FieldError[] = [];
  loadRecheck(); // its warm-up is not the patterns' time
  const deadline = performance.now() + LINT_PATTERNS_MS;
  let nodes = 0;
  const visit = (node: unknown, path: string, depth: number) => {
    if (!isPlainObject(node) || depth > SCHEMA_LIMITS.depth + 2 || ++nodes > MAX_EXPANDED_SUBSCHEMAS) return;
    if (typeof node.pattern === 'string') {
      const warning = patternLint(node.pattern, Math.min(deadline, performance.now() + LINT_PATTERN_MS));
      if (warning) out.push({ path: ptr(path, 'pattern'), message: `The pattern ${describeValue(node.pattern)} ${warning}.` });
    }
    for (const key of ['properties', '$defs', 'definitions']) {
      const v = node[key];
      if (isPlainObject(v)) for (const [name, s] of Object.entries(v)) visit(s, ptr(path, key, name), depth + 1);
    }
    for (const key of ['items', 'additionalProperties', 'additionalItems']) {
      const v = node[key];
      if (Array.isArray(v)) v.forEach((s, i) => visit(s, ptr(path, key, i), depth + 1));
      else visit(v, ptr(path, key), depth + 1);
    }
    for (const key of ['prefixItems', 'anyOf', 'oneOf']) {
      const v = node[key];
      if (Array.isArray(v)) v.forEach((s, i) => visit(s, ptr(path, key, i), depth + 1));
    }
  };
  for (const [path, schema] of schemas) visit(schema, path, 1);
  return out;
}

/**
 * Apps run it with a backtracking engine on what the add-on writes, so a pattern the analysis
 * could not clear in time is refused: here, unknown is not safe.
 */
function outputPatternProblem(p: string, st: SchemaCheckState): string | null {
  st.outputLintDeadline ??= performance.now() + LINT_PATTERNS_MS;
  const verdict = lintVerdict(p, Math.min(st.outputLintDeadline, performance.now() + LINT_PATTERN_MS));
  if (verdict === null) return null;
  const why = verdict === 'timeout' ? 'could not be shown safe for backtracking engines in the time a push may take' : 'can backtrack catastrophically in backtracking engines';
  return `${why}: apps check structuredContent against the outputSchema with one (the MCP SDK uses JavaScript's), so a single answer could freeze them; ${REWRITE}`;
}

// ---------------------------------------------------------------------------------------------
// Raw inputSchema: a whitelist of what can be enforced safely

/** Every keyword an inputSchema (and an outputSchema) may use; the dashboard says each in words (schema-words.ts). */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
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
  /** The distinct patterns compiled: a pattern is compiled once, so a repeated one costs nothing more. */
  patterns: Set<string>;
  /** Checking an outputSchema (checkInputSchema's `output`): a few bounds relaxed, backtracking patterns refused. */
  output?: boolean;
  /** When the analyses of the manifest's outputSchema patterns must end (one budget for them all). */
  outputLintDeadline?: number;
}

export const newSchemaCheckState = (): SchemaCheckState => ({
  properties: 0,
  patterns: new Set(),
});

const describeValue = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? s.slice(0, 37) + '...' : s;
};
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * With `output` (an outputSchema), bounds that only limit what reaches an add-on are skipped (a
 * result is capped at 64 KB anyway), and a backtracking-prone pattern is refused, not linted.
 */
export function checkInputSchema(
  input: unknown,
  path: string,
  errors: FieldError[],
  state: SchemaCheckState = newSchemaCheckState(),
  { output = false }: { output?: boolean } = {},
): JsonSchema | undefined {
  if (!output) return checkSchema(input, path, errors, state);
  const before = errors.length;
  state.output = true;
  try {
    return checkSchema(input, path, errors, state);
  } finally {
    state.output = false;
    // The rules and their sentences are the inputSchema's.
    for (const e of errors.slice(before)) e.message = e.message.replace(/\binputSchema\b/g, 'outputSchema');
  }
}

function checkSchema(input: unknown, path: string, errors: FieldError[], state: SchemaCheckState): JsonSchema | undefined {
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
    errors.push({ path: ptr(path, 'type'), message: state.output
      ? 'The top level of an outputSchema must be `"type": "object"`: MCP\'s structuredContent is an object.'
      : 'The top level of an inputSchema must be `"type": "object"`: tool arguments are named.' });
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

/** Where each written-out object came from, for error paths; one check's own, not a cache. */
type Origins = WeakMap<object, string>;

/** Subschemas a schema may have once its references are written out (a legal one has a few hundred). */
const MAX_EXPANDED_SUBSCHEMAS = 2_000;
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

/** In `{"anyOf": [X, {"type": "null"}]}` (either order; or `oneOf`), the keyword and X's index. */
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
 * Inlines local `$ref`s and Pydantic's `anyOf [X, null]`, and rewrites draft-07 to 2020-12, so what
 * is checked is what is listed. A cyclic reference would recurse without bound and is refused.
 * Undefined when the result would be too large to check.
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

  /** Draft-07 tuple to 2020-12: `items` list → `prefixItems`, `additionalItems` → `items`. */
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
    if (SCHEMA_KEYWORDS.has(key)) continue;
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
      err(at, `\`${key}\` is not a supported keyword; an inputSchema may use: ${[...SCHEMA_KEYWORDS].join(', ')}.`);
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
  if (types.has('string') && !hasEnum && !('maxLength' in node) && !st.output) {
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
      // Without maxLength (an enum), any string up to patternInput reaches the pattern.
      const problem = patternProblem(p, typeof node.maxLength === 'number' ? node.maxLength : SCHEMA_LIMITS.patternInput);
      if (problem) err(ptr(path, 'pattern'), `The pattern ${describeValue(p)} ${problem}.`);
      else if (st.output) {
        const backtracks = outputPatternProblem(p, st);
        if (backtracks) err(ptr(path, 'pattern'), `The pattern ${describeValue(p)} ${backtracks}.`);
      }
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
  if (types.has('array') && !st.output) {
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
  } else if ('items' in node && node.items !== false && !(st.output && node.items === true)) {
    checkNode(node.items, ptr(path, 'items'), depth + 1, false, errors, st, origins);
  }

  // objects
  if (types.has('object') && !('additionalProperties' in node) && !st.output) {
    err(path, 'An object must say `"additionalProperties": false` (or give a schema for extra keys).');
  }
  // An outputSchema may leave extra keys open, as `true` or by saying nothing.
  if ('additionalProperties' in node && node.additionalProperties !== false && !(st.output && node.additionalProperties === true)) {
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
