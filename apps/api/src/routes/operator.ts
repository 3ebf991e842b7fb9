import { Hono } from 'hono';
import { decideListing, exportDeploymentAudit, listListings } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';
import { download } from './audit';

/** The listing review queue and the deployment's audit trail, for the accounts named in TOOLPORT_OPERATORS. */
export const operatorRoutes = new Hono<AppEnv>()
  .use('/operator/*', requirePerson)
  .get('/operator/listings', async (c) => c.json(await listListings({ ctx: ctxOf(c), status: c.req.query('status') })))
  .post('/operator/listings/:addonId/decision', async (c) =>
    c.json(await decideListing({ ctx: ctxOf(c), addonId: c.req.param('addonId'), input: await readJson(c, 4096) })),
  )
  .get('/operator/audit/export', (c) => download(c, exportDeploymentAudit({ ctx: ctxOf(c) })));
