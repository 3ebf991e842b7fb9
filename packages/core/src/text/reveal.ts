/**
 * Makes hidden characters, and in names look-alike letters ("Сlaude" with a Cyrillic С, UTS #39),
 * visible before a person approves. Shared by the dashboard and the Web Push body: it must stay free
 * of Node APIs and of the confusables data (the dashboard loads that only when a name mixes scripts).
 */
export type Segment = { text: string } | { hidden: string; code: string; why: 'hidden' | 'lookalike' };

/** UTS #39 skeleton: a string as its prototype characters ("С" → "C"). */
export type Skeleton = (text: string) => string;

const invisible =
  // eslint-disable-next-line no-control-regex, no-misleading-character-class -- it lists hidden characters one by one on purpose
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF9-\uFFFB\u{E0000}-\u{E007F}\u{E0100}-\u{E01EF}]/u;
const emoji = /\p{Emoji}/u;
const pictographic = /[\p{Extended_Pictographic}\u{1F3FB}-\u{1F3FF}]/u;
const common = /[\p{Script=Common}\p{Script=Inherited}]/u;
const letter = /\p{L}/u;

// The scripts a look-alike usually comes from; any other letter counts as a script of its own.
// Han with kana, bopomofo or hangul is one writing system (UTS #39 "highly restrictive").
const SCRIPTS = [
  'Latin', 'Greek', 'Cyrillic', 'Armenian', 'Hebrew', 'Arabic', 'Syriac', 'Thaana', 'Nko', 'Devanagari', 'Bengali',
  'Gurmukhi', 'Gujarati', 'Oriya', 'Tamil', 'Telugu', 'Kannada', 'Malayalam', 'Sinhala', 'Thai', 'Lao', 'Tibetan',
  'Myanmar', 'Georgian', 'Ethiopic', 'Cherokee', 'Canadian_Aboriginal', 'Ogham', 'Runic', 'Khmer', 'Mongolian', 'Yi',
  'Coptic', 'Tifinagh', 'Vai', 'Lisu', 'Bamum', 'Osage', 'Adlam', 'Glagolitic', 'Gothic', 'Deseret', 'Old_Italic',
  'Han', 'Hiragana', 'Katakana', 'Bopomofo', 'Hangul',
].map((name) => ({ name: /^(Han|Hiragana|Katakana|Bopomofo|Hangul)$/.test(name) ? 'CJK' : name, re: new RegExp(`\\p{Script=${name}}`, 'u') }));
const scriptCache = new Map<string, string>();

/** The script of one character, '' for Common and Inherited (digits, punctuation, marks, emoji). */
function scriptOf(ch: string): string {
  let s = scriptCache.get(ch);
  if (s === undefined) {
    s = common.test(ch) ? '' : (SCRIPTS.find((x) => x.re.test(ch))?.name ?? `other:${ch}`);
    if (scriptCache.size < 10_000) scriptCache.set(ch, s);
  }
  return s;
}

const codeOf = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** Indexes (into the code points) of hidden characters, sparing what an emoji is made of. */
function hiddenAt(chars: string[]): Set<number> {
  const out = new Set<number>();
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    if (!invisible.test(ch)) continue;
    const prev = chars[i - 1] ?? '';
    const cp = ch.codePointAt(0)!;
    // One text or emoji presentation selector right after an emoji character (❤️, 1️⃣).
    if ((cp === 0xfe0e || cp === 0xfe0f) && emoji.test(prev) && !invisible.test(prev)) continue;
    // A zero-width joiner inside an emoji sequence (👩‍🚀, 🏳️‍🌈).
    if (cp === 0x200d && (pictographic.test(prev) || prev === '\uFE0F') && pictographic.test(chars[i + 1] ?? '')) continue;
    // The tag characters of a subdivision flag (🏴 + tags + cancel tag).
    if (cp >= 0xe0020 && cp <= 0xe007e) {
      let j = i;
      while (j > 0 && chars[j - 1]!.codePointAt(0)! >= 0xe0020 && chars[j - 1]!.codePointAt(0)! <= 0xe007e) j--;
      let k = i;
      while (k < chars.length && chars[k]!.codePointAt(0)! >= 0xe0020 && chars[k]!.codePointAt(0)! <= 0xe007e) k++;
      if (chars[j - 1] === '\u{1F3F4}' && chars[k] === '\u{E007F}') continue;
    }
    if (cp === 0xe007f && chars[i - 1] && chars[i - 1]!.codePointAt(0)! >= 0xe0020 && chars[i - 1]!.codePointAt(0)! <= 0xe007e) {
      let j = i - 1;
      while (j > 0 && chars[j - 1]!.codePointAt(0)! >= 0xe0020 && chars[j - 1]!.codePointAt(0)! <= 0xe007e) j--;
      if (chars[j - 1] === '\u{1F3F4}') continue;
    }
    out.add(i);
  }
  return out;
}

