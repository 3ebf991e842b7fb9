/** Argument kinds exactly as addon.json spells them (DESIGN.md, "Add-on manifest"). */
export type ArgumentKind =
  | { text: { maxLength: number } }
  | { number: { minimum?: number; maximum?: number; whole?: boolean } }
  | 'boolean'
  | { choice: string[] };

/**
 * One declared argument. `T` is the value's TypeScript type, `R` whether it is required; both exist
 * only so `run(args)` is typed from the declaration.
 */
export interface Arg<T, R extends boolean = true> {
  readonly kind: ArgumentKind;
  readonly summary: string;
  readonly required: R;
  /** The same argument, not required. */
  optional(): Arg<T, false>;
  /** Type-only marker; never set. */
  readonly __type?: T;
}

export type ArgMap = Record<string, Arg<any, boolean>>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type ValueOf<A> = A extends Arg<infer T, boolean> ? T : never;

/** The `args` a tool's `run` receives: required arguments present, optional ones possibly absent. */
export type ArgsOf<A extends ArgMap> = Simplify<
  { [K in keyof A as A[K] extends Arg<any, true> ? K : never]: ValueOf<A[K]> } & {
    [K in keyof A as A[K] extends Arg<any, true> ? never : K]?: ValueOf<A[K]>;
  }
>;

function makeArg<T, R extends boolean>(kind: ArgumentKind, summary: string, required: R): Arg<T, R> {
  return {
    kind,
    summary,
    required,
    optional: () => makeArg<T, false>(kind, summary, false),
  };
}

interface Common<R extends boolean> {
  /** What the argument means, for the model. */
  summary: string;
  /** Defaults to true. */
  required?: R;
}

/** Text of at most `maxLength` characters (Toolport normalises to NFC before counting). */
export function text<R extends boolean = true>(o: Common<R> & { maxLength: number }): Arg<string, R> {
  return makeArg(
    { text: { maxLength: o.maxLength } },
    o.summary,
    (o.required ?? true) as R,
  );
}

/** A finite number, optionally bounded and whole. */
export function number<R extends boolean = true>(
  o: Common<R> & { min?: number; max?: number; whole?: boolean },
): Arg<number, R> {
  const n: { minimum?: number; maximum?: number; whole?: boolean } = {};
  if (o.min !== undefined) n.minimum = o.min;
  if (o.max !== undefined) n.maximum = o.max;
  if (o.whole !== undefined) n.whole = o.whole;
  return makeArg({ number: n }, o.summary, (o.required ?? true) as R);
}

/** true or false. */
export function boolean<R extends boolean = true>(o: Common<R>): Arg<boolean, R> {
  return makeArg('boolean', o.summary, (o.required ?? true) as R);
}

/** One of the given strings. */
export function choice<const C extends readonly string[], R extends boolean = true>(
  values: C,
  o: Common<R>,
): Arg<C[number], R> {
  return makeArg({ choice: [...values] }, o.summary, (o.required ?? true) as R);
}

const codePoints = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/**
 * Checks arguments again on the add-on's side. Toolport has already enforced the manifest, so this
 * only fires when the deployed code and the registered manifest disagree; it keeps `args` honest
 * to its TypeScript type.
 */
export function checkArguments(declared: ArgMap, input: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] } {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input)) return { ok: false, problems: ['The arguments must be an object.'] };
  const given = input as Record<string, unknown>;
  const problems: string[] = [];
  const value: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(given)) {
    if (!Object.hasOwn(declared, key)) problems.push(`"${key}" is not an argument of this tool.`);
  }
  for (const [name, arg] of Object.entries(declared)) {
    const v = given[name];
    if (v === undefined || !Object.hasOwn(given, name)) {
      if (arg.required) problems.push(`"${name}" is required.`);
      continue;
    }
    const kind = arg.kind;
    if (kind === 'boolean') {
      if (typeof v !== 'boolean') problems.push(`"${name}" must be true or false.`);
    } else if ('text' in kind) {
      if (typeof v !== 'string') problems.push(`"${name}" must be text.`);
      else if (codePoints(v.normalize('NFC')) > kind.text.maxLength) problems.push(`"${name}" must be at most ${kind.text.maxLength} characters.`);
    } else if ('number' in kind) {
      const { minimum, maximum, whole } = kind.number;
      if (typeof v !== 'number' || !Number.isFinite(v)) problems.push(`"${name}" must be a number.`);
      else if (whole && !Number.isSafeInteger(v)) problems.push(`"${name}" must be a whole number.`);
      else if (minimum !== undefined && v < minimum) problems.push(`"${name}" must be at least ${minimum}.`);
      else if (maximum !== undefined && v > maximum) problems.push(`"${name}" must be at most ${maximum}.`);
    } else if ('choice' in kind) {
      if (typeof v !== 'string' || !kind.choice.includes(v)) problems.push(`"${name}" must be one of ${kind.choice.map((c) => `"${c}"`).join(', ')}.`);
    }
    value[name] = v;
  }
  return problems.length ? { ok: false, problems } : { ok: true, value: { ...value } };
}
