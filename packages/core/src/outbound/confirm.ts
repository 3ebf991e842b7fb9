import { cleanSentence } from '../text/sentence';
import type { ConfirmDescriptor } from './types';

const MAX_CONFIRM_MESSAGE = 500;
const MAX_CONFIRM_INFO = 20;
const MAX_CONFIRM_TEXT = 200;
const MAX_IMAGE_URL = 2048;
/**
 * How much of a `tool.confirm` answer is read. Far more than a bounded descriptor needs: one far
 * over its bounds is still shown, cut, rather than dropped for the plain approval.
 */
export const MAX_CONFIRM_BYTES = 2 * 1024 * 1024;
/** Row numbers named in the delivery log's note before "and N more". */
const NAMED_ROWS = 5;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Code points, without building an array of a megabyte's characters. */
function codePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) n--;
  }
  return n;
}

const cutTo = (flat: string, max: number) => `${Array.from(flat).slice(0, max - 1).join('').trimEnd()}…`;

/**
 * Cleaning only removes characters, so growing prefixes are cleaned until one exceeds `max`: a
 * 1 MB message costs a few KB of work. `was` is the length as sent.
 */
function bound(raw: string, max: number): { text: string; was?: number } {
  for (let take = max * 4; take < raw.length; take *= 4) {
    const flat = cleanSentence(raw.slice(0, take), Number.MAX_SAFE_INTEGER);
    if (codePoints(flat) > max) return { text: cutTo(flat, max), was: codePoints(raw) };
  }
  const flat = cleanSentence(raw, Number.MAX_SAFE_INTEGER);
  return codePoints(flat) <= max ? { text: flat } : { text: cutTo(flat, max), was: codePoints(raw) };
}

/** `confirm.info[2], [7] and 3 more`: the JSON paths of the rows, as the developer wrote them. */
const rowList = (rows: number[]) =>
  `confirm.info${rows.slice(0, NAMED_ROWS).map((i) => `[${i}]`).join(', ')}` + (rows.length > NAMED_ROWS ? ` and ${rows.length - NAMED_ROWS} more` : '');

/**
 * Raycast's Tool.Confirmation shape. Too long is cut, never refused; only a wrong shape is refused
 * (a string saying why), which falls back to the plain approval.
 */
export function readConfirm(c: unknown): { confirm: ConfirmDescriptor | null; cut?: string; imageUrl?: string } | string {
  if (c === null) return { confirm: null };
  if (!isObject(c)) return 'confirm must be null or an object';
  if (typeof c.message !== 'string') return 'confirm.message must be a string';
  const cuts: string[] = [];
  const message = bound(c.message, MAX_CONFIRM_MESSAGE);
  if (!message.text) return 'confirm.message is empty';
  if (message.was) cuts.push(`confirm.message cut from ${message.was} to ${MAX_CONFIRM_MESSAGE} characters`);
  const out: ConfirmDescriptor = { message: message.text };
  if (c.info !== undefined) {
    if (!Array.isArray(c.info)) return 'confirm.info must be a list';
    const info: Array<{ name: string; value: string }> = [];
    const cutRows: number[] = [];
    let omitted = 0;
    for (const [i, item] of c.info.entries()) {
      if (info.length === MAX_CONFIRM_INFO) {
        // Past the shown rows nothing is read but whether the row would have been shown.
        if (isObject(item) && typeof item.value === 'string') omitted++;
        continue;
      }
      if (!isObject(item) || typeof item.name !== 'string') return `confirm.info[${i}] needs a name (a string)`;
      if (item.value === undefined || item.value === null) continue;
      if (typeof item.value !== 'string') return `confirm.info[${i}].value must be a string when present`;
      const name = bound(item.name, MAX_CONFIRM_TEXT);
      const value = bound(item.value, MAX_CONFIRM_TEXT);
      if (!name.text) return `confirm.info[${i}].name is empty`;
      if (name.was || value.was) cutRows.push(i);
      info.push({ name: name.text, value: value.text });
    }
    out.info = info;
    if (cutRows.length) cuts.push(`${rowList(cutRows)} cut to ${MAX_CONFIRM_TEXT} characters`);
    if (omitted) {
      out.infoOmitted = omitted;
      cuts.push(`confirm.info has ${info.length + omitted} rows with a value: the first ${MAX_CONFIRM_INFO} are shown, ${omitted} left out`);
    }
  }
  if (c.style !== undefined) {
    if (c.style !== 'destructive' && c.style !== 'default') return 'confirm.style must be "destructive" or "default"';
    out.style = c.style;
  }
  // A picture that cannot be shown is left out, not the description: the person still sees the rest.
  let imageUrl: string | undefined;
  const notes: string[] = [];
  if (c.image !== undefined && c.image !== null) {
    if (typeof c.image === 'string' && c.image.length <= MAX_IMAGE_URL && /^https?:\/\/[^\s]+$/i.test(c.image)) imageUrl = c.image;
    else notes.push(`confirm.image left out: it must be an http or https URL of at most ${MAX_IMAGE_URL} characters.`);
  }
  const cut = [...(cuts.length ? [`Shown cut to fit: ${cuts.join('; ')}.`] : []), ...notes].join(' ');
  return { confirm: out, ...(cut ? { cut } : {}), ...(imageUrl ? { imageUrl } : {}) };
}
