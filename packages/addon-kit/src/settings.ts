import type { CallContext, Tool, ToolDefinition } from './define';
import type { ArgMap } from './arguments';

/** Setting kinds exactly as addon.json spells them (manifest `settings`). */
export type SettingKind = 'text' | 'number' | 'boolean' | 'choice' | 'secret';
export type SettingValue = string | number | boolean;

/**
 * One per-install setting: the person fills it in when installing, and every delivery carries its
 * value (`ctx.settings`). `T` is the value's type and `P` whether it is always present (required,
 * or with a default); both exist only so `ctx.settings` is typed from the declaration.
 */
export interface Setting<T extends SettingValue, P extends boolean = boolean> {
  readonly kind: SettingKind;
  readonly title: string;
  readonly summary?: string;
  readonly required: boolean;
  readonly choices?: readonly string[];
  readonly default?: T;
  /** Type-only markers; never set. */
  readonly __type?: T;
  readonly __present?: P;
}

export type SettingMap = Record<string, Setting<any, boolean>>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type ValueOf<S> = S extends Setting<infer T, boolean> ? T : never;

/** `ctx.settings`: required settings and those with a default are always there; others may be absent. */
export type SettingsOf<S extends SettingMap> = Simplify<
  { readonly [K in keyof S as S[K] extends Setting<any, true> ? K : never]: ValueOf<S[K]> } & {
    readonly [K in keyof S as S[K] extends Setting<any, true> ? never : K]?: ValueOf<S[K]>;
  }
>;

interface Common<R extends boolean> {
  /** What the person reads beside the field, up to 60 characters. */
  title: string;
  /** A line under the field, up to 200 characters. */
  summary?: string;
  /** Calls answer with a sentence telling the person where to set it until they do. Default false. */
  required?: R;
}

type Present<R extends boolean, D> = R extends true ? true : undefined extends D ? false : true;

function make<T extends SettingValue, P extends boolean>(kind: SettingKind, o: Common<boolean> & { default?: T; choices?: readonly string[] }): Setting<T, P> {
  return {
    kind,
    title: o.title,
    ...(o.summary !== undefined ? { summary: o.summary } : {}),
    required: o.required ?? false,
    ...(o.choices ? { choices: o.choices } : {}),
    ...(o.default !== undefined ? { default: o.default } : {}),
  };
}

/** Builders of per-install settings: `setting.text({ title: 'Signature' })`. */
export const setting = {
  /** Text of up to 2,000 characters. */
  text: <R extends boolean = false, D extends string | undefined = undefined>(o: Common<R> & { default?: D }) =>
    make<string, Present<R, D>>('text', o),
  /** A finite number. */
  number: <R extends boolean = false, D extends number | undefined = undefined>(o: Common<R> & { default?: D }) =>
    make<number, Present<R, D>>('number', o),
  /** A checkbox. */
  boolean: <R extends boolean = false, D extends boolean | undefined = undefined>(o: Common<R> & { default?: D }) =>
    make<boolean, Present<R, D>>('boolean', o),
  /** One of 1 to 20 choices of up to 60 characters. */
  choice: <const C extends readonly string[], R extends boolean = false, D extends C[number] | undefined = undefined>(
    o: Common<R> & { choices: C; default?: D },
  ) => make<C[number], Present<R, D>>('choice', o),
  /**
   * A secret (an API key, a token) of up to 4,096 characters: stored encrypted, never shown to the
   * person again after saving, sent only in the signed delivery. It has no default.
   */
  secret: <R extends boolean = false>(o: Common<R>) => make<string, R extends true ? true : false>('secret', o),
};

/** A tool whose `ctx.settings` is typed from `S`. */
export interface SettingsScope<S extends SettingMap> {
  readonly definition: S;
  /**
   * Declares one tool; `ctx.settings` in `run` and `confirm` is typed from these settings (and
   * `ctx.accounts` from the tool's `accounts`, as with `tool`).
   */
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a tool without arguments
  tool<A extends ArgMap = {}, const P extends string = never>(def: ToolDefinition<A, SettingsOf<S>, P>): Tool<A, P>;
}

/**
 * Declares an add-on's per-install settings: give the result to `defineAddon({ settings })` and
 * make the tools that read them with its `tool`, so `ctx.settings` is typed.
 */
export function settings<S extends SettingMap>(definition: S): SettingsScope<S> {
  return {
    definition,
    tool: (def) => ({ ...(def as ToolDefinition<any, any, any>), __tool: true }) as Tool<any, any>,
  };
}

/** A manifest setting, in addon.json's format. */
export interface ManifestSetting {
  name: string;
  title: string;
  summary?: string;
  kind: SettingKind;
  required?: boolean;
  choices?: string[];
  default?: SettingValue;
}

export function manifestSettings(map: SettingMap): ManifestSetting[] {
  return Object.entries(map).map(([name, s]) => ({
    name,
    title: s.title,
    ...(s.summary ? { summary: s.summary } : {}),
    kind: s.kind,
    ...(s.required ? { required: true } : {}),
    ...(s.choices ? { choices: [...s.choices] } : {}),
    ...(s.default !== undefined ? { default: s.default } : {}),
  }));
}

const kindOf = (v: unknown, s: Setting<any>): boolean => {
  if (s.kind === 'boolean') return typeof v === 'boolean';
  if (s.kind === 'number') return typeof v === 'number' && Number.isFinite(v);
  if (s.kind === 'choice') return typeof v === 'string' && (s.choices ?? []).includes(v);
  return typeof v === 'string';
};

/**
 * `ctx.settings` of one delivery: each declared setting's value from the signed body when it is of
 * the declared kind, else its default; settings the add-on does not declare are left out.
 */
export function settingsFrom(map: SettingMap | undefined, sent: unknown): CallContext['settings'] {
  const out: Record<string, SettingValue> = {};
  const given = sent && typeof sent === 'object' && !Array.isArray(sent) ? (sent as Record<string, unknown>) : {};
  for (const [name, s] of Object.entries(map ?? {})) {
    const v = Object.hasOwn(given, name) ? given[name] : undefined;
    if (v !== undefined && kindOf(v, s)) out[name] = v as SettingValue;
    else if (s.default !== undefined) out[name] = s.default;
  }
  return Object.freeze(out);
}
