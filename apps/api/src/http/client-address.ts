import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { AppEnv } from './env';

/** Only TRUSTED_PROXIES' X-Forwarded-For entries count, so a direct caller's forged header changes nothing. */
export function clientAddress(c: Context<AppEnv>): string | undefined {
  const socket = getConnInfo(c).remote.address;
  const hops = c.get('svc').config.trustedProxies;
  if (!hops) return socket;
  const chain = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!chain.length) return socket;
  return (chain[chain.length - hops] ?? chain[0])!.slice(0, 64);
}
