/** So the endpoint answers -32600, not the SDK's -32700 "Parse error" for JSON that parsed. */
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

/** None when unreadable: the MCP schemas make an error's id optional and allow no null. */
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

/** Answered -32602 here: the SDK's -32603 would tell the app the server failed. */
export function toolCallWithoutName(body: unknown): string | undefined {
  const m = body as { method?: unknown; id?: unknown; params?: { name?: unknown } };
  if (m.method !== 'tools/call' || m.id === undefined || typeof m.params?.name === 'string') return undefined;
  return 'tools/call needs params.name, the name of a tool from tools/list';
}

/**
 * The SDK answers -32603 for arguments it cannot read; `callTool` checks the real ones and answers
 * every problem as a tool error, as the contract says.
 */
export function withArgumentsForSdk<T>(body: T): T {
  const m = body as { method?: unknown; params?: Record<string, unknown> };
  if (m.method !== 'tools/call' || typeof m.params !== 'object' || m.params === null || !('arguments' in m.params)) return body;
  return { ...m, params: { ...m.params, arguments: {} } } as T;
}

/** A JSON object (not an array, not null): what a JSON-RPC params, result or _meta must be. */
export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
