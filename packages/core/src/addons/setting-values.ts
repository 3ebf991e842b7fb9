import type { ManifestSetting } from './types';

/** Limits of manifest `settings` and of the values a person gives them (docs/addons.md "Settings"). */
export const SETTING_LIMITS = {
  settings: 20,
  title: 60,
  summary: 200,
  choices: 20,
  choiceLength: 60,
  /** Characters of a text value. */
  text: 2_000,
  /** Characters of a secret value: room for a long token or a PEM key, not for a file. */
  secret: 4_096,
} as const;

/** A setting's value as stored and delivered. */
export type SettingValue = string | number | boolean;

// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex -- a secret or a one-line text has no line breaks either
const CONTROL_ONE_LINE = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

const length = (s: string) => Array.from(s).length;

/**
 * Why `value` cannot be the value of `setting`, as the end of a sentence about it, or null. Never
 * quotes the value (it may be a secret, or part of one): it says what is wrong with it.
 */
export function settingValueProblem(setting: Pick<ManifestSetting, 'kind' | 'choices'>, value: unknown): string | null {
  switch (setting.kind) {
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'number':
      if (typeof value !== 'number') return 'must be a number';
      return Number.isFinite(value) ? null : 'must be a finite number';
    case 'choice':
      if (typeof value !== 'string' || !(setting.choices ?? []).includes(value)) {
        return `must be one of ${(setting.choices ?? []).map((c) => JSON.stringify(c)).join(', ')}`;
      }
      return null;
    case 'text':
    case 'secret': {
      const max = setting.kind === 'text' ? SETTING_LIMITS.text : SETTING_LIMITS.secret;
      if (typeof value !== 'string') return 'must be a string';
      // Counted before anything else looks at it: a megabyte is refused by its size alone.
      if (value.length > max * 2 || length(value) > max) return `is too long: at most ${max.toLocaleString('en-US')} characters`;
      if (LONE_SURROGATE.test(value)) return 'contains a broken character (a lone surrogate)';
      if ((setting.kind === 'secret' ? CONTROL_ONE_LINE : CONTROL).test(value)) return 'contains a control character';
      return null;
    }
    default:
      return 'has an unknown kind';
  }
}
