import { createHash } from 'node:crypto';
import { ToolportError, type FieldError } from '../errors';
import { validatorFor } from './arguments';
import { lintManifest } from './lint';
import {
  RESERVED_KEYS,
  canonicalJson,
  checkInputSchema,
  codePoints,
  compileArguments,
  isPlainObject,
  newSchemaCheckState,
  ptr,
  textProblem,
  type SchemaCheckState,
} from './schema';
import { ICON_LIMITS, ICON_TYPES, SVG_REFUSAL, declaredProblem, normalType, readDataUri, readIconImage, typeName } from './icon-image';
import type {
  ArgumentKind, CompiledTool, IconSource, Manifest, ManifestAccount, ManifestArgument, ManifestCheck, ManifestIcon, ManifestSetting, ManifestTool, SettingKind,
} from './types';
import { SETTING_LIMITS, settingValueProblem } from './setting-values';

const MANIFEST_LIMITS = {
  name: 60,
  description: 300,
  webhook: 2048,
  tools: 16,
  title: 60,
  summary: 300,
  arguments: 10,
  textMaxLength: 65_536,
  choices: 100,
  choiceLength: 200,
} as const;

export const ADDON_ID = /^[a-z][a-z0-9-]{1,29}$/;
export const TOOL_NAME = /^[a-z][a-z0-9_]{0,31}$/;
const ARGUMENT_NAME = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;

/** Problems listed in one refusal; a manifest with more gets one last line counting the rest. */
const MAX_LISTED = 200;

const MANIFEST_KEYS = ['$schema', 'id', 'name', 'description', 'webhook', 'visibility', 'releaseNotes', 'icons', 'toolsPerPerson', 'tools', 'settings', 'accounts'];
/** Release notes: shown to people reviewing the update, never to apps. */
const RELEASE_NOTES_MAX = 1000;
const TOOL_KEYS = [
  'name', 'title', 'summary', 'destructive', 'readOnly', 'idempotent', 'openWorld', 'confirm', 'alwaysAsk', 'exclusive', 'timeoutSeconds', 'icons',
  'accounts', 'arguments', 'inputSchema', 'outputSchema',
];
const ICON_KEYS = ['src', 'mimeType', 'sizes', 'theme'];
const ICON_SIZE = /^[1-9]\d{0,3}x[1-9]\d{0,3}$/;
/** A call's delivery may take 30 s (DESIGN.md limits); a tool may ask for less, never more. */
/**
 * Above 30 s a tool runs only as an MCP task, whose add-on may answer later (calls/tasks.ts). An
 * hour fits an export, a report or a deploy; a call its add-on forgets still ends while the person
 * is likely to be around, and no result waits longer.
 */
const MAX_TOOL_TIMEOUT_SECONDS = 3_600;
const ARGUMENT_KEYS = ['name', 'summary', 'kind', 'required'];
const KIND_NAMES = ['text', 'number', 'choice'];
/** Kind names developers reach for, and the kind they mean. */
const KIND_ALIASES: Record<string, string> = {
  string: '{"text": {"maxLength": N}}',
  str: '{"text": {"maxLength": N}}',
  integer: '{"number": {"whole": true}}',
  int: '{"number": {"whole": true}}',
  float: '{"number": {}}',
  enum: '{"choice": [...]}',
  select: '{"choice": [...]}',
  bool: '"boolean"',
};
const KIND_HELP = 'a kind is {"text": {"maxLength": N}}, {"number": {"minimum": a, "maximum": b, "whole": bool}}, "boolean" or {"choice": ["a", "b"]}';

class Problems {
  readonly list: FieldError[] = [];
  add(path: string, message: string) {
    this.list.push({ path, message });
  }
}

const show = (v: unknown) => {
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? String(v);
  return s.length > 40 ? s.slice(0, 37) + '...' : s;
};

/*
 * What a model reads must be what a reviewer sees: Cf, Co and default-ignorable characters hide or
 * reorder text, so they are refused except where ordinary writing needs them (docs/addons.md
 * "Invisible characters": emoji presentation and ZWJ sequences, ZWNJ/ZWJ in scripts, flag tags).
 */
const INVISIBLE = /[\p{Cf}\p{Co}\p{Default_Ignorable_Code_Point}]/u;
const BIDI_CONTROL = /\p{Bidi_Control}/u;
const VARIATION_SELECTOR = /\p{Variation_Selector}/u;
const EMOJI = /\p{Emoji}/u;
const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;
const EMOJI_MODIFIER = /\p{Emoji_Modifier}/u;
const LETTER_OR_MARK = /[\p{L}\p{M}]/u;
/** Scripts whose spelling uses U+200C and U+200D between letters. */
const JOINING_SCRIPTS = [
  'Arabic', 'Syriac', 'Nko', 'Devanagari', 'Bengali', 'Gurmukhi', 'Gujarati', 'Oriya', 'Tamil', 'Telugu',
  'Kannada', 'Malayalam', 'Sinhala', 'Khmer', 'Myanmar',
].map((s) => new RegExp(`\\p{Script_Extensions=${s}}`, 'u'));
/** The RGI subdivision flags: U+1F3F4, these tag letters, U+E007F. */
const TAG_FLAGS = new Set(['gbeng', 'gbsct', 'gbwls']);
const ZERO_WIDTH: Record<number, string> = {
  0x00ad: 'a soft hyphen', 0x180e: 'a zero-width Mongolian vowel separator', 0x200b: 'a zero-width space',
  0x200c: 'a zero-width non-joiner', 0x200d: 'a zero-width joiner', 0x2060: 'a word joiner',
  0x2061: 'an invisible function application', 0x2062: 'an invisible times', 0x2063: 'an invisible separator',
  0x2064: 'an invisible plus', 0xfeff: 'a zero-width no-break space, or byte order mark',
};

const ch = (cp: number | undefined) => (cp === undefined ? '' : String.fromCodePoint(cp));
/** `cp` ends an emoji: a pictograph, a pictograph with its emoji selector, or a skin tone. */
const endsEmoji = (cps: number[], i: number) =>
  PICTOGRAPHIC.test(ch(cps[i])) ||
  ((cps[i] === 0xfe0f || EMOJI_MODIFIER.test(ch(cps[i]))) && PICTOGRAPHIC.test(ch(cps[i - 1])));

/** How many code points from `i` (a tag character) form an allowed flag's tags, or 0. */
function flagTags(cps: number[], i: number): number {
  if (cps[i - 1] !== 0x1f3f4) return 0;
  let end = i;
  while (end < cps.length && cps[end]! >= 0xe0020 && cps[end]! <= 0xe007e) end++;
  if (cps[end] !== 0xe007f) return 0;
  const letters = String.fromCharCode(...cps.slice(i, end).map((c) => c - 0xe0000));
  return TAG_FLAGS.has(letters) ? end - i + 1 : 0;
}

