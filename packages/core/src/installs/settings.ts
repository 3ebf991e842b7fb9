import { and, eq, isNull } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { notFound, ToolportError, validation, type FieldError } from '../errors';
import type { Services } from '../services';
import { quotedName } from '../input';
import type { Db } from '../db/client';
import { addons, installs } from '../db/schema/index';
import { currentManifest } from '../addons/current-release';
import type { ManifestSetting, SettingKind } from '../addons/types';
import { settingValueProblem, type SettingValue } from '../addons/setting-values';

/**
 * Sealed. `k` keeps the kind each value was saved as, so a release that turns a secret into a text
 * setting never shows the saved secret. Values are never logged or in an error, span or call log.
 */
interface Stored {
  v: Record<string, SettingValue>;
  k: Record<string, SettingKind>;
}

const EMPTY: Stored = { v: {}, k: {} };

function openStored(svc: Services, sealed: string | null): Stored {
  if (!sealed) return EMPTY;
  const parsed = JSON.parse(svc.secrets.installSettingsBox.open(sealed)) as Partial<Stored>;
  return { v: parsed.v ?? {}, k: parsed.k ?? {} };
}

const sealStored = (svc: Services, s: Stored): string | null =>
  Object.keys(s.v).length ? svc.secrets.installSettingsBox.seal(JSON.stringify(s)) : null;

/** Whether `name` holds a value saved under the kind the add-on declares now. */
const isSet = (s: Stored, d: ManifestSetting) => Object.hasOwn(s.v, d.name) && s.k[d.name] === d.kind;

/** The add-on's name (for sentences) and the settings its current release declares. */
async function declaredSettings(db: Db, addonId: string): Promise<{ name: string; declared: ManifestSetting[] }> {
  const found = await currentManifest(db, and(eq(addons.id, addonId), isNull(addons.deletedAt)));
  return { name: found?.name ?? addonId, declared: found?.manifest.settings ?? [] };
}

/** The settings an add-on asks for, shown before installing (catalog details). */
export const catalogSettings = async (db: Db, addonId: string) => (await declaredSettings(db, addonId)).declared;

/** What the person sees of one setting: a secret only says whether it is set, never its value. */
function settingView(d: ManifestSetting, s: Stored) {
  const set = isSet(s, d);
  return {
    name: d.name,
    title: d.title,
    summary: d.summary ?? '',
    kind: d.kind,
    required: d.required,
    ...(d.choices ? { choices: d.choices } : {}),
    ...(d.default !== undefined ? { default: d.default } : {}),
    set,
    ...(d.kind === 'secret' ? {} : { value: set ? s.v[d.name]! : null }),
  };
}

function settingsView(addonId: string, declared: ManifestSetting[], s: Stored) {
  return {
    addon: addonId,
    settings: declared.map((d) => settingView(d, s)),
    /** Required settings without a value: calls answer with a sentence until they are set. */
    missing: declared.filter((d) => d.required && !isSet(s, d)).map((d) => d.name),
  };
}

async function installRow(db: Db, userId: string, addonId: string, lock = false) {
  const q = db
    .select({ sealed: installs.settingsEnc })
    .from(installs)
    .innerJoin(addons, eq(addons.id, installs.addonId))
    .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId), isNull(addons.deletedAt)));
  const [row] = await (lock ? q.for('update', { of: installs }) : q);
  return row;
}

/** `GET` and `PUT /api/installs/{addon}/settings`. */
export type InstallSettingsView = ReturnType<typeof settingsView>;

/** `GET /api/installs/{addon}/settings`: each declared setting, its kind, and its value unless secret. */
export async function getInstallSettings({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const userId = personId(ctx);
  const row = await installRow(ctx.svc.db, userId, addonId);
  if (!row) throw notFound('That install');
  return settingsView(addonId, (await declaredSettings(ctx.svc.db, addonId)).declared, openStored(ctx.svc, row.sealed));
}


/** Every problem is listed; nothing is kept when there is one. */
function applyValues(declared: ManifestSetting[], stored: Stored, values: unknown, addonName: string): Stored {
  if (values === undefined) return stored;
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw validation('Give the settings as an object of setting names to values, for example {"api_key": "..."}.');
  }
  const byName = new Map(declared.map((d) => [d.name, d]));
  const errors: FieldError[] = [];
  const next: Stored = { v: { ...stored.v }, k: { ...stored.k } };
  for (const [name, value] of Object.entries(values as Record<string, unknown>)) {
    const d = byName.get(name);
    if (!d) {
      errors.push({ path: `/${name.slice(0, 64)}`, message: `The add-on "${addonName}" has no setting ${quotedName(name)}.` });
      continue;
    }
    if (value === null) {
      if (d.required) errors.push({ path: `/${name}`, message: `The setting "${d.title}" is required: it can be replaced, not cleared.` });
      delete next.v[name];
      delete next.k[name];
      continue;
    }
    const problem = settingValueProblem(d, value);
    if (problem) {
      errors.push({ path: `/${name}`, message: `The setting "${d.title}" ${problem}.` });
      continue;
    }
    next.v[name] = value as SettingValue;
    next.k[name] = d.kind;
  }
  // Values of settings the current release no longer declares are dropped on the next save.
  for (const name of Object.keys(next.v)) {
    if (!byName.has(name)) {
      delete next.v[name];
      delete next.k[name];
    }
  }
  if (errors.length) throw new ToolportError('VALIDATION', errors.length === 1 ? errors[0]!.message : 'Some settings are not valid.', { errors });
  return next;
}

