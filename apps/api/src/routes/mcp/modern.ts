import type { Context } from 'hono';
import { declaresUrlElicitation, runsAsTask, type Services, type ToolResult } from '@toolport/core';
import { acceptsEncoding } from '../../http/accept-encoding';
import { nodeResponse, PARKED, type AppEnv } from '../../http/env';
import { gzipHead, gzipWithTail, type GzipHead } from '../../http/gzip';
import { isPlainObject, jsonRpcError } from '../../http/json-rpc';
import type { InFlight } from './cancellation';
import type { ChangeStreams, StreamAccess } from './change-streams';
import { jsonRpcAnswer, jsonRpcResult, RESULT_OPEN, resultTail } from './frames';
import { listFailed, toolList, type Listing } from './listing';
import { answerDirect, answerStreamed, type EncodeResult } from './node-writers';
import { callOfferingPage, answerRetry } from './held-call';
import { INVALID_PARAMS, instructionsFor, META, METHOD_NOT_FOUND, MODERN_REVISION, RESULT_META, type ModernRequest } from './revisions';
import { DISCOVERY } from './discovery';
import { appSession, runToolCall } from './tool-call';
import { answerResources } from './resources';
import { answerModernTasks, callOfferingTask, declaresTasks, missingTasks, modernCreated, tasksRequired, TASKS_EXTENSION } from './tasks';

/*
 * 2026-07-28 requests (revisions.ts has already checked their `_meta` and headers): server/discover,
 * tools/list, tools/call and subscriptions/listen; every other method is not found (404). Each
 * result carries `resultType` (basic/index §Result Responses) and the server's identity in `_meta`.
 */

/** server/utilities/caching: 30 s is the per-person tool cache's bound; a listening app hears changes at once. */
const CACHE_HINTS = { ttlMs: 30_000, cacheScope: 'private' } as const;

/** As listing.ts: listings from this size on are gzipped for apps that accept it. */
const GZIP_FROM_BYTES = 16 * 1024;

const COMPLETE = { resultType: 'complete' } as const;
/** Tasks one listen stream may follow: an app polls or listens for the few it is waiting on. */
const MAX_LISTENED_TASKS = 100;

/** The result of a tools/call, with 2026-07-28's fields. */
const encodeCall: EncodeResult = (result: ToolResult) => JSON.stringify({ ...COMPLETE, ...result, _meta: RESULT_META });

const rpcError = (c: Context<AppEnv>, status: 200 | 404, id: string | number, code: number, message: string) => c.json(jsonRpcError(id, code, message), status);

/** `{"resultType":...,"tools":[...]}`: the listing's encoded `{"tools":[...]}` behind the fields this revision adds, built once per listing. */
interface ModernListing {
  bytes: Buffer;
  gzip?: GzipHead;
}
const modernListings = new WeakMap<Listing, ModernListing>();
const LIST_HEAD = Buffer.from(JSON.stringify({ ...COMPLETE, ...CACHE_HINTS, _meta: RESULT_META }).slice(0, -1) + ',');

function modernListing(listed: Listing): ModernListing {
  let built = modernListings.get(listed);
  if (!built) modernListings.set(listed, (built = { bytes: Buffer.concat([LIST_HEAD, listed.resultBytes.subarray(1)]) }));
  return built;
}

function listAnswer(c: Context<AppEnv>, id: string | number, listed: Listing): Response {
  const modern = modernListing(listed);
  if (modern.bytes.length < GZIP_FROM_BYTES) return jsonRpcAnswer(c, id, modern.bytes);
  const headers = { 'content-type': 'application/json', vary: 'accept-encoding' };
  const gzipped = acceptsEncoding(c.req.header('accept-encoding'), 'gzip')
    ? gzipWithTail((modern.gzip ??= gzipHead(Buffer.concat([RESULT_OPEN, modern.bytes]))), resultTail(id))
    : undefined;
  if (gzipped) return c.body(gzipped, 200, { ...headers, 'content-encoding': 'gzip' });
  return c.body(jsonRpcResult(id, modern.bytes), 200, headers);
}

/** basic/patterns/mrtr: the shapes of a retry's fields (held-call.ts reads what they say). */
function retryProblem(params: Record<string, unknown>): string | undefined {
  const { inputResponses, requestState } = params;
  if (inputResponses !== undefined && (!isPlainObject(inputResponses) || Object.values(inputResponses).some((r) => !isPlainObject(r)))) {
    return 'inputResponses must be an object of input response objects';
  }
  if (requestState !== undefined && typeof requestState !== 'string') return 'requestState must be a string';
  return undefined;
}

