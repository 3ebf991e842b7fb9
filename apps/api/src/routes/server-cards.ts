import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import type { AppEnv } from '../http/env';
import { serverCard } from './mcp/discovery';

/*
 * Server cards (SEP-2127, the experimental-ext-server-card repository's docs/discovery.md): each
 * person's at `<MCP URL>/server-card`, the location the SEP reserves; the deployment's at the
 * well-known paths clients probe (SEP-1649's, which SEP-2127 replaced) and in an AI Catalog, the
 * SEP's domain-level discovery.
 */

const CARD_TYPE = 'application/mcp-server-card+json';
/** discovery.md §CORS Requirements: public, read-only documents. */
const cardCors = cors({ origin: '*', allowMethods: ['GET'], allowHeaders: ['Content-Type', 'If-None-Match'], exposeHeaders: ['ETag'], maxAge: 600 });

/** discovery.md §Caching: an hour, and an ETag a client revalidates with (304). */
function cacheable(c: Context<AppEnv>, doc: unknown, type: string) {
  const body = JSON.stringify(doc);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const headers = { 'cache-control': 'public, max-age=3600', etag };
  const asked = c.req.header('if-none-match');
  if (asked && asked.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) return c.body(null, 304, headers);
  return c.body(body, 200, { ...headers, 'content-type': type });
}

const deploymentCard = (c: Context<AppEnv>) => cacheable(c, serverCard(c.get('svc')), CARD_TYPE);

/** Mounted before wellKnownRoutes, whose own CORS middleware would otherwise answer these paths' preflights first. */
export const serverCardRoutes = new Hono<AppEnv>()
  .use('/.well-known/mcp/server-card.json', cardCors)
  .use('/.well-known/mcp.json', cardCors)
  .use('/.well-known/ai-catalog.json', cardCors)
  .use('/u/:userKey/mcp/server-card', cardCors)
  .get('/.well-known/mcp/server-card.json', deploymentCard)
  .get('/.well-known/mcp.json', deploymentCard)
  .get('/.well-known/ai-catalog.json', (c) => {
    const { publicUrl } = c.get('svc').config;
    const entry = {
      identifier: `urn:air:${new URL(publicUrl).hostname}:mcp:toolport`,
      type: CARD_TYPE,
      url: `${publicUrl}/.well-known/mcp/server-card.json`,
    };
    return cacheable(c, { specVersion: '1.0', entries: [entry] }, 'application/ai-catalog+json');
  })
  .get('/u/:userKey/mcp/server-card', (c) => cacheable(c, serverCard(c.get('svc'), c.req.param('userKey')), CARD_TYPE));