/** Partial: an omitted setting keeps its value (a secret is only ever replaced). */
export async function setInstallSettings({ ctx, addonId, input }: { ctx: Ctx; addonId: string; input: unknown }) {
  const userId = personId(ctx);
  if (typeof input !== 'object' || input === null || Array.isArray(input) || !('values' in input)) {
    // Another person's install must not be told apart from a malformed request by its sentence.
    if (!(await installRow(ctx.svc.db, userId, addonId))) throw notFound('That install');
    throw validation('Send the settings as {"values": {"name": value}}.');
  }
  const { name, declared } = await declaredSettings(ctx.svc.db, addonId);
  const saved = await ctx.svc.db.transaction(async (tx) => {
    const row = await installRow(tx as unknown as Db, userId, addonId, true);
    if (!row) throw notFound('That install');
    const next = applyValues(declared, openStored(ctx.svc, row.sealed), (input as { values: unknown }).values, name);
    await tx
      .update(installs)
      .set({ settingsEnc: sealStored(ctx.svc, next) })
      .where(and(eq(installs.userId, userId), eq(installs.addonId, addonId)));
    return next;
  });
  // The person's enabled tools carry the sealed values: every process drops its copy.
  await ctx.svc.changes.changed('tools', { userId });
  return settingsView(addonId, declared, saved);
}

/** Refuses bad values before anything is installed. */
export async function initialSettings(svc: Services, addonId: string, values: unknown): Promise<string | null> {
  const { name, declared } = await declaredSettings(svc.db, addonId);
  const defaults: Stored = { v: {}, k: {} };
  for (const d of declared) {
    if (d.default !== undefined) {
      defaults.v[d.name] = d.default;
      defaults.k[d.name] = d.kind;
    }
  }
  return sealStored(svc, applyValues(declared, defaults, values, name));
}

/** What the call path carries of an install's settings: sealed values, and the required ones unset. */
export interface ToolSettings {
  /** The values, sealed: the job carries them to the worker, which opens them to sign the delivery. */
  sealed: string | null;
  /** Titles of required settings without a value: the call answers with a sentence, nothing is sent. */
  missing: string[];
}

/** Cached with the enabled tools. Opened here only to tell what is missing. */
export function toolSettings(svc: Services, sealed: string | null, declared: unknown): ToolSettings {
  const list = Array.isArray(declared) ? (declared as ManifestSetting[]) : [];
  const required = list.filter((d) => d.required);
  if (!required.length) return { sealed, missing: [] };
  let stored = EMPTY;
  try {
    stored = openStored(svc, sealed);
  } catch (err) {
    // Unreadable under this ring: treated as unset, so the person is asked to set them again.
    svc.log.warn('cannot open an install\'s settings; treating them as unset', { err: err instanceof Error ? err.message : 'unreadable' });
  }
  return { sealed, missing: required.filter((d) => !isSet(stored, d)).map((d) => d.title) };
}

/** The sentence a call gets while a required setting is missing (nothing is delivered). */
export function needsSetupSentence(svc: Services, addonId: string, addonName: string, missing: string[]): string {
  const names = missing.map((m) => `"${m}"`).join(', ');
  return `The add-on "${addonName}" needs ${missing.length === 1 ? 'a setting' : 'settings'} before it can run: ${names}. Set ${missing.length === 1 ? 'it' : 'them'} in Toolport: ${svc.config.publicUrl}/addons/${addonId}`;
}

/** The delivery's `settings` object as JSON text: opened in the worker, put only in the signed body. */
export function settingsJson(svc: Services, sealed: string): string {
  return JSON.stringify(openStored(svc, sealed).v);
}
