import { Hono } from 'hono';
import {
  createAddon,
  deleteAddon,
  deleteAddonOauthClient,
  endDevSession,
  getAddon,
  listAddonOauthClients,
  listAddons,
  listAddonVersions,
  renewDevSession,
  rotateAddonSecret,
  runCheckScript,
  setAddonOauthClient,
  startDevSession,
  updateAddon,
} from '@toolport/core';
import { requireDeveloper } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

/** The developer API: a `tpk_` key or the dashboard session. */
export const addonRoutes = new Hono<AppEnv>()
  .use('/addons', requireDeveloper)
  .use('/addons/*', requireDeveloper)
  .get('/addons', async (c) => c.json(await listAddons({ ctx: ctxOf(c) })))
  .post('/addons', async (c) => c.json(await createAddon({ ctx: ctxOf(c), input: await readJson(c) }), 201))
  .get('/addons/:id', async (c) => c.json(await getAddon({ ctx: ctxOf(c), id: c.req.param('id') })))
  .put('/addons/:id', async (c) => c.json(await updateAddon({ ctx: ctxOf(c), id: c.req.param('id'), input: await readJson(c) })))
  .delete('/addons/:id', async (c) => {
    await deleteAddon({ ctx: ctxOf(c), id: c.req.param('id') });
    return c.body(null, 204);
  })
  .get('/addons/:id/versions', async (c) => c.json(await listAddonVersions({ ctx: ctxOf(c), id: c.req.param('id') })))
  .post('/addons/:id/secret', async (c) => c.json(await rotateAddonSecret({ ctx: ctxOf(c), id: c.req.param('id') })))
  .post('/addons/:id/check', async (c) =>
    c.json(await runCheckScript({ ctx: ctxOf(c), addonId: c.req.param('id'), input: await readJson(c) })),
  )
  // `toolport dev` running: while a session lasts, the developer's own install follows each release.
  .post('/addons/:id/dev-sessions', async (c) => {
    await readJson(c);
    return c.json(await startDevSession({ ctx: ctxOf(c), addonId: c.req.param('id') }), 201);
  })
  .put('/addons/:id/dev-sessions/:session', async (c) => {
    await readJson(c);
    return c.json(await renewDevSession({ ctx: ctxOf(c), addonId: c.req.param('id'), sessionId: c.req.param('session') }));
  })
  .delete('/addons/:id/dev-sessions/:session', async (c) => {
    await endDevSession({ ctx: ctxOf(c), addonId: c.req.param('id'), sessionId: c.req.param('session') });
    return c.body(null, 204);
  })
  // The OAuth client of each provider the manifest declares (`accounts`): the secret is only ever said to be set.
  .get('/addons/:id/accounts', async (c) => c.json(await listAddonOauthClients({ ctx: ctxOf(c), addonId: c.req.param('id') })))
  .put('/addons/:id/accounts/:provider/client', async (c) =>
    c.json(await setAddonOauthClient({ ctx: ctxOf(c), addonId: c.req.param('id'), provider: c.req.param('provider'), input: await readJson(c) })),
  )
  .delete('/addons/:id/accounts/:provider/client', async (c) => {
    await deleteAddonOauthClient({ ctx: ctxOf(c), addonId: c.req.param('id'), provider: c.req.param('provider') });
    return c.body(null, 204);
  });
