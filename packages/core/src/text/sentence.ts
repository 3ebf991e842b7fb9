// Line breaks become spaces; other control and bidi-override characters go (they could hide or reorder text).
const CONTROL = /[\p{Cc}\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]/gu;

/** Trims, strips control characters and cuts to `max` code points. */
export function cleanSentence(text: string, max: number): string {
  const flat = text.replace(/[\r\n\t]+/g, ' ').replace(CONTROL, '').trim();
  const chars = Array.from(flat);
  return chars.length <= max ? flat : `${chars.slice(0, max - 1).join('').trimEnd()}…`;
}
