import { Hono } from 'hono';
import { decideApproval, listApprovals } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const approvalRoutes = new Hono<AppEnv>()
  .use('/approvals', requirePerson)
  .use('/approvals/*', requirePerson)
  .get('/approvals', async (c) => c.json(await listApprovals({ ctx: ctxOf(c), status: c.req.query('status') })))
  .post('/approvals/:id/decision', async (c) =>
    c.json(await decideApproval({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c, 1024) })),
  );