/** Whether the invisible `cps[i]` is written where it belongs (see above). */
function allowedInvisible(cps: number[], i: number): boolean {
  const cp = cps[i]!;
  const before = cps[i - 1];
  if (cp === 0xfe0e || cp === 0xfe0f) return before !== undefined && EMOJI.test(ch(before)) && !VARIATION_SELECTOR.test(ch(before));
  if (cp === 0x200d && i > 0 && endsEmoji(cps, i - 1) && PICTOGRAPHIC.test(ch(cps[i + 1]))) return true;
  if (cp === 0x200c || cp === 0x200d) {
    const [a, b] = [ch(before), ch(cps[i + 1])];
    return LETTER_OR_MARK.test(a) && LETTER_OR_MARK.test(b) && JOINING_SCRIPTS.some((s) => s.test(a) && s.test(b));
  }
  return false;
}

/** What the invisible `cp` is, and why it cannot stay. */
function invisibleKind(cp: number): { kind: string; why: string } {
  const c = ch(cp);
  if (cp >= 0xe0000 && cp <= 0xe007f) return { kind: 'a tag character', why: 'which spells out text the model reads and no one sees' };
  if (BIDI_CONTROL.test(c)) return { kind: 'a bidi control', why: 'which would hide or reorder text the model reads' };
  if (cp === 0x200d) return { kind: 'a zero-width joiner outside an emoji', why: 'which is invisible there: it can hide text from the people who review the tool, or split a word' };
  if (cp === 0x200c) return { kind: 'a zero-width non-joiner outside a word that spells with it', why: 'which is invisible: it can hide text from the people who review the tool, or split a word' };
  if (ZERO_WIDTH[cp]) return { kind: ZERO_WIDTH[cp], why: 'which is invisible: it can hide text from the people who review the tool, or split a word' };
  if (cp === 0xfe0e || cp === 0xfe0f) return { kind: 'a variation selector not right after an emoji', why: 'which shows as nothing there and can carry hidden data' };
  if (VARIATION_SELECTOR.test(c)) return { kind: 'a variation selector', why: 'which shows as nothing and can carry hidden data after any character' };
  if (/\p{Co}/u.test(c)) return { kind: 'a private-use character', why: 'which has no agreed meaning: every font shows it differently, and it can carry hidden data' };
  if (/\p{Cf}/u.test(c)) return { kind: 'an invisible format character', why: 'which can hide or change text the model reads' };
  return { kind: 'a character that shows as nothing', why: 'which can hide text from the people who review the tool' };
}

/** Names the first invisible character (U+XXXX, kind, place) and how many there are. */
export function invisibleProblem(s: string): string | null {
  if (!INVISIBLE.test(s)) return null;
  const cps = Array.from(s, (c) => c.codePointAt(0)!);
  let first: { cp: number; at: number } | undefined;
  let count = 0;
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i]!;
    if (!INVISIBLE.test(ch(cp))) continue;
    if (cp >= 0xe0020 && cp <= 0xe007e) {
      const flag = flagTags(cps, i);
      if (flag) {
        i += flag - 1;
        continue;
      }
    }
    if (allowedInvisible(cps, i)) continue;
    count++;
    first ??= { cp, at: i + 1 };
  }
  if (!first) return null;
  const { kind, why } = invisibleKind(first.cp);
  const hex = first.cp.toString(16).toUpperCase().padStart(4, '0');
  const more = count > 1 ? ` (and ${count - 1} more invisible character${count > 2 ? 's' : ''})` : '';
  return `contains U+${hex} (${kind}) at character ${first.at}, ${why}; remove it${more}`;
}

/** What schema.ts says of a bidi control in schema text; invisibleInSchema says it more plainly. */
const SCHEMA_BIDI_MESSAGE = /control character U\+(202[A-E]|206[6-9])\b/;

/** Every schema string that reaches the app, definitions included. Returns the paths it refused. */
function invisibleInSchema(node: unknown, path: string, p: Problems, refused = new Set<string>(), depth = 0): Set<string> {
  if (depth > 64 || typeof node !== 'object' || node === null) return refused;
  const add = (at: string, label: string, problem: string) => {
    p.add(at, `${label} ${problem}.`);
    refused.add(at);
  };
  const literal = (v: unknown, at: string, d: number): void => {
    if (d > 64) return;
    if (typeof v === 'string') {
      const problem = invisibleProblem(v);
      if (problem) add(at, 'This value', problem);
    } else if (Array.isArray(v)) v.forEach((x, i) => literal(x, ptr(at, i), d + 1));
    else if (isPlainObject(v)) for (const [k, x] of Object.entries(v)) literal(x, ptr(at, k), d + 1);
  };
  if (Array.isArray(node)) {
    node.forEach((x, i) => invisibleInSchema(x, ptr(path, i), p, refused, depth + 1));
    return refused;
  }
  for (const [key, value] of Object.entries(node)) {
    const at = ptr(path, key);
    if ((key === 'description' || key === 'title') && typeof value === 'string') {
      const problem = invisibleProblem(value);
      if (problem) add(at, `\`${key}\``, problem);
    } else if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') {
      literal(value, at, depth + 1);
    } else if (key === 'properties' && isPlainObject(value)) {
      for (const [name, sub] of Object.entries(value)) {
        const problem = invisibleProblem(name);
        if (problem) add(ptr(at, name), 'The property name', problem);
        invisibleInSchema(sub, ptr(at, name), p, refused, depth + 1);
      }
    } else invisibleInSchema(value, at, p, refused, depth + 1);
  }
  return refused;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

function suggest(key: string, allowed: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const a of allowed) {
    const d = a.toLowerCase() === lower ? 0 : editDistance(lower, a.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [a, d];
  }
  return best;
}

/** Refuses keys outside `allowed`, naming the closest allowed key when it looks like a typo. */
function unknownKeys(obj: Record<string, unknown>, allowed: readonly string[], path: string, what: string, p: Problems) {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key)) continue;
    const near = suggest(key, allowed);
    p.add(ptr(path, key), near
      ? `Unknown key \`${key}\` in ${what}; did you mean \`${near}\`?`
      : `Unknown key \`${key}\` in ${what}; it takes ${allowed.filter((k) => k !== '$schema').map((k) => `\`${k}\``).join(', ')}.`);
  }
}

/** Prose: NFC, trimmed, length in code points. */
function text(
  obj: Record<string, unknown>, key: string, path: string, p: Problems,
  { label, max, allowEmpty = false, prose = true }: { label: string; max: number; allowEmpty?: boolean; prose?: boolean },
): string | undefined {
  const at = ptr(path, key);
  const v = obj[key];
  if (v === undefined) {
    p.add(at, `${label} is missing: give \`${key}\` (${allowEmpty ? 'up to' : '1 to'} ${max} characters).`);
    return undefined;
  }
  if (typeof v !== 'string') {
    p.add(at, `${label} must be a string (got ${show(v)}).`);
    return undefined;
  }
  const problem = invisibleProblem(v) ?? textProblem(v, prose);
  if (problem) {
    p.add(at, `${label} ${problem}.`);
    return undefined;
  }
  const s = v.normalize('NFC').trim();
  if (!allowEmpty && s.length === 0) {
    p.add(at, `${label} must not be empty.`);
    return undefined;
  }
  const n = codePoints(s);
  if (n > max) {
    p.add(at, `${label} is too long: at most ${max} characters (got ${n}).`);
    return undefined;
  }
  return s;
}

