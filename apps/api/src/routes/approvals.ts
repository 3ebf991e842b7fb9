import { Hono } from 'hono';
import { decideApproval, getApproval, listApprovals } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/**
 * A decision's body: room for a reason of 500 characters even when each is sent as \u escapes, and
 * for a much longer one (10 KB), which is then refused with the sentence about its length.
 */
const DECISION_BODY = 16 * 1024;

export const approvalRoutes = new Hono<AppEnv>()
  .use('/approvals', requirePerson)
  .use('/approvals/*', requirePerson)
  .get('/approvals', async (c) => c.json(await listApprovals({ ctx: ctxOf(c), status: c.req.query('status') })))
  .get('/approvals/:id', async (c) => c.json(await getApproval({ ctx: ctxOf(c), id: c.req.param('id') })))
  .post('/approvals/:id/decision', async (c) =>
    c.json(await decideApproval({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c, DECISION_BODY) })),
  );
