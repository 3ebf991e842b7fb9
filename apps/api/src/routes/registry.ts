import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { getRegistryEntry, listRegistryEntries, type Ctx } from '@toolport/core';
import type { AppEnv } from '../http/env';

/**
 * Approved public listings as MCP registry `server.json` entries: public (no sign-in), read by
 * registries and clients' catalogs from anywhere. Mounted before installRoutes, whose
 * `/catalog/*` asks for a person; an add-on id never holds a dot, so `servers.json` names none.
 */
const publicCors = cors({ origin: '*', allowMethods: ['GET'], maxAge: 600 });
const CACHE = { 'cache-control': 'public, max-age=300' };
const system = (svc: Ctx['svc']): Ctx => ({ svc, actor: { kind: 'system' } });

export const registryRoutes = new Hono<AppEnv>()
  .use('/catalog/servers.json', publicCors)
  .use('/catalog/:addonId/server.json', publicCors)
  .get('/catalog/servers.json', async (c) => c.json(await listRegistryEntries({ ctx: system(c.get('svc')) }), 200, CACHE))
  .get('/catalog/:addonId/server.json', async (c) => c.json(await getRegistryEntry({ ctx: system(c.get('svc')), addonId: c.req.param('addonId') }), 200, CACHE));