function name(v: unknown, at: string, re: RegExp, label: string, rule: string, p: Problems): string | undefined {
  if (typeof v !== 'string') {
    p.add(at, v === undefined ? `${label} is missing.` : `${label} must be a string (got ${show(v)}).`);
    return undefined;
  }
  if (!re.test(v)) {
    p.add(at, `${label} ${show(v)} is not valid: ${rule}.`);
    return undefined;
  }
  return v;
}

function bool(obj: Record<string, unknown>, key: string, path: string, p: Problems): boolean | undefined {
  const v = obj[key];
  if (v === undefined || typeof v === 'boolean') return v;
  p.add(ptr(path, key), `\`${key}\` must be true or false (got ${show(v)}).`);
  return undefined;
}

/** `max` holds before and after normalising; `scheme` says what is wrong with its scheme. */
function checkUrl(
  v: unknown,
  at: string,
  p: Problems,
  says: { missing: string; notString: string; unparsable: (v: string) => string; noun: string; scheme: (url: URL) => string | undefined; credentials: string; max: number },
): string | undefined {
  if (typeof v !== 'string') {
    p.add(at, v === undefined ? says.missing : says.notString);
    return undefined;
  }
  if (v.length > says.max) {
    p.add(at, `${says.noun} is too long: at most ${says.max} characters (got ${v.length}).`);
    return undefined;
  }
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\s\u0000-\u001f\u007f]/.test(v) || textProblem(v, false)) {
    p.add(at, `${says.noun} must not contain spaces or control characters.`);
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    p.add(at, says.unparsable(v));
    return undefined;
  }
  const problems: string[] = [];
  const scheme = says.scheme(url);
  if (scheme) problems.push(scheme);
  if (url.username || url.password) problems.push(`must not carry credentials (user:password@); ${says.credentials}`);
  if (v.includes('#')) problems.push('must not have a fragment (#...)');
  if (!url.hostname) problems.push('must name a host');
  if (problems.length) {
    p.add(at, `${says.noun} ${problems.join(', and ')}.`);
    return undefined;
  }
  if (url.href.length > says.max) {
    p.add(at, `${says.noun} is too long once normalised: at most ${says.max} characters.`);
    return undefined;
  }
  return url.href;
}

function checkWebhook(v: unknown, at: string, p: Problems): string | undefined {
  const example = 'an absolute http(s) URL such as https://example.com/toolport';
  return checkUrl(v, at, p, {
    missing: `The webhook is missing: give ${example}.`,
    notString: `The webhook must be ${example}.`,
    unparsable: (s) => `The webhook must be ${example} (got ${show(s)}).`,
    noun: 'The webhook URL',
    scheme: (url) => (url.protocol !== 'https:' && url.protocol !== 'http:' ? `must use https or http (got ${url.protocol.slice(0, -1)})` : undefined),
    credentials: 'Toolport signs every request instead',
    max: MANIFEST_LIMITS.webhook,
  });
}

/** Form only: URLs are fetched once on push (registry.ts); each icon is added to `sources`. */
function checkIcons(v: unknown, at: string, p: Problems, sources: IconSource[], tool?: string): ManifestIcon[] | undefined {
  if (!Array.isArray(v) || v.length > ICON_LIMITS.perOwner) {
    p.add(at, `\`icons\` must be a list of up to ${ICON_LIMITS.perOwner} icons: {"src": "https://.../icon.png"}${Array.isArray(v) ? ` (got ${v.length})` : ''}.`);
    return undefined;
  }
  const before = p.list.length;
  const out: ManifestIcon[] = [];
  v.forEach((entry, i) => {
    const iconAt = ptr(at, i);
    if (!isPlainObject(entry)) return p.add(iconAt, 'An icon must be an object: {"src": "https://.../icon.png", "theme": "light"}.');
    const start = p.list.length;
    unknownKeys(entry, ICON_KEYS, iconAt, 'an icon', p);
    const icon: ManifestIcon = { src: '' };
    const { mimeType, sizes, theme } = entry;
    if (mimeType !== undefined) {
      const t = typeof mimeType === 'string' ? normalType(mimeType) : '';
      if (t === 'image/svg+xml') p.add(ptr(iconAt, 'mimeType'), `${SVG_REFUSAL}.`);
      else if (!(ICON_TYPES as readonly string[]).includes(t)) p.add(ptr(iconAt, 'mimeType'), `\`mimeType\` must be one of ${ICON_TYPES.join(', ')} (got ${show(mimeType)}).`);
      else icon.mimeType = t;
    }
    if (sizes !== undefined) {
      if (!Array.isArray(sizes) || sizes.length === 0 || sizes.length > ICON_LIMITS.sizes || !sizes.every((s) => typeof s === 'string' && ICON_SIZE.test(s))) {
        p.add(ptr(iconAt, 'sizes'), Array.isArray(sizes) && sizes.includes('any')
          ? '`sizes` "any" is for scalable images, which Toolport does not take; leave `sizes` out: Toolport reads the size from the image.'
          : '`sizes` must be a list of sizes such as ["64x64"] (width x height in pixels); leave it out and Toolport reads the size from the image.');
      } else icon.sizes = sizes as string[];
    }
    if (theme !== undefined) {
      if (theme === 'light' || theme === 'dark') icon.theme = theme;
      else p.add(ptr(iconAt, 'theme'), `\`theme\` must be "light" or "dark" (got ${show(theme)}): the background the icon is drawn for.`);
    }
    const srcAt = ptr(iconAt, 'src');
    const src = entry.src;
    let bytes: Buffer | undefined;
    if (typeof src !== 'string' || !src) {
      p.add(srcAt, src === undefined ? 'The icon has no `src`: give an https URL of a PNG, JPEG, WebP or GIF, or a data URI.' : '`src` must be a URL or a data URI (a string).');
    } else if (/^data:/i.test(src)) {
      const read = readDataUri(src);
      if (typeof read === 'string') p.add(srcAt, `The icon's data URI ${read}.`);
      else if (read.claimed === 'image/svg+xml') p.add(srcAt, `${SVG_REFUSAL}.`);
      else if (!(ICON_TYPES as readonly string[]).includes(read.claimed)) p.add(srcAt, `The icon's data URI says ${read.claimed}; an icon is one of ${ICON_TYPES.join(', ')}.`);
      else {
        const image = readIconImage(read.bytes);
        if (typeof image === 'string') p.add(srcAt, `The icon ${image}.`);
        else if (image.mimeType !== read.claimed) {
          p.add(srcAt, `The icon's data URI says ${read.claimed}, but its bytes are ${typeName(image.mimeType)} image; give the media type of the image it holds.`);
        } else {
          const declared = declaredProblem(icon, image);
          if (declared) p.add(iconAt, `The icon's ${declared}.`);
          else bytes = read.bytes;
        }
      }
      icon.src = src;
    } else {
      const url = iconUrl(src, srcAt, p);
      if (url) icon.src = url;
    }
    if (p.list.length !== start) return;
    out.push(icon);
    sources.push({ path: iconAt, ...(tool !== undefined ? { tool } : {}), icon, ...(bytes ? { bytes } : {}) });
  });
  return p.list.length === before ? out : undefined;
}

