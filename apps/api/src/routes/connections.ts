import { Hono } from 'hono';
import { listConnections, revokeConnection, setConnectionAsk, setConnectionTools } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/** The apps a person has let in, with the tools each may use; revoking one ends its tokens. */
export const connectionRoutes = new Hono<AppEnv>()
  .use('/connections', requirePerson)
  .use('/connections/*', requirePerson)
  .get('/connections', async (c) => c.json(await listConnections({ ctx: ctxOf(c) })))
  .put('/connections/:id/tools', async (c) =>
    c.json(await setConnectionTools({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c) })),
  )
  .put('/connections/:id/ask', async (c) => c.json(await setConnectionAsk({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c) })))
  .delete('/connections/:id', async (c) => {
    await revokeConnection({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(null, 204);
  });
