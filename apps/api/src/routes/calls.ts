import { Hono } from 'hono';
import { callActivity, callLife, cancelRunningCall, clearCallHistory, listCalls, runningCalls } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const callRoutes = new Hono<AppEnv>()
  .use('/calls', requirePerson)
  .use('/calls/*', requirePerson)
  .get('/calls/activity', async (c) => {
    const q = c.req.query();
    return c.json(await callActivity({ ctx: ctxOf(c), query: { period: q.period, app: q.app, addon: q.addon, outcome: q.outcome } }));
  })
  .get('/calls/running', async (c) => c.json(await runningCalls({ ctx: ctxOf(c) })))
  .post('/calls/running/:taskId/cancel', async (c) => {
    await cancelRunningCall({ ctx: ctxOf(c), taskId: c.req.param('taskId') });
    return c.body(null, 204);
  })
  .get('/calls/:callId', async (c) => c.json(await callLife({ ctx: ctxOf(c), callId: c.req.param('callId') })))
  // The person clears their own history; there is no parameter naming anyone else's.
  .delete('/calls', async (c) => c.json(await clearCallHistory({ ctx: ctxOf(c) })))
  .get('/calls', async (c) => {
    const q = c.req.query();
    return c.json(await listCalls({ ctx: ctxOf(c), query: { cursor: q.cursor, app: q.app, addon: q.addon, outcome: q.outcome, limit: q.limit ? Number(q.limit) : undefined } }));
  });
