import { Hono } from 'hono';
import { listRules, removeRule, setRule } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/** The person's approval rules, per tool and optionally per app (docs/approvals.md "Rules you set"). */
export const ruleRoutes = new Hono<AppEnv>()
  .use('/rules', requirePerson)
  .use('/rules/*', requirePerson)
  .get('/rules', async (c) => c.json(await listRules({ ctx: ctxOf(c) })))
  .put('/rules', async (c) => c.json(await setRule({ ctx: ctxOf(c), input: await readJson(c) })))
  .delete('/rules/:id', async (c) => {
    await removeRule({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(null, 204);
  });