/** An icon URL in form: http(s), no credentials, no spaces; fetched once, never by the app. */
function iconUrl(v: string, at: string, p: Problems): string | undefined {
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (v.length > ICON_LIMITS.url || /[\s\u0000-\u001f\u007f]/.test(v) || textProblem(v, false)) {
    p.add(at, `The icon URL must be an http(s) URL of at most ${ICON_LIMITS.url} characters, without spaces or control characters, or a data URI.`);
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    p.add(at, `The icon's \`src\` must be an absolute https URL such as https://example.com/icon.png, or a data URI (got ${show(v)}).`);
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    p.add(at, `The icon URL must use https or http (got ${url.protocol.slice(0, -1)}), or be a data URI.`);
    return undefined;
  }
  if (url.username || url.password) {
    p.add(at, 'The icon URL must not carry credentials (user:password@).');
    return undefined;
  }
  return url.href;
}

function checkKind(v: unknown, at: string, p: Problems): ArgumentKind | undefined {
  if (v === 'boolean') return 'boolean';
  if (v === undefined) {
    p.add(at, `The argument's kind is missing: ${KIND_HELP}.`);
    return undefined;
  }
  if (typeof v === 'string') {
    const alias = KIND_ALIASES[v.toLowerCase()];
    if (KIND_NAMES.includes(v)) p.add(at, `The kind "${v}" needs its settings: ${KIND_HELP}.`);
    else p.add(at, alias ? `Unknown kind ${show(v)}; did you mean ${alias}?` : `Unknown kind ${show(v)}: ${KIND_HELP}.`);
    return undefined;
  }
  if (!isPlainObject(v)) {
    p.add(at, `The kind must be an object or "boolean": ${KIND_HELP}.`);
    return undefined;
  }
  const keys = Object.keys(v);
  for (const k of keys) {
    if (KIND_NAMES.includes(k)) continue;
    const alias = KIND_ALIASES[k.toLowerCase()] ?? (k === 'boolean' ? '"boolean" (a plain string, not an object)' : undefined);
    const near = suggest(k, KIND_NAMES);
    p.add(ptr(at, k), alias ? `Unknown kind \`${k}\`; did you mean ${alias}?`
      : near ? `Unknown kind \`${k}\`; did you mean \`${near}\`?` : `Unknown kind \`${k}\`: ${KIND_HELP}.`);
  }
  const given = keys.filter((k) => KIND_NAMES.includes(k));
  if (keys.length === 0) {
    p.add(at, `The kind is empty: ${KIND_HELP}.`);
    return undefined;
  }
  if (given.length > 1) {
    p.add(at, `A kind is exactly one of ${given.map((k) => `\`${k}\``).join(', ')}, not several.`);
    return undefined;
  }
  if (given.length === 0 || keys.length > 1) return undefined;

  const k = given[0]!;
  const body = v[k];
  const bodyAt = ptr(at, k);
  if (k === 'choice') return checkChoice(body, bodyAt, p);
  if (!isPlainObject(body)) {
    p.add(bodyAt, k === 'text'
      ? 'A text kind is {"text": {"maxLength": N}} with N from 1 to 65536.'
      : 'A number kind is {"number": {"minimum": a, "maximum": b, "whole": true|false}}; each part is optional.');
    return undefined;
  }
  if (k === 'text') {
    unknownKeys(body, ['maxLength'], bodyAt, 'a text kind', p);
    const max = body.maxLength;
    if (!(typeof max === 'number' && Number.isInteger(max) && max >= 1 && max <= MANIFEST_LIMITS.textMaxLength)) {
      p.add(ptr(bodyAt, 'maxLength'), max === undefined
        ? `A text kind needs \`maxLength\`: a whole number from 1 to ${MANIFEST_LIMITS.textMaxLength}.`
        : `\`maxLength\` must be a whole number from 1 to ${MANIFEST_LIMITS.textMaxLength} (got ${show(max)}).`);
      return undefined;
    }
    return { text: { maxLength: max } };
  }
  // number
  const before = p.list.length;
  unknownKeys(body, ['minimum', 'maximum', 'whole'], bodyAt, 'a number kind', p);
  const whole = body.whole;
  if (whole !== undefined && typeof whole !== 'boolean') p.add(ptr(bodyAt, 'whole'), `\`whole\` must be true or false (got ${show(whole)}).`);
  const bounds: { minimum?: number; maximum?: number } = {};
  for (const b of ['minimum', 'maximum'] as const) {
    const n = body[b];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isFinite(n)) p.add(ptr(bodyAt, b), `\`${b}\` must be a finite number (got ${show(n)}).`);
    else if (whole === true && !Number.isSafeInteger(Math.trunc(n))) {
      p.add(ptr(bodyAt, b), `\`${b}\` of a whole number must lie within ±${Number.MAX_SAFE_INTEGER} (got ${n}).`);
    } else bounds[b] = n;
  }
  if (bounds.minimum !== undefined && bounds.maximum !== undefined && bounds.minimum > bounds.maximum) {
    p.add(ptr(bodyAt, 'minimum'), `\`minimum\` (${bounds.minimum}) is greater than \`maximum\` (${bounds.maximum}).`);
  }
  if (p.list.length !== before) return undefined;
  return { number: { ...bounds, ...(whole !== undefined ? { whole: whole as boolean } : {}) } };
}

/** NFC-normalised, since arguments are normalised before they are compared. */
function checkChoiceList(
  body: unknown,
  at: string,
  p: Problems,
  { what, max, maxLength }: { what: string; max: number; maxLength: number },
): string[] | undefined {
  if (!Array.isArray(body) || body.length === 0 || body.length > max) {
    p.add(at, `${what} is a list of 1 to ${max} distinct, non-empty strings${Array.isArray(body) ? ` (got ${body.length})` : ''}.`);
    return undefined;
  }
  const before = p.list.length;
  const out: string[] = [];
  const seen = new Map<string, number>();
  body.forEach((c, i) => {
    const cAt = ptr(at, i);
    if (typeof c !== 'string') return p.add(cAt, `Each choice must be a string (got ${show(c)}).`);
    // Not quoted: the quote would carry the invisible character into the message.
    const invisible = invisibleProblem(c);
    if (invisible) return p.add(cAt, `This choice ${invisible}.`);
    const problem = textProblem(c, false);
    if (problem) return p.add(cAt, `The choice ${show(c)} ${problem}.`);
    const s = c.normalize('NFC');
    if (s.trim().length === 0) return p.add(cAt, 'A choice must not be empty.');
    if (codePoints(s) > maxLength) return p.add(cAt, `A choice is too long: at most ${maxLength} characters (got ${codePoints(s)}).`);
    const first = seen.get(s);
    if (first !== undefined) return p.add(cAt, `The choice ${show(s)} is listed twice (also at ${ptr(at, first)}).`);
    seen.set(s, i);
    out.push(s);
  });
  return p.list.length === before ? out : undefined;
}

