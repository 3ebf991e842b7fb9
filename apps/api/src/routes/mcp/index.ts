import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { isToolportError, runsAsTask, verifyAccessToken, wwwAuthenticate, type Services, type VerifiedAccess } from '@toolport/core';
import { readJson } from '../../http/body';
import { nodeResponse, PARKED, type AppEnv } from '../../http/env';
import { invalidJsonRpc, isPlainObject, isRequestId, jsonRpcError, readableId, toolCallWithoutName } from '../../http/json-rpc';
import { InFlight } from './cancellation';
import { ChangeStreams } from './change-streams';
import { answerElicitation, isElicitationAnswer, noteCapabilities } from './elicitation';
import { listAnswer, listFailed, toolList, type Listing } from './listing';
import { answerModern } from './modern';
import { answerDirect, answerStreamed } from './node-writers';
import { routeGet, routeMessage, type RevisionHeaders } from './revisions';
import { answerWithSdk } from './sdk-fallback';
import { appSession, runToolCall } from './tool-call';
import { answerLegacyTasks, callOfferingTask, legacyCreated, legacyTaskRequired } from './tasks';
import { jsonRpcAnswer } from './frames';

const MAX_MCP_BODY = 1024 * 1024;

function rpcError(
  c: Context<AppEnv>,
  status: 400 | 403 | 404 | 405 | 406 | 413 | 429,
  code: number,
  message: string,
  { headers = {}, id, data }: { headers?: Record<string, string>; id?: string | number; data?: unknown } = {},
) {
  return c.body(JSON.stringify(jsonRpcError(id, code, message, data)), status, {
    'content-type': 'application/json',
    ...headers,
  });
}

const revisionHeaders = (c: Context<AppEnv>): RevisionHeaders => ({
  version: c.req.header('mcp-protocol-version'),
  method: c.req.header('mcp-method'),
  name: c.req.header('mcp-name'),
  accept: c.req.header('accept'),
});

type PlainRequest =
  | { method: 'tools/list'; id: string | number }
  | { method: 'tools/call'; id: string | number; name: string; arguments: unknown; progressToken?: string | number; task?: true };

/**
 * The common 2025-era tools/list and tools/call skip the per-request SDK Server (it costs as much as
 * the rest of a call). Anything unusual goes to the SDK, the one place that shapes protocol errors.
 */
function plainRequest(message: Record<string, unknown>): PlainRequest | undefined {
  const { id, method, params } = message;
  if (!isRequestId(id)) return undefined;
  if (method !== 'tools/list' && method !== 'tools/call') return undefined;
  if (params !== undefined && !isPlainObject(params)) return undefined;
  if (params?._meta !== undefined && !isPlainObject(params._meta)) return undefined;
  const progressToken = params?._meta?.progressToken;
  if (progressToken !== undefined && !isRequestId(progressToken)) return undefined;
  // 2025-11-25 tasks: a call the app lets run as a task (tasks.ts); any other shape is the SDK's to refuse.
  if (params?.task !== undefined && (method !== 'tools/call' || !isPlainObject(params.task) || progressToken !== undefined)) return undefined;
  if (method === 'tools/list') return progressToken === undefined ? { method, id } : undefined;
  if (typeof params?.name !== 'string') return undefined;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) return undefined;
  return {
    method,
    id,
    name: params.name,
    arguments: params.arguments,
    ...(progressToken !== undefined ? { progressToken } : {}),
    ...(params.task !== undefined ? { task: true as const } : {}),
  };
}

