import type { Context } from 'hono';
import type { Ctx } from '@toolport/core';
import type { AppEnv } from './env';

/** The verb context for an authenticated request. */
export const ctxOf = (c: Context<AppEnv>): Ctx => ({ svc: c.get('svc'), actor: c.get('actor') });