function checkChoice(body: unknown, at: string, p: Problems): ArgumentKind | undefined {
  const choices = checkChoiceList(body, at, p, { what: 'A choice', max: MANIFEST_LIMITS.choices, maxLength: MANIFEST_LIMITS.choiceLength });
  return choices ? { choice: choices } : undefined;
}

function checkArgument(v: unknown, at: string, p: Problems): ManifestArgument | undefined {
  if (!isPlainObject(v)) {
    p.add(at, 'An argument must be an object: {"name": ..., "summary": ..., "kind": ...}.');
    return undefined;
  }
  const before = p.list.length;
  unknownKeys(v, ARGUMENT_KEYS, at, 'an argument', p);
  let argName = name(v.name, ptr(at, 'name'), ARGUMENT_NAME, 'The argument name',
    'a letter, then up to 63 letters, digits or underscores', p);
  if (argName && RESERVED_KEYS.has(argName)) {
    p.add(ptr(at, 'name'), `\`${argName}\` cannot be an argument name: it would reach an object's prototype.`);
    argName = undefined;
  }
  const summary = text(v, 'summary', at, p, { label: 'The argument summary', max: MANIFEST_LIMITS.summary, allowEmpty: true });
  const kind = checkKind(v.kind, ptr(at, 'kind'), p);
  const required = bool(v, 'required', at, p);
  if (p.list.length !== before || !argName || summary === undefined || !kind) return undefined;
  return { name: argName, summary, kind, required: required ?? true };
}

function checkTool(v: unknown, at: string, p: Problems, schemas: SchemaCheckState, icons: IconSource[]): ManifestTool | undefined {
  if (!isPlainObject(v)) {
    p.add(at, 'A tool must be an object: {"name": ..., "title": ..., "summary": ..., "arguments": [...]}.');
    return undefined;
  }
  const before = p.list.length;
  unknownKeys(v, TOOL_KEYS, at, 'a tool', p);
  const toolName = name(v.name, ptr(at, 'name'), TOOL_NAME, 'The tool name',
    'a lowercase letter, then up to 31 lowercase letters, digits or underscores', p);
  const title = text(v, 'title', at, p, { label: 'The title', max: MANIFEST_LIMITS.title, prose: false });
  const summary = text(v, 'summary', at, p, { label: 'The summary', max: MANIFEST_LIMITS.summary });
  const destructive = bool(v, 'destructive', at, p) ?? false;
  const readOnly = bool(v, 'readOnly', at, p) ?? false;
  const confirm = bool(v, 'confirm', at, p) ?? false;
  // Any tool may say it: every call then asks the person, and no rule of theirs can let it run unasked.
  const alwaysAsk = bool(v, 'alwaysAsk', at, p) ?? false;
  // The add-on's exclusive tools run one call at a time for each person (calls/call-tool.ts).
  const exclusive = bool(v, 'exclusive', at, p) ?? false;
  // Only what is declared: MCP gives each its own default (idempotent false, open world true).
  const idempotent = bool(v, 'idempotent', at, p);
  const openWorld = bool(v, 'openWorld', at, p);
  const toolIcons = v.icons === undefined ? undefined : checkIcons(v.icons, ptr(at, 'icons'), p, icons, typeof v.name === 'string' ? v.name : undefined);
  if (destructive && readOnly) {
    p.add(ptr(at, 'readOnly'), 'A tool cannot be both `destructive` and `readOnly`; keep the one that is true.');
  }
  const toolAccounts = v.accounts === undefined ? undefined : checkToolAccounts(v.accounts, ptr(at, 'accounts'), p);
  const timeoutSeconds = v.timeoutSeconds;
  if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && (timeoutSeconds as number) >= 1 && (timeoutSeconds as number) <= MAX_TOOL_TIMEOUT_SECONDS)) {
    p.add(ptr(at, 'timeoutSeconds'), `\`timeoutSeconds\` must be a whole number of seconds from 1 to ${MAX_TOOL_TIMEOUT_SECONDS} (got ${show(timeoutSeconds)}).`);
  }

  let args: ManifestArgument[] | undefined;
  let inputSchema: Record<string, unknown> | undefined;
  if (v.arguments !== undefined && v.inputSchema !== undefined) {
    p.add(ptr(at, 'inputSchema'), 'Give either `arguments` or `inputSchema`, not both.');
  }
  if (v.inputSchema !== undefined) {
    const schemaErrors: FieldError[] = [];
    inputSchema = checkInputSchema(v.inputSchema, ptr(at, 'inputSchema'), schemaErrors, schemas);
    // A bidi control is reported once, by the plainer sentence of invisibleInSchema.
    const invisible = invisibleInSchema(v.inputSchema, ptr(at, 'inputSchema'), p);
    for (const e of schemaErrors) if (!(invisible.has(e.path) && SCHEMA_BIDI_MESSAGE.test(e.message))) p.list.push(e);
  }
  let outputSchema: Record<string, unknown> | undefined;
  if (v.outputSchema !== undefined) {
    const schemaErrors: FieldError[] = [];
    outputSchema = checkInputSchema(v.outputSchema, ptr(at, 'outputSchema'), schemaErrors, schemas, { output: true });
    const invisible = invisibleInSchema(v.outputSchema, ptr(at, 'outputSchema'), p);
    for (const e of schemaErrors) if (!(invisible.has(e.path) && SCHEMA_BIDI_MESSAGE.test(e.message))) p.list.push(e);
  }
  if (v.arguments !== undefined) {
    const list = v.arguments;
    const listAt = ptr(at, 'arguments');
    if (!Array.isArray(list)) {
      p.add(listAt, `\`arguments\` must be a list of up to ${MANIFEST_LIMITS.arguments} arguments.`);
    } else {
      if (list.length > MANIFEST_LIMITS.arguments) {
        p.add(listAt, `A tool takes at most ${MANIFEST_LIMITS.arguments} arguments (got ${list.length}); group related ones, or use inputSchema with nested objects.`);
      }
      args = [];
      const seen = new Map<string, number>();
      list.forEach((a, i) => {
        const checked = checkArgument(a, ptr(listAt, i), p);
        const n = isPlainObject(a) && typeof a.name === 'string' ? a.name : undefined;
        if (n !== undefined) {
          const first = seen.get(n);
          if (first !== undefined) p.add(ptr(listAt, i, 'name'), `The argument name \`${n}\` is already used by ${ptr(listAt, first)}.`);
          else seen.set(n, i);
        }
        if (checked) args!.push(checked);
      });
    }
  }
  if (p.list.length !== before || !toolName || title === undefined || summary === undefined) return undefined;
  const tool: ManifestTool = { name: toolName, title, summary, destructive, readOnly, confirm };
  if (alwaysAsk) tool.alwaysAsk = true;
  if (exclusive) tool.exclusive = true;
  if (idempotent !== undefined) tool.idempotent = idempotent;
  if (openWorld !== undefined) tool.openWorld = openWorld;
  if (typeof timeoutSeconds === 'number') tool.timeoutSeconds = timeoutSeconds;
  if (toolAccounts?.length) tool.accounts = toolAccounts;
  if (toolIcons?.length) tool.icons = toolIcons;
  if (inputSchema) tool.inputSchema = inputSchema;
  else tool.arguments = args ?? [];
  if (outputSchema) tool.outputSchema = outputSchema;
  return tool;
}

