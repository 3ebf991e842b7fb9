import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { authorizationServerMetadata, protectedResourceMetadata } from '@toolport/core';
import type { AppEnv } from '../http/env';
import { oauthErrorResponse } from '../http/oauth-error';

const metadata = (c: Context<AppEnv>) => {
  c.header('Cache-Control', 'public, max-age=300');
  return c.json(authorizationServerMetadata(c.get('svc')));
};

/**
 * RFC 8414 (also at openid-configuration, where some clients look) and RFC 9728 per MCP URL. There is
 * deliberately no root-level protected resource document: every person's MCP URL is its own resource.
 */
export const wellKnownRoutes = new Hono<AppEnv>()
  .use('/.well-known/*', cors({ origin: '*', allowMethods: ['GET', 'OPTIONS'], maxAge: 600 }))
  .get('/.well-known/oauth-authorization-server', (c) => metadata(c))
  .get('/.well-known/openid-configuration', (c) => metadata(c))
  .get('/.well-known/oauth-protected-resource/u/:userKey/mcp', async (c) => {
    const doc = await protectedResourceMetadata(c.get('svc'), c.req.param('userKey'));
    c.header('Cache-Control', 'no-store');
    return c.json(doc);
  })
  .onError(oauthErrorResponse);
