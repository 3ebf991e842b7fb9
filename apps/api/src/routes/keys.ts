import { Hono } from 'hono';
import { createApiKey, listApiKeys, revokeApiKey } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

// Keys are managed from the dashboard session only: a key cannot mint more keys.
export const keyRoutes = new Hono<AppEnv>()
  .use('/keys', requirePerson)
  .use('/keys/*', requirePerson)
  .post('/keys', async (c) => c.json(await createApiKey({ ctx: ctxOf(c), input: await readJson(c) }), 201))
  .get('/keys', async (c) => c.json(await listApiKeys({ ctx: ctxOf(c) })))
  .delete('/keys/:id', async (c) => {
    await revokeApiKey({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(null, 204);
  });
