/**
 * A tool's argument or answer schema as a person reads it in an update's review: "a yes/no choice",
 * "text up to 200 characters", "a whole number from 1 to 10", "one of: low, high", "a list of …".
 * It covers the JSON Schema keywords a manifest may use (packages/core/src/addons/schema.ts,
 * SCHEMA_KEYWORDS); an annotation a person does not need to compare (`description`, `title`,
 * `$schema`) says nothing here, the review shows an argument's description beside these words.
 */

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

const FORMATS: Record<string, string> = {
  'date-time': 'a date and time',
  date: 'a date',
  time: 'a time of day',
  email: 'an email address',
  hostname: 'a host name',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  uri: 'a web address',
  uuid: 'a UUID',
};

/** A value an enum, const, default or example gives, as written: text plain unless it would read ambiguously. */
function valueWords(v: unknown): string {
  if (typeof v === 'string') return v === '' || /[,;“”]|^\s|\s$/.test(v) ? `“${v}”` : v;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (v === null) return 'nothing';
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return v.length ? `a list of ${v.map(valueWords).join(', ')}` : 'an empty list';
  if (isSchema(v)) {
    const keys = Object.keys(v);
    return keys.length ? `fields ${keys.map((k) => `${k} ${valueWords(v[k])}`).join(', ')}` : 'an empty group of fields';
  }
  return String(v);
}

/** "up to 200", "of 1 to 10", "of at least 3", "of exactly 5" of `unit`s. */
function countWords(min: unknown, max: unknown, unit: string): string {
  const lo = isNumber(min) && min > 0 ? min : undefined;
  const hi = isNumber(max) ? max : undefined;
  if (lo !== undefined && hi !== undefined) return lo === hi ? `of exactly ${plural(hi, unit)}` : `of ${lo} to ${plural(hi, unit)}`;
  if (hi !== undefined) return `up to ${plural(hi, unit)}`;
  if (lo !== undefined) return `of at least ${plural(lo, unit)}`;
  return '';
}

function textWords(s: Schema): string {
  const length = countWords(s.minLength, s.maxLength, 'character');
  const format = typeof s.format === 'string' ? FORMATS[s.format] : undefined;
  let out = format ? `${format}${length ? `, ${length}` : ''}` : `text${length ? ` ${length}` : ''}`;
  if (typeof s.pattern === 'string') out += `, matching the pattern ${s.pattern}`;
  return out;
}

function numberWords(noun: string, s: Schema): string {
  const { minimum: min, maximum: max, exclusiveMinimum: above, exclusiveMaximum: below, multipleOf: step } = s;
  let range: string;
  if (isNumber(min) && isNumber(max)) range = `from ${min} to ${max}`;
  else {
    const low = isNumber(min) ? `at least ${min}` : isNumber(above) ? `greater than ${above}` : '';
    const high = isNumber(max) ? `up to ${max}` : isNumber(below) ? `less than ${below}` : '';
    // Each end as it is bounded: "greater than 0 and up to 10".
    range = [low, high].filter(Boolean).join(' and ');
  }
  const multiple = isNumber(step) ? `, a multiple of ${step}` : '';
  return `${noun}${range ? ` ${range.startsWith('at least') ? 'of ' : ''}${range}` : ''}${multiple}`;
}

function listWords(s: Schema): string {
  const items = countWords(s.minItems, s.maxItems, 'item').replace(/^of /, '');
  const count = items && `of ${items}`;
  const first = Array.isArray(s.prefixItems) ? s.prefixItems : [];
  if (first.length) {
    const listed = first.map((p, i) => `${i === 0 ? '' : 'then '}${describe(p)}`).join('; ');
    const rest = s.items === false ? ', and nothing after them' : s.items !== undefined ? `, then items that are each ${describe(s.items)}` : '';
    return `a list${count ? ` ${count}` : ''} whose first items are: ${listed}${rest}`;
  }
  return `a list${count ? ` ${count}` : ''}${s.items !== undefined && s.items !== true ? `, each ${describe(s.items)}` : ''}`;
}

function groupWords(s: Schema): string {
  const props = isSchema(s.properties) ? Object.entries(s.properties) : [];
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  const extra = s.additionalProperties;
  const others = isSchema(extra) ? `other fields, each ${describe(extra)}` : extra === false ? '' : props.length ? 'any other fields' : '';
  if (!props.length) return others ? `a group of ${others}` : 'an empty group of fields';
  const fields = props.map(([name, p]) => `${name} (${required.has(name) ? '' : 'optional: '}${describe(p)})`);
  return `a group of fields: ${fields.join('; ')}${others ? `; and ${others}` : ''}`;
}

const TYPE_WORDS: Record<string, (s: Schema) => string> = {
  boolean: () => 'a yes/no choice',
  string: textWords,
  integer: (s) => numberWords('a whole number', s),
  number: (s) => numberWords('a number', s),
  array: listWords,
  object: groupWords,
  null: () => 'nothing',
};

function describe(schema: unknown): string {
  if (schema === true || schema === undefined) return 'any value';
  if (schema === false) return 'nothing at all';
  if (!isSchema(schema)) return 'any value';
  let out: string;
  if ('const' in schema) out = `always ${valueWords(schema.const)}`;
  else if (Array.isArray(schema.enum)) out = `one of: ${schema.enum.map(valueWords).join(', ')}`;
  else {
    const declared = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === 'string') : [];
    // No type: what its keywords say it is (the top of an inputSchema may leave `type` out).
    const types = declared.length ? declared : 'properties' in schema ? ['object'] : 'items' in schema || 'prefixItems' in schema ? ['array'] : [];
    const some = types.filter((t) => t !== 'null' && TYPE_WORDS[t]).map((t) => TYPE_WORDS[t]!(schema));
    out = some.length ? some.join(' or ') : types.includes('null') ? 'nothing' : 'any value';
    if (some.length && types.includes('null')) out += ', or nothing';
  }
  if ('default' in schema) out += `; ${valueWords(schema.default)} if not given`;
  if (Array.isArray(schema.examples) && schema.examples.length) out += `; for example ${schema.examples.slice(0, 3).map(valueWords).join(', ')}`;
  return out;
}

export function schemaInWords(schema: unknown): string {
  return describe(schema);
}
