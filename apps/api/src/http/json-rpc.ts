/**
 * Why a parsed body is not one JSON-RPC 2.0 message (request, notification or response), or
 * undefined when it is. The MCP SDK answers such a body with -32700 "Parse error", which tells the
 * client its JSON was broken when it was not: this lets the endpoint answer -32600 Invalid Request.
 */
export function invalidJsonRpc(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'send one JSON-RPC 2.0 message';
  const m = body as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if ('method' in m) {
    if (typeof m.method !== 'string' || m.method.length === 0 || m.method.length > 256) return 'method must be a name';
    // MCP (every revision): a request id is a string or an integer, never null. An integer past 2^53
    // is refused too: JSON.parse has already rounded it, so the answer could not carry it back.
    if ('id' in m && !isRequestId(m.id)) return 'id must be a string or an integer (between -2^53 and 2^53), not null';
    if ('params' in m && (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))) return 'params must be an object';
    return undefined;
  }
  // A response to a request of ours: an id and exactly one of result or error.
  if (!('id' in m) || 'result' in m === 'error' in m) return 'send a request, a notification or a response';
  if (m.id !== null && !isRequestId(m.id)) return 'id must be a string or an integer';
  return undefined;
}

/** A JSON-RPC request id as MCP allows it: a string, or an integer JavaScript holds exactly. */
export const isRequestId = (v: unknown): v is string | number => typeof v === 'string' || Number.isSafeInteger(v);

/**
 * The id to answer an error with: the request's when it could be read. None otherwise: the schemas
 * of 2025-11-25 and 2026-07-28 make an error's id optional and allow no null (older ones allow no
 * null either).
 */
export const readableId = (body: unknown): string | number | undefined => {
  const m = body as { id?: unknown; method?: unknown } | null;
  return typeof m === 'object' && m !== null && !Array.isArray(m) && typeof m.method === 'string' && isRequestId(m.id) ? m.id : undefined;
};

/** A JSON-RPC error message: to a request (its `id`), or without an id when there was none to read. */
export const jsonRpcError = (id: string | number | null | undefined, code: number, message: string, data?: unknown) => ({
  jsonrpc: '2.0' as const,
  ...(id === null || id === undefined ? {} : { id }),
  error: { code, message, ...(data === undefined ? {} : { data }) },
});

/**
 * Why a tools/call request names no tool (its `params.name` is not a string), or undefined. Such a
 * call is answered -32602 Invalid params here: the SDK answered -32603 Internal error with its
 * schema complaint, which tells the app the server failed when its request was wrong. Anything
 * wrong with the arguments is the tool's business: `callTool` answers it as a tool error.
 */
export function toolCallWithoutName(body: unknown): string | undefined {
  const m = body as { method?: unknown; id?: unknown; params?: { name?: unknown } };
  if (m.method !== 'tools/call' || m.id === undefined || typeof m.params?.name === 'string') return undefined;
  return 'tools/call needs params.name, the name of a tool from tools/list';
}

/**
 * What the SDK is given to parse for a tools/call: the message with `arguments` as `{}`. The SDK
 * checks `arguments` as a plain record and answers -32603 with its schema dump for what it cannot
 * read (an object with a `constructor` key, a string); the real arguments, as the app sent them, are
 * checked by `callTool`, which answers every problem as a tool error, as the contract says.
 */
export function withArgumentsForSdk<T>(body: T): T {
  const m = body as { method?: unknown; params?: Record<string, unknown> };
  if (m.method !== 'tools/call' || typeof m.params !== 'object' || m.params === null || !('arguments' in m.params)) return body;
  return { ...m, params: { ...m.params, arguments: {} } } as T;
}
