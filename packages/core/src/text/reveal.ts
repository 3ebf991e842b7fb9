/**
 * Makes characters that can hide or disguise text visible before a person approves something:
 * zero-width and invisible characters, bidi controls (which can reorder what is shown), control
 * characters, tag characters and variation selectors, everywhere; and in identifiers (app, add-on,
 * tool and argument names) any non-ASCII letter, since "dеlete" with a Cyrillic е looks like ASCII.
 * Shared by the dashboard (bundled from here) and the Web Push body, so both show the same thing;
 * it must stay free of Node APIs.
 */
export type Segment = { text: string } | { hidden: string; code: string };

const invisible =
  // eslint-disable-next-line no-control-regex, no-misleading-character-class -- it lists hidden characters one by one on purpose
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF9-\uFFFB\u{E0000}-\u{E007F}\u{E0100}-\u{E01EF}]/u;

function isSuspicious(ch: string, identifier: boolean): boolean {
  if (invisible.test(ch)) return true;
  if (identifier && ch.codePointAt(0)! > 0x7e) return true;
  return false;
}

const codeOf = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** Splits text into plain runs and flagged characters. */
export function reveal(text: string, identifier = false): Segment[] {
  const out: Segment[] = [];
  let run = '';
  for (const ch of text) {
    if (isSuspicious(ch, identifier)) {
      if (run) out.push({ text: run });
      run = '';
      out.push({ hidden: ch, code: codeOf(ch) });
    } else run += ch;
  }
  if (run) out.push({ text: run });
  return out;
}

/** Plain text with every suspicious character spelled out as ⟦U+XXXX⟧. */
export function revealText(text: string, identifier = false): string {
  return reveal(text, identifier)
    .map((s) => ('text' in s ? s.text : `⟦${s.code}⟧`))
    .join('');
}

export const hasSuspicious = (text: string, identifier = false) => reveal(text, identifier).some((s) => !('text' in s));
