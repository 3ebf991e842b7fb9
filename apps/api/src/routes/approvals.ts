import { Hono } from 'hono';
import { decideApproval, getApproval, getConfirmImage, listApprovals } from '@toolport/core';
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
  // The person's own: never cached by shared caches; inert if opened on its own.
  .get('/approvals/:id/image', async (c) => {
    const image = await getConfirmImage({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(new Uint8Array(image.bytes), 200, {
      'content-type': image.mimeType,
      'cache-control': 'private, max-age=3600',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    });
  })
  .post('/approvals/:id/decision', async (c) =>
    c.json(await decideApproval({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c, DECISION_BODY) })),
  );