/** Against DESIGN.md: every violation at once, each with its JSON pointer. */
export function checkManifest(input: unknown): ManifestCheck {
  const p = new Problems();
  const schemas = newSchemaCheckState();
  if (!isPlainObject(input)) {
    p.add('', 'The manifest must be a JSON object: {"id", "name", "description", "webhook", "tools": [...]}.');
    throw refusal(p.list);
  }
  unknownKeys(input, MANIFEST_KEYS, '', 'the manifest', p);
  if (input.$schema !== undefined && typeof input.$schema !== 'string') p.add('/$schema', '`$schema` must be a string.');
  const id = name(input.id, '/id', ADDON_ID, 'The add-on id',
    '2 to 30 characters: a lowercase letter, then lowercase letters, digits or hyphens', p);
  const addonName = text(input, 'name', '', p, { label: 'The name', max: MANIFEST_LIMITS.name, prose: false });
  const description = text(input, 'description', '', p, { label: 'The description', max: MANIFEST_LIMITS.description, allowEmpty: true });
  const releaseNotes =
    input.releaseNotes === undefined ? undefined : text(input, 'releaseNotes', '', p, { label: 'The release notes', max: RELEASE_NOTES_MAX, allowEmpty: true });
  const webhook = checkWebhook(input.webhook, '/webhook', p);
  let visibility: Manifest['visibility'] = 'private';
  if (input.visibility !== undefined) {
    if (input.visibility === 'private' || input.visibility === 'public') visibility = input.visibility;
    else p.add('/visibility', `\`visibility\` must be "private" or "public" (got ${show(input.visibility)}).`);
  }
  // The add-on narrows the tools per person (installs/tool-lists.ts).
  const toolsPerPerson = bool(input, 'toolsPerPerson', '', p) ?? false;
  const icons: IconSource[] = [];
  const addonIcons = input.icons === undefined ? undefined : checkIcons(input.icons, '/icons', p, icons);

  const tools: ManifestTool[] = [];
  if (!Array.isArray(input.tools)) {
    p.add('/tools', input.tools === undefined
      ? `The manifest has no \`tools\`: give a list of 1 to ${MANIFEST_LIMITS.tools} tools.`
      : `\`tools\` must be a list of 1 to ${MANIFEST_LIMITS.tools} tools.`);
  } else {
    if (input.tools.length === 0) p.add('/tools', 'An add-on needs at least one tool.');
    if (input.tools.length > MANIFEST_LIMITS.tools) {
      p.add('/tools', `An add-on has at most ${MANIFEST_LIMITS.tools} tools (got ${input.tools.length}).`);
    }
    const seen = new Map<string, number>();
    input.tools.forEach((t, i) => {
      const checked = checkTool(t, ptr('/tools', i), p, schemas, icons);
      const n = isPlainObject(t) && typeof t.name === 'string' ? t.name : undefined;
      if (n !== undefined) {
        const first = seen.get(n);
        if (first !== undefined) p.add(ptr('/tools', i, 'name'), `The tool name \`${n}\` is already used by /tools/${first}.`);
        else seen.set(n, i);
      }
      if (checked) tools.push(checked);
    });
  }

  const settings = input.settings === undefined ? undefined : checkSettings(input.settings, '/settings', p);
  const accounts = input.accounts === undefined ? undefined : checkAccounts(input.accounts, '/accounts', p);
  if (Array.isArray(input.tools)) checkToolProviders(input.tools, input.accounts, p);

  // Each different icon is a fetch when the manifest is pushed.
  const distinct = new Set<string>();
  for (const s of icons) {
    if (distinct.has(s.icon.src) || distinct.add(s.icon.src).size <= ICON_LIMITS.perManifest) continue;
    p.add(s.path, `A manifest has at most ${ICON_LIMITS.perManifest} different icons; use the add-on's icons for tools that need none of their own.`);
    break;
  }

  const compiled: CompiledTool[] = [];
  if (p.list.length === 0) {
    tools.forEach((t, i) => {
      const inputSchema = t.inputSchema ?? compileArguments(t.arguments ?? []);
      try {
        validatorFor(inputSchema);
      } catch (err) {
        // The whitelist should leave nothing Ajv refuses; if it does, say so at the schema.
        p.add(ptr('/tools', i, 'inputSchema'), err instanceof ToolportError ? err.message : 'The input schema cannot be enforced.');
      }
      if (t.outputSchema) {
        try {
          validatorFor(t.outputSchema);
        } catch (err) {
          p.add(ptr('/tools', i, 'outputSchema'), err instanceof ToolportError ? err.message.replace('input schema', 'output schema') : 'The output schema cannot be enforced.');
        }
      }
      compiled.push({
        name: t.name, title: t.title, summary: t.summary,
        destructive: t.destructive ?? false, readOnly: t.readOnly ?? false, confirm: t.confirm ?? false,
        ...(t.alwaysAsk ? { alwaysAsk: true } : {}),
        ...(t.exclusive ? { exclusive: true } : {}),
        ...(t.idempotent !== undefined ? { idempotent: t.idempotent } : {}),
        ...(t.openWorld !== undefined ? { openWorld: t.openWorld } : {}),
        ...(t.timeoutSeconds ? { timeoutSeconds: t.timeoutSeconds } : {}),
        ...(t.accounts?.length ? { accounts: t.accounts } : {}),
        inputSchema,
        ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
      });
    });
  }
  if (p.list.length) throw refusal(p.list);

  const manifest: Manifest = { id: id!, name: addonName!, description: description!, webhook: webhook!, visibility, tools };
  if (releaseNotes) manifest.releaseNotes = releaseNotes;
  if (addonIcons?.length) manifest.icons = addonIcons;
  if (toolsPerPerson) manifest.toolsPerPerson = true;
  if (settings?.length) manifest.settings = settings;
  if (accounts?.length) manifest.accounts = accounts;
  return { manifest, tools: compiled, warnings: lintManifest(manifest), icons };
}

/**
 * A checked manifest's fingerprint: equal for the same manifest however it is laid out. `toolport dev`
 * compares its own (this very function, inlined in the CLI) with the current release's, so an
 * unchanged manifest is not published again.
 */
export const manifestDigest = (manifest: Manifest): string => createHash('sha256').update(canonicalJson(manifest)).digest('base64url');

function refusal(errors: FieldError[]): ToolportError {
  const n = errors.length;
  const listed = n > MAX_LISTED
    ? [...errors.slice(0, MAX_LISTED), { path: '', message: `…and ${n - MAX_LISTED} more problems.` }]
    : errors;
  return new ToolportError('VALIDATION', `The manifest has ${n} problem${n === 1 ? '' : 's'}.`, { errors: listed });
}

// Settings: what the person fills in per install (API keys, preferences), limited like arguments.

