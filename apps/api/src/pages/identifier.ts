import { html } from 'hono/html';

/** Type of what hono/html's tag builds (see layout.ts). */
type Html = ReturnType<typeof html>;

/**
 * A seam: where a name may wrap without cutting a word. After a run of `.`, `/`, `_`, `-`, `+`
 * or `:` (a host's labels, a path, a tool's snake_case), before `@` (an email's domain), and
 * between a lowercase and an uppercase letter (an app's CamelCase name).
 */
const SEAM = /(?<=[./_+:-])(?![./_+:-])|(?=@)|(?<=\p{Ll})(?=\p{Lu})/u;

/** Past this many characters a piece may not fit a phone's line. */
const LONG_PIECE = 12;

/**
 * A name a person reads whole (an app's name, a host, an email, a tool's name): it wraps at its
 * seams (`<wbr>`), never inside a word. A piece longer than a whole line breaks inside itself, and
 * only then: never clipped, since the hidden end of a host is where a look-alike would hide.
 */
export function identifier(text: string): Html {
  const parts = text.split(/(\s+)/).flatMap((word) => (/^\s+$/.test(word) ? [word] : word.split(SEAM).filter(Boolean)));
  return html`<span class="ident">${parts.map((p, i) => {
    const wbr = i > 0 && !/^\s/.test(p) && !/\s$/.test(parts[i - 1]!) ? html`<wbr>` : '';
    return p.length > LONG_PIECE ? html`${wbr}<span class="long">${p}</span>` : html`${wbr}${p}`;
  })}</span>`;
}
