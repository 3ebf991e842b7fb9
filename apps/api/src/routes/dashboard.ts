import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Hono, type Context } from 'hono';
import { accepts } from 'hono/accepts';
import { distDir } from '@toolport/dashboard';
import type { AppEnv } from '../http/env';
import { acceptsEncoding } from '../http/accept-encoding';

/** Mounted last. index.html and sw.js are revalidated so a new build reaches people on their next load. */
const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

// Paths that belong to the API, OAuth and MCP (and the connected-accounts callback, beside the
// dashboard's own /accounts page): never answered with the dashboard's index.html.
const notOurs = /^\/(api|oauth|u|\.well-known)(\/|$)|^\/(healthz|readyz|metrics)$|^\/accounts\/callback(\/|$)/;
const safeName = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

interface File { body: Buffer; type: string; mtimeMs: number }
const cache = new Map<string, File>();

/** Reads a file of the build; re-reads when it changed, so a rebuild needs no restart. */
function load(rel: string): File | undefined {
  const full = path.join(distDir, rel);
  let st;
  try {
    st = statSync(full);
  } catch {
    cache.delete(rel);
    return undefined;
  }
  if (!st.isFile()) return undefined;
  const hit = cache.get(rel);
  if (hit && hit.mtimeMs === st.mtimeMs) return hit;
  const file = { body: readFileSync(full), type: types[path.extname(rel)] ?? 'application/octet-stream', mtimeMs: st.mtimeMs };
  cache.set(rel, file);
  return file;
}

/** The files served from the top level of dist (index.html only through `/` and the fallback). */
function topLevel(name: string) {
  return name !== 'index.html' && name !== 'build.json' && safeName.test(name);
}

function send(c: Context<AppEnv>, file: File, cache: string, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = {
    'content-type': file.type,
    'cache-control': cache,
    'content-security-policy': DASHBOARD_CSP,
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    ...extra,
  };
  if (c.req.method === 'HEAD') return c.body(null, 200, headers);
  return c.body(new Uint8Array(file.body), 200, headers);
}

function sendIndex(c: Context<AppEnv>) {
  const index = load('index.html');
  if (!index) {
    return c.body(
      'The dashboard has not been built. Run `npm start` (it builds first) or `npm run build -w @toolport/dashboard`.\n',
      503,
      { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
    );
  }
  return send(c, index, 'no-cache');
}

export const dashboardRoutes = new Hono<AppEnv>()
  .on(['GET', 'HEAD'], '/assets/:name', async (c, next) => {
    const name = c.req.param('name');
    const file = safeName.test(name) && !name.endsWith('.br') ? load(`assets/${name}`) : undefined;
    if (!file) return next();
    const immutable = 'public, max-age=31536000, immutable';
    const br = acceptsEncoding(c.req.header('accept-encoding'), 'br') ? load(`assets/${name}.br`) : undefined;
    if (br) return send(c, { ...br, type: file.type }, immutable, { 'content-encoding': 'br', vary: 'Accept-Encoding' });
    return send(c, file, immutable, { vary: 'Accept-Encoding' });
  })
  .on(['GET', 'HEAD'], '/sw.js', async (c, next) => {
    const file = load('sw.js');
    if (!file) return next();
    return send(c, file, 'no-cache', { 'service-worker-allowed': '/' });
  })
  .on(['GET', 'HEAD'], '*', async (c, next) => {
    const p = c.req.path;
    if (p === '/' || p === '/index.html') return sendIndex(c);
    if (notOurs.test(p)) return next();
    const name = p.slice(1);
    if (topLevel(name)) {
      const file = load(name);
      if (file) return send(c, file, 'public, max-age=3600');
    }
    // The SPA's own routes (/addons, /calls...): a browser navigation gets the app, which routes.
    const html = accepts(c, { header: 'Accept', supports: ['text/html'], default: '' }) === 'text/html';
    if (!p.startsWith('/assets/') && html) return sendIndex(c);
    return next();
  });
