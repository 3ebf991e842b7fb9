import { Hono } from 'hono';
import { acceptUpdate, getCatalogEntry, installAddon, listCatalog, listInstalls, setToolSwitches, uninstallAddon } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const installRoutes = new Hono<AppEnv>()
  .use('/catalog', requirePerson)
  .use('/catalog/*', requirePerson)
  .use('/installs', requirePerson)
  .use('/installs/*', requirePerson)
  .get('/catalog', async (c) => c.json(await listCatalog({ ctx: ctxOf(c), query: { q: c.req.query('q') } })))
  .get('/catalog/:id', async (c) => c.json(await getCatalogEntry({ ctx: ctxOf(c), id: c.req.param('id') })))
  .get('/installs', async (c) => c.json(await listInstalls({ ctx: ctxOf(c) })))
  .post('/installs', async (c) => {
    const { created, install } = await installAddon({ ctx: ctxOf(c), input: await readJson(c) });
    return c.json(install, created ? 201 : 200);
  })
  .patch('/installs/:addon', async (c) =>
    c.json(await setToolSwitches({ ctx: ctxOf(c), addonId: c.req.param('addon'), input: await readJson(c) })),
  )
  .post('/installs/:addon/accept', async (c) =>
    c.json(await acceptUpdate({ ctx: ctxOf(c), addonId: c.req.param('addon'), input: await readJson(c) })),
  )
  .delete('/installs/:addon', async (c) => {
    await uninstallAddon({ ctx: ctxOf(c), addonId: c.req.param('addon') });
    return c.body(null, 204);
  });
