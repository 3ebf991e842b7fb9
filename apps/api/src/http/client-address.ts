import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { AppEnv } from './env';

/**
 * The address sign-in throttling and registration limits count by. Behind N trusted proxies
 * (TRUSTED_PROXIES) it is the X-Forwarded-For entry the outermost one added; otherwise the socket's,
 * so a forged header from a direct caller changes nothing.
 */
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