export async function answerModern(
  c: Context<AppEnv>,
  svc: Services,
  access: StreamAccess,
  inflight: InFlight,
  streams: ChangeStreams,
  request: ModernRequest,
): Promise<Response> {
  const { id, method, params } = request;
  const { identity, aiAppsOn } = access;
  switch (method) {
    // server/discover: the revisions, capabilities and identity (as the server cards say them), cacheable like a list.
    case 'server/discover':
      return jsonRpcAnswer(
        c,
        id,
        JSON.stringify({
          ...COMPLETE,
          supportedVersions: DISCOVERY.supportedVersions,
          capabilities: DISCOVERY.capabilities,
          instructions: instructionsFor(aiAppsOn),
          ...CACHE_HINTS,
          _meta: { [META.serverInfo]: DISCOVERY.serverInfo },
        }),
      );

    case 'tools/list': {
      let listed: Listing;
      try {
        listed = await toolList(svc, identity, aiAppsOn);
      } catch (err) {
        return c.json(jsonRpcError(id, -32603, listFailed(svc, identity, err)));
      }
      return listAnswer(c, id, listed);
    }

    case 'tools/call': {
      // Params are checked in the answer (HTTP 200), as a handler would; the arguments are the tool's business (callTool).
      if (typeof params.name !== 'string') return rpcError(c, 200, id, INVALID_PARAMS, 'Invalid params: tools/call needs params.name, the name of a tool from tools/list.');
      const retry = retryProblem(params);
      if (retry) return rpcError(c, 200, id, INVALID_PARAMS, `Invalid params: ${retry}.`);
      const meta = params._meta as { progressToken?: string | number } & Record<string, unknown>;
      const session = appSession(undefined, meta);
      const call = { requestId: id, name: params.name, rawArguments: params.arguments, ...(session ? { session } : {}) };
      if (params.requestState !== undefined) return answerRetry(c, svc, identity, call, params, encodeCall);
      // A tool that may outlast one request runs as a task (io.modelcontextprotocol/tasks), or not at all.
      if (aiAppsOn && (await runsAsTask(svc, identity, params.name))) {
        if (!declaresTasks(meta[META.clientCapabilities])) return tasksRequired(c, id, params.name);
        const first = await callOfferingTask(c, svc, identity, aiAppsOn, inflight, call);
        return jsonRpcAnswer(c, id, 'task' in first ? modernCreated(first.task) : encodeCall(first.result));
      }
      const outgoing = nodeResponse(c);
      // basic/patterns/mrtr: an app that can open a URL is sent to the approval page, and retries.
      if (declaresUrlElicitation(meta[META.clientCapabilities])) {
        return callOfferingPage(c, svc, identity, aiAppsOn, inflight, { ...call, ...(outgoing ? { response: outgoing } : {}) }, encodeCall);
      }
      // Off Node (app.request()) the answer waits for the call, without progress.
      if (!outgoing) return jsonRpcAnswer(c, id, encodeCall(await runToolCall(svc, identity, aiAppsOn, inflight, call)));
      // basic/patterns/cancellation: on HTTP, the app closing the response is the cancellation.
      const direct = { ...call, response: outgoing };
      if (meta.progressToken !== undefined) {
        const token = meta.progressToken;
        return answerStreamed(c, outgoing, id, token, (watcher) => runToolCall(svc, identity, aiAppsOn, inflight, { ...direct, watcher }), encodeCall);
      }
      return answerDirect(c, outgoing, id, (watcher) => runToolCall(svc, identity, aiAppsOn, inflight, { ...direct, watcher }), encodeCall);
    }

    case 'resources/read':
    case 'resources/list':
    case 'resources/templates/list': {
      const answer = await answerResources(svc, identity, aiAppsOn, { method, params, modern: true });
      if ('error' in answer) return c.json(jsonRpcError(id, answer.error.code, answer.error.message, answer.error.data));
      return jsonRpcAnswer(c, id, JSON.stringify({ ...COMPLETE, ...answer.result, ...CACHE_HINTS, _meta: RESULT_META }));
    }

    case 'subscriptions/listen': {
      // basic/patterns/subscriptions §Opening a Stream: a filter of what the app wants; only tools changes exist here.
      const filter = params.notifications;
      if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
        return rpcError(c, 200, id, INVALID_PARAMS, 'Invalid params: subscriptions/listen needs params.notifications, e.g. {"toolsListChanged": true}.');
      }
      const wanted = (filter as Record<string, unknown>).toolsListChanged;
      if (wanted !== undefined && typeof wanted !== 'boolean') return rpcError(c, 200, id, INVALID_PARAMS, 'Invalid params: notifications.toolsListChanged must be true or false.');
      // The tasks extension: notifications of the app's own tasks, for an app that declared it.
      const taskIds = (filter as Record<string, unknown>).taskIds;
      if (taskIds !== undefined) {
        if (!Array.isArray(taskIds) || taskIds.length > MAX_LISTENED_TASKS || taskIds.some((t) => typeof t !== 'string' || t.length > 64)) {
          return rpcError(c, 200, id, INVALID_PARAMS, `Invalid params: notifications.taskIds must be a list of at most ${MAX_LISTENED_TASKS} task ids.`);
        }
        if (!declaresTasks((params._meta as Record<string, unknown>)[META.clientCapabilities])) {
          return missingTasks(c, id, `notifications.taskIds needs the ${TASKS_EXTENSION} extension in this request's capabilities.`);
        }
      }
      const outgoing = nodeResponse(c);
      if (!outgoing) return rpcError(c, 200, id, -32603, 'subscriptions/listen is served on Node only.');
      if (!streams.makeRoom(identity)) {
        return rpcError(c, 200, id, -32603, 'Too many open change streams for this account on this server: close one (each app needs only one).');
      }
      const urlElicitation = declaresUrlElicitation((params._meta as Record<string, unknown>)[META.clientCapabilities]);
      await streams.open(outgoing, access, { id, toolsListChanged: wanted === true, urlElicitation, ...(taskIds ? { taskIds: taskIds as string[] } : {}) });
      return PARKED;
    }

    case 'tasks/get':
    case 'tasks/update':
    case 'tasks/cancel':
      return (await answerModernTasks(c, svc, identity, request, (params._meta as Record<string, unknown>)[META.clientCapabilities]))!;

    default:
      // basic/transports/streamable-http §Protocol Version Header: an RPC the server does not implement is 404 and -32601.
      return rpcError(c, 404, id, METHOD_NOT_FOUND, `Method not found: ${method} is not served here (Toolport speaks ${MODERN_REVISION} for tools: server/discover, tools/list, tools/call, subscriptions/listen, and the tasks extension's tasks/get, tasks/update, tasks/cancel).`);
  }
}
