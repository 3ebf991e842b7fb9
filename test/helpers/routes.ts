import type { Services } from '@toolport/core';
import { createApp } from '../../apps/api/src/app';

/** Every `/api` route the app serves, as `METHOD /path`: the matrices walk this, not a hand list. */
export function apiRoutes(svc: Services): string[] {
  const out = new Set<string>();
  for (const r of createApp(svc).routes) if (r.method !== 'ALL' && r.path.startsWith('/api/')) out.add(`${r.method} ${r.path}`);
  return [...out].sort();
}
