import { Hono } from 'hono';
import { listConnections, revokeConnection } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/** The apps a person has let in; revoking one ends its tokens. */
export const connectionRoutes = new Hono<AppEnv>()
  .use('/connections', requirePerson)
  .use('/connections/*', requirePerson)
  .get('/connections', async (c) => c.json(await listConnections({ ctx: ctxOf(c) })))
  .delete('/connections/:id', async (c) => {
    await revokeConnection({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(null, 204);
  });
