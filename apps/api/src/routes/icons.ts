import { Hono } from 'hono';
import { getIcon } from '@toolport/core';
import type { AppEnv } from '../http/env';

/**
 * MCP: icons SHOULD come from the server's own domain. The hash names the bytes, so the answer never
 * changes; the CSP keeps even an opened image inert.
 */
const ICON_HEADERS = {
  'cache-control': 'public, max-age=31536000, immutable',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  // Apps show icons in their own pages, which may require resources to opt in to that (COEP).
  'cross-origin-resource-policy': 'cross-origin',
};

export const iconRoutes = new Hono<AppEnv>().get('/icons/:hash', async (c) => {
  const hash = c.req.param('hash');
  const icon = await getIcon({ ctx: { svc: c.get('svc'), actor: { kind: 'system' } }, hash });
  const etag = `"${hash}"`;
  if (c.req.header('if-none-match') === etag) return c.body(null, 304, { ...ICON_HEADERS, etag });
  return c.body(new Uint8Array(icon.bytes), 200, { ...ICON_HEADERS, 'content-type': icon.mimeType, etag });
});
