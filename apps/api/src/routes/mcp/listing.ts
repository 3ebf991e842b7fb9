import type { Context } from 'hono';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { isDependencyDown, isLongTool, type AppIdentity, type EnabledToolSet, type Services } from '@toolport/core';
import { acceptsEncoding } from '../../http/accept-encoding';
import type { AppEnv } from '../../http/env';
import { gzipHead, gzipWithTail, type GzipHead } from '../../http/gzip';
import { jsonRpcAnswer, jsonRpcResult, RESULT_OPEN, resultTail } from './frames';

export interface Listing {
  tools: Tool[];
  /** `{"tools":[...]}` as UTF-8, encoded once: 800 tools are ~0.5 MB. */
  resultBytes: Buffer;
  /** The answer up to its id, gzipped once, on the first request that accepts gzip. */
  gzip?: GzipHead;
}

// Serialised once per (cached) set, so tools/list is a string copy. A WeakMap: a listing lives
// exactly as long as its set.
const listings = new WeakMap<EnabledToolSet, Listing>();

/**
 * Listings from this size on are sent gzipped to apps that accept it (every fetch-based client
 * does): 800 tools shrink ~20×, and below this there is little to gain.
 */
const GZIP_FROM_BYTES = 16 * 1024;

type EnabledTool = EnabledToolSet['list'][number];

/** Icons at Toolport's own URL, never the add-on's: fetched once at push, checked, served by hash. */
const iconsOf = (publicUrl: string, t: EnabledTool): Pick<Tool, 'icons'> =>
  t.icons?.length
    ? { icons: t.icons.map((i) => ({ src: `${publicUrl}/icons/${i.hash}`, mimeType: i.mimeType, sizes: i.sizes, ...(i.theme ? { theme: i.theme } : {}) })) }
    : {};

/** One tool as an app lists it (MCP 2025-11-25 Tool): hints only where the manifest declares them. */
function toolOf(publicUrl: string, t: EnabledTool): Tool {
  return {
    name: t.mcpName,
    title: t.title,
    description: `${t.summary} (Add-on: ${t.addonName}.)`,
    ...iconsOf(publicUrl, t),
    inputSchema: t.inputSchema as Tool['inputSchema'],
    ...(t.outputSchema ? { outputSchema: t.outputSchema as Tool['outputSchema'] } : {}),
    annotations: {
      title: t.title,
      destructiveHint: t.destructive,
      ...(t.readOnly ? { readOnlyHint: true } : {}),
      ...(typeof t.idempotent === 'boolean' ? { idempotentHint: t.idempotent } : {}),
      ...(typeof t.openWorld === 'boolean' ? { openWorldHint: t.openWorld } : {}),
    },
    // 2025-11-25: a tool that may outlast one request is called as a task (routes/mcp/tasks.ts).
    ...(isLongTool(t) ? { execution: { taskSupport: 'required' as const } } : {}),
  };
}

/** Toolport's own icon, for its server info (Implementation.icons). */
export const serverIcons = (svc: Services) => [{ src: `${svc.config.publicUrl}/icon.svg`, mimeType: 'image/svg+xml', sizes: ['any'] }];

function listing(set: EnabledToolSet, publicUrl: string): Listing {
  let built = listings.get(set);
  if (!built) {
    const tools: Tool[] = set.list.map((t) => toolOf(publicUrl, t));
    built = { tools, resultBytes: Buffer.from(JSON.stringify({ tools })) };
    listings.set(set, built);
  }
  return built;
}

const NO_TOOLS: Listing = { tools: [], resultBytes: Buffer.from('{"tools":[]}') };

/** The app's tools/list: the enabled tools its grant lets it use; none while AI apps are off. */
export async function toolList(svc: Services, identity: AppIdentity, aiAppsOn: boolean): Promise<Listing> {
  if (!aiAppsOn) return NO_TOOLS;
  return listing(await svc.tools.forApp(identity), svc.config.publicUrl);
}

/** Logs why tools/list failed and says it without the raw message (it may quote SQL). */
export function listFailed(svc: Services, identity: AppIdentity, err: unknown): string {
  svc.log.error('tools/list failed', { err, userId: identity.userId });
  return isDependencyDown(err)
    ? 'Toolport cannot reach its database right now. Try again in a few seconds.'
    : 'Something went wrong on Toolport’s side. Try again in a moment.';
}

/** A tools/list answer; a large one gzipped when the app accepts it, without compressing per request. */
export function listAnswer(c: Context<AppEnv>, id: string | number, listed: Listing): Response {
  if (listed.resultBytes.length < GZIP_FROM_BYTES) return jsonRpcAnswer(c, id, listed.resultBytes);
  const headers = { 'content-type': 'application/json', vary: 'accept-encoding' };
  const gzipped = acceptsEncoding(c.req.header('accept-encoding'), 'gzip')
    ? gzipWithTail((listed.gzip ??= gzipHead(Buffer.concat([RESULT_OPEN, listed.resultBytes]))), resultTail(id))
    : undefined;
  if (gzipped) return c.body(gzipped, 200, { ...headers, 'content-encoding': 'gzip' });
  return c.body(jsonRpcResult(id, listed.resultBytes), 200, headers);
}
