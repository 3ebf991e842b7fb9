import { Hono } from 'hono';
import { decideApprovalWithToken, getPushKey, subscribePush, unsubscribePush } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const pushRoutes = new Hono<AppEnv>()
  .use('/push/subscribe', requirePerson)
  // The VAPID public key is public: a service worker may fetch it before anyone signs in.
  .get('/push/key', async (c) => c.json(await getPushKey({ ctx: { svc: c.get('svc'), actor: { kind: 'system' } } })))
  .post('/push/subscribe', async (c) => c.json(await subscribePush({ ctx: ctxOf(c), input: await readJson(c, 8 * 1024) }), 201))
  .delete('/push/subscribe', async (c) => {
    await unsubscribePush({ ctx: ctxOf(c), input: await readJson(c, 8 * 1024) });
    return c.body(null, 204);
  })
  // From a notification's action in a service worker: no cookie, the token is the capability (no CSRF surface).
  .post('/push/decision', async (c) =>
    c.json(await decideApprovalWithToken({ ctx: { svc: c.get('svc'), actor: { kind: 'system' } }, input: await readJson(c, 1024) })),
  );
