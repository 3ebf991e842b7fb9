import type { Context } from 'hono';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { TOOLS_SCOPE, type AppIdentity, type CallWatcher, type Services } from '@toolport/core';
import type { AppEnv } from '../../http/env';
import { withArgumentsForSdk } from '../../http/json-rpc';
import type { InFlight } from './cancellation';
import { listFailed, serverIcons, toolList } from './listing';
import { instructionsFor, SERVER_CAPABILITIES, SERVER_INFO } from './revisions';
import { appSession, runToolCall } from './tool-call';
import { LEGACY_TASKS_CAPABILITY } from './tasks';
import { answerResources } from './resources';

const PRE_TASKS_REVISIONS = new Set(['2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07']);

// One validator for every per-request Server: building Ajv costs far more than the request itself.
const sharedValidator = new AjvJsonSchemaValidator();

/**
 * `rawArguments` are the arguments as the app sent them (our own JSON.parse): the SDK's schema parsing
 * rebuilds objects and would turn a `__proto__` key into a prototype instead of refusing it.
 */
function buildServer(svc: Services, identity: AppIdentity, aiAppsOn: boolean, inflight: InFlight, requestSignal: AbortSignal, rawArguments: unknown, tasks: boolean, sessionHeader: string | undefined) {
  const server = new Server({ ...SERVER_INFO, icons: serverIcons(svc) }, {
    capabilities: tasks ? { ...SERVER_CAPABILITIES, tasks: LEGACY_TASKS_CAPABILITY } : SERVER_CAPABILITIES,
    jsonSchemaValidator: sharedValidator,
    instructions: instructionsFor(aiAppsOn),
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      return { tools: (await toolList(svc, identity, aiAppsOn)).tools };
    } catch (err) {
      throw new McpError(ErrorCode.InternalError, listFailed(svc, identity, err));
    }
  });
  for (const schema of [ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ReadResourceRequestSchema]) {
    server.setRequestHandler(schema, async (request) => {
      const answer = await answerResources(svc, identity, aiAppsOn, { method: request.method, params: request.params as Record<string, unknown> | undefined, modern: false });
      if ('error' in answer) throw new McpError(answer.error.code, answer.error.message, answer.error.data);
      return answer.result as never;
    });
  }
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    let step = 0;
    const watcher: CallWatcher | undefined =
      progressToken === undefined
        ? undefined
        : {
            progress: true,
            on: (event) => {
              if (event.kind !== 'progress') return;
              step += 1;
              void extra
                .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: step, message: event.message } })
                .catch(() => {});
            },
          };
    return (await runToolCall(svc, identity, aiAppsOn, inflight, {
      requestId: extra.requestId,
      name: request.params.name,
      rawArguments,
      signals: [extra.signal, requestSignal],
      watcher,
      session: appSession(sessionHeader, request.params._meta),
    })) as never;
  });
  return server;
}

/** The one place that shapes protocol errors. Stateless: any process can serve any request. */
export async function answerWithSdk(
  c: Context<AppEnv>,
  svc: Services,
  access: { identity: AppIdentity; aiAppsOn: boolean; token: string },
  inflight: InFlight,
  body: unknown,
): Promise<Response> {
  const message = body as { method?: string; params?: { arguments?: unknown; protocolVersion?: unknown; _meta?: { progressToken?: unknown } } };
  // A call with a progress token is answered as a stream (its progress, then the result).
  const streaming = message.method === 'tools/call' && message.params?._meta?.progressToken !== undefined;
  const { identity, aiAppsOn, token } = access;
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streaming });
  // Tasks exist from 2025-11-25 on: an app asking for an earlier revision is not offered them.
  const tasks = !(message.method === 'initialize' && typeof message.params?.protocolVersion === 'string' && PRE_TASKS_REVISIONS.has(message.params.protocolVersion));
  const server = buildServer(svc, identity, aiAppsOn, inflight, c.req.raw.signal, message.params?.arguments, tasks, c.req.header('mcp-session-id'));
  await server.connect(transport);
  const response = await transport.handleRequest(c.req.raw, {
    parsedBody: withArgumentsForSdk(body),
    authInfo: { token, clientId: identity.clientId, scopes: [TOOLS_SCOPE], extra: { userId: identity.userId } },
  });
  if (!streaming) void server.close();
  return response;
}
