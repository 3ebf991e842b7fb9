import { Hono } from 'hono';
import { decideListing, listListings } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/** The listing review queue, for the accounts named in TOOLPORT_OPERATORS. */
export const operatorRoutes = new Hono<AppEnv>()
  .use('/operator/*', requirePerson)
  .get('/operator/listings', async (c) => c.json(await listListings({ ctx: ctxOf(c), status: c.req.query('status') })))
  .post('/operator/listings/:addonId/decision', async (c) =>
    c.json(await decideListing({ ctx: ctxOf(c), addonId: c.req.param('addonId'), input: await readJson(c, 4096) })),
  );