const SETTING_KEYS = ['name', 'title', 'summary', 'kind', 'required', 'choices', 'default'];
const SETTING_KINDS: readonly SettingKind[] = ['text', 'number', 'boolean', 'choice', 'secret'];
const SETTING_KIND_ALIASES: Record<string, SettingKind> = {
  string: 'text', str: 'text', password: 'secret', token: 'secret', apikey: 'secret', api_key: 'secret',
  integer: 'number', int: 'number', float: 'number', bool: 'boolean', enum: 'choice', select: 'choice',
};

function checkSettingChoices(v: unknown, at: string, p: Problems): string[] | undefined {
  return checkChoiceList(v, at, p, { what: '`choices`', max: SETTING_LIMITS.choices, maxLength: SETTING_LIMITS.choiceLength });
}

function checkSetting(v: unknown, at: string, p: Problems): ManifestSetting | undefined {
  if (!isPlainObject(v)) {
    p.add(at, 'A setting must be an object: {"name": ..., "title": ..., "kind": "text"}.');
    return undefined;
  }
  const before = p.list.length;
  unknownKeys(v, SETTING_KEYS, at, 'a setting', p);
  const settingName = name(v.name, ptr(at, 'name'), TOOL_NAME, 'The setting name',
    'a lowercase letter, then up to 31 lowercase letters, digits or underscores', p);
  const title = text(v, 'title', at, p, { label: 'The setting title', max: SETTING_LIMITS.title, prose: false });
  const summary = v.summary === undefined ? '' : text(v, 'summary', at, p, { label: 'The setting summary', max: SETTING_LIMITS.summary, allowEmpty: true });
  const required = bool(v, 'required', at, p);
  let kind: SettingKind | undefined;
  if (typeof v.kind === 'string' && (SETTING_KINDS as readonly string[]).includes(v.kind)) kind = v.kind as SettingKind;
  else {
    const meant = typeof v.kind === 'string' ? SETTING_KIND_ALIASES[v.kind.toLowerCase()] : undefined;
    p.add(ptr(at, 'kind'), v.kind === undefined
      ? `A setting needs a \`kind\`: ${SETTING_KINDS.map((k) => `"${k}"`).join(', ')}.`
      : `The setting kind ${show(v.kind)} is not one Toolport knows${meant ? `; did you mean "${meant}"?` : `: use ${SETTING_KINDS.map((k) => `"${k}"`).join(', ')}.`}`);
  }
  let choices: string[] | undefined;
  if (kind === 'choice') {
    choices = v.choices === undefined
      ? (p.add(ptr(at, 'choices'), `A choice setting needs \`choices\`: a list of 1 to ${SETTING_LIMITS.choices} strings.`), undefined)
      : checkSettingChoices(v.choices, ptr(at, 'choices'), p);
  } else if (v.choices !== undefined && kind) {
    p.add(ptr(at, 'choices'), `Only a setting of kind "choice" takes \`choices\` (this one is "${kind}").`);
  }
  let value: ManifestSetting['default'];
  if (v.default !== undefined && kind) {
    if (kind === 'secret') {
      p.add(ptr(at, 'default'), 'A secret setting cannot have a `default`: a secret in the manifest is no secret. The person gives it when installing.');
    } else if (kind !== 'choice' || choices) {
      const d = typeof v.default === 'string' ? v.default.normalize('NFC') : v.default;
      const invisible = typeof d === 'string' ? invisibleProblem(d) : null;
      const problem = invisible ?? settingValueProblem({ kind, choices }, d);
      if (problem) p.add(ptr(at, 'default'), `The default ${problem}.`);
      else value = d as ManifestSetting['default'];
    }
  }
  if (p.list.length !== before || !settingName || title === undefined || summary === undefined || !kind) return undefined;
  const setting: ManifestSetting = { name: settingName, title, kind, required: required ?? false };
  if (summary) setting.summary = summary;
  if (choices) setting.choices = choices;
  if (value !== undefined) setting.default = value;
  return setting;
}

/** The manifest's `settings`: up to 20, each name once. */
function checkSettings(v: unknown, at: string, p: Problems): ManifestSetting[] | undefined {
  if (!Array.isArray(v)) {
    p.add(at, `\`settings\` must be a list of up to ${SETTING_LIMITS.settings} settings: [{"name": "api_key", "title": "API key", "kind": "secret"}].`);
    return undefined;
  }
  if (v.length > SETTING_LIMITS.settings) {
    p.add(at, `An add-on has at most ${SETTING_LIMITS.settings} settings (got ${v.length}).`);
    return undefined;
  }
  const out: ManifestSetting[] = [];
  const seen = new Map<string, number>();
  v.forEach((s, i) => {
    const checked = checkSetting(s, ptr(at, i), p);
    const n = isPlainObject(s) && typeof s.name === 'string' ? s.name : undefined;
    if (n !== undefined) {
      const first = seen.get(n);
      if (first !== undefined) p.add(ptr(at, i, 'name'), `The setting name \`${n}\` is already used by ${ptr(at, first)}.`);
      else seen.set(n, i);
    }
    if (checked) out.push(checked);
  });
  return out;
}

// Connected accounts: the OAuth providers whose accounts the person connects for the add-on.

/** Limits of manifest `accounts` and of the developer's client for each (docs/addons.md "Connected accounts"). */
export const ACCOUNT_LIMITS = {
  providers: 5,
  title: 60,
  /** Characters of an endpoint URL, as for the webhook. */
  url: MANIFEST_LIMITS.webhook,
  scopes: 20,
  scopeLength: 200,
  /** Characters of the developer's client id. */
  clientId: 512,
  /** Characters of the developer's client secret: room for a long one, not for a file. */
  clientSecret: 4_096,
} as const;

const ACCOUNT_KEYS = ['provider', 'title', 'authorizationUrl', 'tokenUrl', 'revocationUrl', 'scopes'];
/** Keys of the client, which the developer API stores sealed: a secret in the manifest is no secret. */
const CLIENT_KEYS = ['clientId', 'clientSecret', 'client_id', 'client_secret'];
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** RFC 6749 3.3 scope-token: printable ASCII except space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * https, since tokens and the client secret travel on it (http only on loopback, for local
 * development). Private addresses are checked when Toolport calls it.
 */
function checkProviderUrl(obj: Record<string, unknown>, key: string, at: string, label: string, p: Problems): string | undefined {
  const example = 'an absolute https URL such as https://example.com/oauth/token';
  return checkUrl(obj[key], ptr(at, key), p, {
    missing: `${label} is missing: give \`${key}\`, ${example}.`,
    notString: `${label} must be ${example}.`,
    unparsable: () => `${label} must be ${example}.`,
    noun: label,
    scheme: (url) => {
      if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'must use https (http only on localhost, 127.0.0.1 or [::1])';
      return url.protocol === 'https:' ? undefined : `must use https (got ${url.protocol.slice(0, -1)})`;
    },
    credentials: 'the client id and secret are stored through the developer API',
    max: ACCOUNT_LIMITS.url,
  });
}

