import { Hono } from 'hono';
import { getSettings, updateSettings } from '@toolport/core';
import { requirePerson } from '../http/auth';
import { readJson } from '../http/body';
import { ctxOf } from '../http/ctx';
import type { AppEnv } from '../http/env';

export const settingsRoutes = new Hono<AppEnv>()
  .use('/settings', requirePerson)
  .get('/settings', async (c) => c.json(await getSettings({ ctx: ctxOf(c) })))
  .patch('/settings', async (c) => c.json(await updateSettings({ ctx: ctxOf(c), input: await readJson(c) })));
