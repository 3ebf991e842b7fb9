import type { Context } from 'hono';
import type { AppEnv } from './env';

/**
 * `Sec-Fetch-Site` first (no page can forge it), else Origin; a null or missing Origin proves
 * nothing (privacy modes send those for our own forms), so the CSRF token guards there. Not
 * hono/csrf: it lets a matching Origin outvote `Sec-Fetch-Site: cross-site`.
 */
export function crossSiteForm(c: Context<AppEnv>): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = c.req.header('origin');
  if (origin === undefined || origin === 'null') return false;
  return origin !== c.get('svc').config.publicOrigin && origin !== new URL(c.req.url).origin;
}