/** The scripts of a skeleton's letters, or null when it is the character itself or has none. */
function targetScripts(ch: string, skeleton: Skeleton): Set<string> | null {
  const sk = skeleton(ch);
  if (sk === ch) return null;
  const scripts = new Set([...sk].filter((c) => letter.test(c)).map(scriptOf).filter(Boolean));
  return scripts.size ? scripts : null;
}

/** Words (runs without spaces) as index ranges into the code points. */
function words(chars: string[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let start = -1;
  chars.forEach((c, i) => {
    const space = /\s/u.test(c);
    if (!space && start < 0) start = i;
    if (space && start >= 0) {
      out.push([start, i]);
      start = -1;
    }
  });
  if (start >= 0) out.push([start, chars.length]);
  return out;
}

/** Indexes of letters that pose as another script's letters in this name. */
function lookalikesAt(chars: string[], skeleton?: Skeleton): Set<number> {
  const out = new Set<number>();
  const scripts = chars.map((c) => (letter.test(c) ? scriptOf(c) : ''));
  const inString = new Set(scripts.filter(Boolean));
  if (inString.size < 2) return out;
  for (const [from, to] of words(chars)) {
    const inWord = new Map<string, number>();
    for (let i = from; i < to; i++) if (scripts[i]) inWord.set(scripts[i]!, (inWord.get(scripts[i]!) ?? 0) + 1);
    if (inWord.size >= 2) {
      // A word that mixes scripts: "Сlaude".
      const most = Math.max(...inWord.values());
      for (let i = from; i < to; i++) {
        const s = scripts[i];
        if (!s) continue;
        if (!skeleton) {
          if (inWord.get(s)! < most) out.add(i);
          continue;
        }
        const target = targetScripts(chars[i]!, skeleton);
        if (target && [...target].every((t) => t !== s && inWord.has(t))) out.add(i);
      }
    } else if (inWord.size === 1 && skeleton) {
      // A whole word in another script that reads as a word of the name's other script: "Соре Notes".
      const [s] = [...inWord.keys()];
      const letters = [];
      let posing = true;
      for (let i = from; i < to && posing; i++) {
        if (!scripts[i]) continue;
        letters.push(i);
        const target = targetScripts(chars[i]!, skeleton);
        posing = Boolean(target && [...target].every((t) => t !== s && inString.has(t)));
      }
      if (posing) letters.forEach((i) => out.add(i));
    }
  }
  return out;
}

/** Whether marking look-alikes in this name needs the confusables data (it mixes scripts). */
export function mixesScripts(text: string): boolean {
  const seen = new Set<string>();
  for (const ch of text) if (letter.test(ch)) seen.add(scriptOf(ch));
  seen.delete('');
  return seen.size >= 2;
}

/** Splits text into plain runs and flagged characters; `identifier` marks look-alikes too. */
export function reveal(text: string, identifier = false, skeleton?: Skeleton): Segment[] {
  const chars = [...text];
  const hidden = hiddenAt(chars);
  const posing = identifier ? lookalikesAt(chars, skeleton) : new Set<number>();
  const out: Segment[] = [];
  let run = '';
  chars.forEach((ch, i) => {
    const why = hidden.has(i) ? 'hidden' : posing.has(i) ? 'lookalike' : null;
    if (why) {
      if (run) out.push({ text: run });
      run = '';
      out.push({ hidden: ch, code: codeOf(ch), why });
    } else run += ch;
  });
  if (run) out.push({ text: run });
  return out;
}

/** Plain text with every suspicious character spelled out as ⟦U+XXXX⟧. */
export function revealText(text: string, identifier = false, skeleton?: Skeleton): string {
  return reveal(text, identifier, skeleton)
    .map((s) => ('text' in s ? s.text : `⟦${s.code}⟧`))
    .join('');
}

export const hasSuspicious = (text: string, identifier = false, skeleton?: Skeleton) =>
  reveal(text, identifier, skeleton).some((s) => !('text' in s));