/** 2026-07-28 requests go to modern.ts; 2025-era ones to the direct writers or the SDK (revisions.ts). */
export function createMcpRoutes(svc: Services) {
  const inflight = new InFlight(svc);
  inflight.listen();
  const streams = new ChangeStreams(svc);
  streams.listen();

  return new Hono<AppEnv>().all('/u/:userKey/mcp', async (c) => {
    const userKey = c.req.param('userKey');
    const origin = c.req.header('origin');
    if (origin && origin !== svc.config.publicOrigin) return rpcError(c, 403, -32000, 'Requests from this Origin are not allowed.');
    if (new URL(c.req.url).searchParams.has('access_token')) {
      return rpcError(c, 400, -32000, 'Send the access token in the Authorization header, never in the URL.');
    }

    const mcpUrl = `${svc.config.publicUrl}/u/${userKey}/mcp`;
    const header = c.req.header('authorization');
    const token = header && /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    if (!token) {
      const challenge = await wwwAuthenticate(svc, userKey);
      return rpcError(c, 401 as 400, -32001, 'Sign in: this endpoint needs an OAuth access token.', { headers: { 'WWW-Authenticate': challenge } });
    }
    let access: VerifiedAccess;
    try {
      access = await verifyAccessToken(svc, token, mcpUrl);
    } catch (err) {
      if (!isToolportError(err) || err.code !== 'UNAUTHORIZED') throw err;
      const challenge = await wwwAuthenticate(svc, userKey, 'invalid_token');
      return rpcError(c, 401 as 400, -32001, err.message, { headers: { 'WWW-Authenticate': challenge } });
    }
    const { identity, aiAppsOn } = access;
    const streamAccess = { identity, aiAppsOn, token, mcpUrl };
    const headers = revisionHeaders(c);

    if (c.req.method === 'GET') {
      const get = routeGet(headers);
      const outgoing = nodeResponse(c);
      if (get === 'not-allowed' || !outgoing) {
        return rpcError(c, 405, -32000, 'Use POST; a GET opens the change stream of 2025-11-25 and earlier (Accept: text/event-stream).', { headers: { Allow: 'GET, POST' } });
      }
      if (get !== 'stream') return rpcError(c, get.status as 400, get.code, get.message, { data: get.data });
      if (!streams.makeRoom(identity)) return rpcError(c, 429, -32000, 'Too many open change streams for this account on this server: close one (each app needs only one).');
      await streams.open(outgoing, streamAccess);
      return PARKED;
    }
    if (c.req.method !== 'POST') {
      // Stateless: the session id given at initialize names no state, so there is none to end.
      return rpcError(c, 405, -32000, 'Use POST: this server keeps no sessions, so there is none to end.', { headers: { Allow: 'GET, POST' } });
    }

    let body: unknown;
    try {
      body = await readJson(c, MAX_MCP_BODY);
    } catch (err) {
      if (isToolportError(err) && err.code === 'PAYLOAD_TOO_LARGE') return rpcError(c, 413, -32600, 'The request is larger than 1 MB.');
      if (isToolportError(err) && err.code === 'UNSUPPORTED_MEDIA_TYPE') return rpcError(c, 400, -32600, 'Send JSON-RPC as application/json.');
      return rpcError(c, 400, -32700, 'Parse error: the body is not valid JSON.');
    }
    if (Array.isArray(body)) return rpcError(c, 400, -32600, 'JSON-RPC batches are not supported; send one message per request.');
    const invalid = invalidJsonRpc(body);
    if (invalid) return rpcError(c, 400, -32600, `Invalid request: ${invalid}.`);
    const route = routeMessage(headers, body as Record<string, unknown>);
    if (route.era === 'refused') {
      const { status, code, message, data } = route.refusal;
      return rpcError(c, status, code, message, { id: readableId(body), data });
    }
    const message = body as { method?: string; params?: { requestId?: unknown } };
    if (message.method === 'notifications/cancelled' && isRequestId(message.params?.requestId)) {
      inflight.cancel(identity.grantId, message.params.requestId);
    }
    if (route.era === 'modern-notification') return c.body(null, 202);
    if (route.era === 'modern') return answerModern(c, svc, streamAccess, inflight, streams, route.request);

    // The app's answer to an approval's elicitation: never a decision of the person's (elicitation.ts).
    if (isElicitationAnswer(body as Record<string, unknown>)) return answerElicitation(c, svc, identity, body as Record<string, unknown>);
    const nameless = toolCallWithoutName(body);
    if (nameless) return c.json(jsonRpcError((body as { id: string | number }).id, ErrorCode.InvalidParams, `Invalid params: ${nameless}.`));
    const plain = plainRequest(body as Record<string, unknown>);
    if (plain?.method === 'tools/list') {
      let listed: Listing;
      try {
        listed = await toolList(svc, identity, aiAppsOn);
      } catch (err) {
        // As the SDK answers a failed handler: a JSON-RPC error in a 200.
        return c.json(jsonRpcError(plain.id, ErrorCode.InternalError, listFailed(svc, identity, err)));
      }
      return listAnswer(c, plain.id, listed);
    }
    // Off Node (no response to write to) a tools/call is the SDK's, below.
    const outgoing = plain?.method === 'tools/call' ? nodeResponse(c) : undefined;
    if (plain?.method === 'tools/call' && outgoing) {
      const session = appSession(c.req.header('mcp-session-id'), (body as { params?: { _meta?: unknown } }).params?._meta);
      const call = { requestId: plain.id, name: plain.name, rawArguments: plain.arguments, response: outgoing, ...(session ? { session } : {}) };
      // A tool that may outlast one request runs as a task: the task is the answer; without `task`, -32601.
      if (aiAppsOn && (await runsAsTask(svc, identity, plain.name))) {
        if (!plain.task) return legacyTaskRequired(c, plain.id, plain.name);
        const first = await callOfferingTask(c, svc, identity, aiAppsOn, inflight, call);
        return jsonRpcAnswer(c, plain.id, 'task' in first ? legacyCreated(first.task) : JSON.stringify(first.result));
      }
      // An approval's page can be offered on an SSE answer only (2025-11-25 basic/transports: the client's Accept lists it).
      const options = { elicitation: !!headers.accept?.includes('text/event-stream') };
      if (plain.progressToken !== undefined) {
        return answerStreamed(
          c,
          outgoing,
          plain.id,
          plain.progressToken,
          (watcher) => runToolCall(svc, identity, aiAppsOn, inflight, { ...call, watcher }),
          undefined,
          options,
        );
      }
      return answerDirect(c, outgoing, plain.id, (watcher) => runToolCall(svc, identity, aiAppsOn, inflight, { ...call, watcher }), undefined, options);
    }

    if (message.method === 'initialize') await noteCapabilities(svc, identity, (body as { params?: unknown }).params);
    const tasks = await answerLegacyTasks(c, svc, identity, body as Record<string, unknown>);
    if (tasks) return tasks;

    const answer = await answerWithSdk(c, svc, { identity, aiAppsOn, token }, inflight, body);
    // Some clients (the Python SDK, fastmcp) open the change stream only under a session id. This
    // one names nothing and is never checked: any process still answers any request.
    if (message.method === 'initialize' && answer.ok) answer.headers.set('Mcp-Session-Id', randomUUID());
    return answer;
  });
}
