import type { Context } from 'hono';
import type { ElicitationLink } from '@toolport/core';
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

/**
 * The id of the `elicitation/create` request that offers the person an approval's page: it names
 * the approval, so the app's answer (a separate POST, to any process) says which call it is about.
 */
export const ELICITATION_ID_PREFIX = 'toolport-approval:';
/** The id of one that offers the link to connect an account: the app's answer to it means nothing. */
export const ACCOUNT_ELICITATION_ID_PREFIX = 'toolport-account:';

/** MCP 2025-11-25 client/elicitation, URL mode: the approval's page under the approval's id, or a connect link. */
export const elicitationRequest = (link: ElicitationLink) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: `${link.kind === 'approval' ? ELICITATION_ID_PREFIX : ACCOUNT_ELICITATION_ID_PREFIX}${link.elicitationId}`,
    method: 'elicitation/create',
    params: { mode: 'url', elicitationId: link.elicitationId, url: link.url, message: link.message },
  });

/** Sent before the call's result: the out-of-band interaction is over, whatever ended it. */
export const elicitationComplete = (elicitationId: string) =>
  JSON.stringify({ jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } });
