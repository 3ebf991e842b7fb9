import type { Context } from 'hono';
import type { AppEnv } from '../../http/env';

/** The bytes of an answer around an already-encoded result: copied, never re-encoded. */

export const RESULT_OPEN = Buffer.from('{"result":');
// The id comes last, so everything before it is the same for every answer with the same result.
export const resultTail = (id: string | number) => Buffer.from(`,"jsonrpc":"2.0","id":${JSON.stringify(id)}}`);

/** A JSON-RPC result message around an encoded result. */
export const jsonRpcResult = (id: string | number, result: Buffer | string) =>
  Buffer.concat([RESULT_OPEN, typeof result === 'string' ? Buffer.from(result) : result, resultTail(id)]);

/** An SSE answer's headers, as the SDK's transport sends them (X-Accel-Buffering: proxies must not hold events back). */
export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };

const SSE_OPEN = Buffer.from('event: message\ndata: ');
const SSE_CLOSE = Buffer.from('\n\n');
/** One Server-Sent Event around one encoded JSON-RPC message, as the SDK's Streamable HTTP transport writes it. */
export const sseMessage = (json: Buffer | string) => Buffer.concat([SSE_OPEN, typeof json === 'string' ? Buffer.from(json) : json, SSE_CLOSE]);

/** A JSON-RPC result as Hono's answer (the handler's own, not written straight to Node). */
export const jsonRpcAnswer = (c: Context<AppEnv>, id: string | number, result: Buffer | string) =>
  c.body(jsonRpcResult(id, result), 200, { 'content-type': 'application/json' });