function checkScopes(v: unknown, at: string, p: Problems): string[] | undefined {
  const shape = `a list of up to ${ACCOUNT_LIMITS.scopes} scopes, for example ["repo", "read:user"]`;
  if (v === undefined) {
    p.add(at, `A provider needs \`scopes\`: ${shape} (an empty list asks for none).`);
    return undefined;
  }
  if (!Array.isArray(v)) {
    p.add(at, `\`scopes\` must be ${shape}.`);
    return undefined;
  }
  if (v.length > ACCOUNT_LIMITS.scopes) {
    p.add(at, `A provider asks for at most ${ACCOUNT_LIMITS.scopes} scopes (got ${v.length}).`);
    return undefined;
  }
  const before = p.list.length;
  const seen = new Map<string, number>();
  v.forEach((scope, i) => {
    const here = ptr(at, i);
    if (typeof scope !== 'string' || scope.length === 0) {
      p.add(here, `A scope must be a non-empty string (got ${show(scope)}).`);
    } else if (scope.length > ACCOUNT_LIMITS.scopeLength) {
      p.add(here, `A scope is at most ${ACCOUNT_LIMITS.scopeLength} characters (got ${scope.length}).`);
    } else if (!SCOPE_TOKEN.test(scope)) {
      p.add(here, `The scope ${show(scope)} must be printable ASCII with no spaces, quotes or backslashes (RFC 6749): give each scope as its own string.`);
    } else if (seen.has(scope)) {
      p.add(here, `The scope ${show(scope)} is already listed at ${ptr(at, seen.get(scope)!)}.`);
    } else {
      seen.set(scope, i);
    }
  });
  return p.list.length === before ? (v as string[]) : undefined;
}

function checkAccount(v: unknown, at: string, p: Problems): ManifestAccount | undefined {
  if (!isPlainObject(v)) {
    p.add(at, 'A provider must be an object: {"provider": "github", "title": "GitHub", "authorizationUrl": ..., "tokenUrl": ..., "scopes": [...]}.');
    return undefined;
  }
  const before = p.list.length;
  for (const key of Object.keys(v)) {
    if (CLIENT_KEYS.includes(key)) {
      // Said without the value: it may be a secret.
      p.add(ptr(at, key), `The OAuth client does not belong in the manifest, which anyone who installs the add-on may read: store it through the developer API (PUT /api/addons/{id}/accounts/{provider}/client).`);
    }
  }
  unknownKeys(Object.fromEntries(Object.entries(v).filter(([k]) => !CLIENT_KEYS.includes(k))), ACCOUNT_KEYS, at, 'a provider', p);
  const provider = name(v.provider, ptr(at, 'provider'), TOOL_NAME, 'The provider name',
    'a lowercase letter, then up to 31 lowercase letters, digits or underscores', p);
  const title = text(v, 'title', at, p, { label: 'The provider title', max: ACCOUNT_LIMITS.title, prose: false });
  const authorizationUrl = checkProviderUrl(v, 'authorizationUrl', at, 'The authorization URL', p);
  const tokenUrl = checkProviderUrl(v, 'tokenUrl', at, 'The token URL', p);
  const revocationUrl = v.revocationUrl === undefined ? undefined : checkProviderUrl(v, 'revocationUrl', at, 'The revocation URL', p);
  const scopes = checkScopes(v.scopes, ptr(at, 'scopes'), p);
  if (p.list.length !== before || !provider || title === undefined || !authorizationUrl || !tokenUrl || !scopes) return undefined;
  const account: ManifestAccount = { provider, title, authorizationUrl, tokenUrl, scopes };
  if (revocationUrl) account.revocationUrl = revocationUrl;
  return account;
}

/** The manifest's `accounts`: up to 5 providers, each once. */
function checkAccounts(v: unknown, at: string, p: Problems): ManifestAccount[] | undefined {
  if (!Array.isArray(v)) {
    p.add(at, `\`accounts\` must be a list of up to ${ACCOUNT_LIMITS.providers} providers: [{"provider": "github", "title": "GitHub", "authorizationUrl": ..., "tokenUrl": ..., "scopes": ["repo"]}].`);
    return undefined;
  }
  if (v.length > ACCOUNT_LIMITS.providers) {
    p.add(at, `An add-on declares at most ${ACCOUNT_LIMITS.providers} providers (got ${v.length}).`);
    return undefined;
  }
  const out: ManifestAccount[] = [];
  const seen = new Map<string, number>();
  v.forEach((a, i) => {
    const checked = checkAccount(a, ptr(at, i), p);
    const n = isPlainObject(a) && typeof a.provider === 'string' ? a.provider : undefined;
    if (n !== undefined) {
      const first = seen.get(n);
      if (first !== undefined) p.add(ptr(at, i, 'provider'), `The provider \`${n}\` is already declared by ${ptr(at, first)}.`);
      else seen.set(n, i);
    }
    if (checked) out.push(checked);
  });
  return out;
}

/** Whether each is declared is checked later, by checkToolProviders. */
function checkToolAccounts(v: unknown, at: string, p: Problems): string[] | undefined {
  if (!Array.isArray(v)) {
    p.add(at, `A tool's \`accounts\` must be a list of up to ${ACCOUNT_LIMITS.providers} provider names from the manifest's \`accounts\`, for example ["github"].`);
    return undefined;
  }
  if (v.length > ACCOUNT_LIMITS.providers) {
    p.add(at, `A tool needs at most ${ACCOUNT_LIMITS.providers} providers (got ${v.length}).`);
    return undefined;
  }
  const before = p.list.length;
  const seen = new Map<string, number>();
  v.forEach((n, i) => {
    const here = ptr(at, i);
    const provider = name(n, here, TOOL_NAME, 'The provider name', 'a lowercase letter, then up to 31 lowercase letters, digits or underscores', p);
    if (provider === undefined) return;
    const first = seen.get(provider);
    if (first !== undefined) p.add(here, `The provider \`${provider}\` is already listed at ${ptr(at, first)}.`);
    else seen.set(provider, i);
  });
  return p.list.length === before ? (v as string[]) : undefined;
}

/**
 * Every provider a tool names must be one the manifest declares. Read from the input, so a provider
 * declared with a mistake elsewhere (a bad URL) is reported there, not again at each tool.
 */
function checkToolProviders(tools: unknown[], declaredInput: unknown, p: Problems) {
  const declared = new Set(
    Array.isArray(declaredInput) ? declaredInput.flatMap((a) => (isPlainObject(a) && typeof a.provider === 'string' ? [a.provider] : [])) : [],
  );
  const list = [...declared].map((d) => `"${d}"`).join(', ');
  tools.forEach((t, i) => {
    if (!isPlainObject(t) || !Array.isArray(t.accounts) || t.accounts.length > ACCOUNT_LIMITS.providers) return;
    const named = new Set<string>();
    t.accounts.forEach((n, j) => {
      if (typeof n !== 'string' || !TOOL_NAME.test(n) || declared.has(n) || named.has(n)) return;
      named.add(n);
      p.add(ptr('/tools', i, 'accounts', j), declared.size
        ? `The provider \`${n}\` is not declared in the manifest's \`accounts\` (it declares ${list}): declare it there, with its endpoints and scopes, or take it off this tool.`
        : `The provider \`${n}\` is not declared: the manifest has no \`accounts\`. Declare it there, with its endpoints and scopes, or take it off this tool.`);
    });
  });
}
