import type { Context } from 'hono';
import { isLoopbackHostname, normalHost, type Config } from '@toolport/core';
import type { AppEnv } from './env';
import { jsonRpcError } from './json-rpc';

type HostConfig = Pick<Config, 'allowedHosts' | 'allowLoopbackHosts' | 'publicUrl'>;

// Every request asks about the same one or two Host headers; parsing them cost two URLs each time.
// Bounded, since the header is the sender's to choose: past 64 names the verdicts start over.
const verdicts = new WeakMap<HostConfig, Map<string, boolean>>();
const KEPT_VERDICTS = 64;

/** Whether this Host header names Toolport: PUBLIC_URL's host, ALLOWED_HOSTS, or loopback when PUBLIC_URL is. */
export function hostAllowed(config: HostConfig, header: string | undefined): boolean {
  if (!header) return false;
  let known = verdicts.get(config);
  if (!known) verdicts.set(config, (known = new Map()));
  let verdict = known.get(header);
  if (verdict === undefined) {
    if (known.size >= KEPT_VERDICTS) known.clear();
    known.set(header, (verdict = judgeHost(config, header)));
  }
  return verdict;
}

function judgeHost(config: HostConfig, header: string): boolean {
  const protocol = config.publicUrl.startsWith('https:') ? 'https:' : 'http:';
  const host = normalHost(header, protocol);
  if (!host) return false;
  if (config.allowedHosts.includes(host)) return true;
  // A rebinding page's requests carry the attacker's name, never a loopback one: a loopback Host can
  // only come from this machine, where 127.0.0.1 and localhost (any port) are the same server.
  return config.allowLoopbackHosts && isLoopbackHostname(new URL(`http://${host}`).hostname);
}

/** DNS-rebinding protection: a foreign Host is answered 421 before any route runs (edge.ts). */
export function misdirected(c: Context<AppEnv>): Response {
  const message = 'This server does not answer for that host name.';
  if (/^\/u\/[^/]+\/mcp\/?$/.test(c.req.path)) {
    return c.body(JSON.stringify(jsonRpcError(null, -32000, message)), 421, { 'content-type': 'application/json' });
  }
  return c.body(JSON.stringify({ type: 'about:blank', title: 'Misdirected request', status: 421, detail: message }), 421, {
    'content-type': 'application/problem+json',
  });
}
