import type { Context } from 'hono';
import type { AppEnv } from './env';

/**
 * Whether a form POST to our HTML pages came from another site. The browser says so in
 * `Sec-Fetch-Site`, which no page can forge and which every current browser sends, whatever the
 * referrer policy. Without it (older browsers, non-browser clients) the Origin decides, and
 * `Origin: null` or no Origin is not proof of anything: privacy modes and `no-referrer` send those
 * for our own forms too, so the form's CSRF token stays the guard there. Not hono/csrf: it refuses
 * a form with neither header, and lets a matching Origin outvote `Sec-Fetch-Site: cross-site`.
 */
export function crossSiteForm(c: Context<AppEnv>): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = c.req.header('origin');
  if (origin === undefined || origin === 'null') return false;
  return origin !== c.get('svc').config.publicOrigin && origin !== new URL(c.req.url).origin;
}
