const ALIASES: Record<string, string> = { 'x-gzip': 'gzip' };

/**
 * RFC 9110 §12.5.3. Not hono/accepts: it never takes `*` for a named coding nor knows x-gzip, and
 * sorts the whole header on every gzipped tools/list, where this is one scan.
 */
export function acceptsEncoding(header: string | undefined, coding: 'gzip' | 'br'): boolean {
  if (!header) return false;
  let any = false;
  for (const item of header.toLowerCase().split(',')) {
    const [name = '', ...params] = item.split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if ((ALIASES[name] ?? name) === coding) return allowed;
    if (name === '*') any = allowed;
  }
  return any;
}
