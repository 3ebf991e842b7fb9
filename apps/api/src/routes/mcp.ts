import type { ServerResponse } from 'node:http';
import { Hono, type Context } from 'hono';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, SUPPORTED_PROTOCOL_VERSIONS, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AI_APPS_OFF, CallCancel, callTool, isDependencyDown, isToolportError, REQUEST_CANCEL_CHANNEL, verifyAccessToken, wwwAuthenticate, type AppIdentity, type Ctx, TOOLS_SCOPE, type EnabledToolSet, type Services, type ToolResult, type VerifiedAccess } from '@toolport/core';
import { nodeResponse, PARKED, type AppEnv } from '../http/env';
import { readJson } from '../http/body';
import { acceptsEncoding } from '../http/accept-encoding';
import { gzipHead, gzipWithTail, type GzipHead } from '../http/gzip';
import { invalidJsonRpc, jsonRpcError, toolCallWithoutName, withArgumentsForSdk } from '../http/json-rpc';

// One validator for every per-request Server: building Ajv per request was a fifth of the CPU (PERFORMANCE.md).
const sharedValidator = new AjvJsonSchemaValidator();
const MAX_MCP_BODY = 1024 * 1024;
const SERVER_INFO = { name: 'Toolport', version: '0.1.0' };

type Identity = AppIdentity;

const DOWN_SENTENCE = 'Toolport cannot reach its database or queue right now, so the call did not run. Try again in a few seconds.';

/**
 * A call that threw instead of answering (callTool logged it). It throws only before dispatch, so
 * the call did not run; the SDK would otherwise echo the raw error message to the app.
 */
function failedCall(err: unknown): ToolResult {
  const text = isToolportError(err) && err.expose
    ? err.message
    : isDependencyDown(err)
      ? DOWN_SENTENCE
      : 'Something went wrong on Toolport’s side, so the call did not run. Try again in a moment.';
  return { content: [{ type: 'text', text }], isError: true };
}

/** Logs why tools/list failed and says it without the raw message (it may quote SQL). */
function listFailed(svc: Services, identity: Identity, err: unknown): string {
  svc.log.error('tools/list failed', { err, userId: identity.userId });
  return isDependencyDown(err)
    ? 'Toolport cannot reach its database right now. Try again in a few seconds.'
    : 'Something went wrong on Toolport’s side. Try again in a moment.';
}

function rpcError(c: Context<AppEnv>, status: 400 | 403 | 405 | 413, code: number, message: string, headers: Record<string, string> = {}) {
  return c.body(JSON.stringify(jsonRpcError(null, code, message)), status, {
    'content-type': 'application/json',
    ...headers,
  });
}

/**
 * In-flight calls of this process, so `notifications/cancelled` (a separate POST) can reach them.
 * A call waiting for approval keeps what it holds for up to 30 s: no closures per call here (tsx
 * compiles each named arrow function with a `name` property, a quarter of a kilobyte apiece), and
 * a CallCancel rather than an AbortController (about a kilobyte less per call).
 */
class InFlight {
  private readonly calls = new Map<string, CallCancel>();
  key(grantId: string, requestId: string | number) {
    return `${grantId}:${typeof requestId}:${requestId}`;
  }
  add(key: string): CallCancel {
    const cancel = new CallCancel();
    this.calls.set(key, cancel);
    return cancel;
  }
  done(key: string, cancel: CallCancel) {
    if (this.calls.get(key) === cancel) this.calls.delete(key);
  }
  abort(key: string) {
    this.calls.get(key)?.abort(new Error('cancelled by the app'));
  }
}

// The listing of a tool set is built and serialised once per set (sets are cached per person and
// replaced on change): tools/list with 800 tools is then a string copy, not 800 objects re-serialised.
const listings = new WeakMap<EnabledToolSet, Listing>();

interface Listing {
  tools: Tool[];
  /** `{"tools":[...]}` as UTF-8, encoded once: 800 tools are ~0.5 MB. */
  resultBytes: Buffer;
  /** The answer up to its id, gzipped once, on the first request that accepts gzip. */
  gzip?: GzipHead;
}

/**
 * Listings from this size on are sent gzipped to apps that accept it (every fetch-based client
 * does): 800 tools shrink ~20×, and below this there is little to gain.
 */
const GZIP_FROM_BYTES = 16 * 1024;

function listing(set: EnabledToolSet): Listing {
  let built = listings.get(set);
  if (!built) {
    const tools: Tool[] = set.list.map((t) => ({
      name: t.mcpName,
      title: t.title,
      description: `${t.summary} (Add-on: ${t.addonName}.)`,
      inputSchema: t.inputSchema as Tool['inputSchema'],
      annotations: {
        title: t.title,
        destructiveHint: t.destructive,
        ...(t.readOnly ? { readOnlyHint: true } : {}),
      },
    }));
    built = { tools, resultBytes: Buffer.from(JSON.stringify({ tools })) };
    listings.set(set, built);
  }
  return built;
}

const NO_TOOLS: Listing = { tools: [], resultBytes: Buffer.from('{"tools":[]}') };

async function toolList(svc: Services, identity: Identity, aiAppsOn: boolean): Promise<Listing> {
  if (!aiAppsOn) return NO_TOOLS;
  return listing(await svc.tools.get(identity.userId));
}

type PlainRequest =
  | { method: 'tools/list'; id: string | number }
  | { method: 'tools/call'; id: string | number; name: string; arguments: unknown; progressToken?: string | number };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const supportedVersions = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS);

const isRequestId = (v: unknown): v is string | number => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));

/**
 * The two requests an app sends over and over, in their ordinary form: one JSON-RPC request with
 * headers the transport would accept, no task; a tools/call may carry a progress token (many apps
 * send one with every call). These are answered without building a per-request SDK Server and
 * transport (which cost as much as the rest of a call). Anything else, including every malformed
 * or unusual message and a tools/list with a progress token, goes to the SDK, which stays the one
 * place that shapes protocol errors and handles initialize, ping and notifications.
 */
function plainRequest(c: Context<AppEnv>, message: Record<string, unknown>): PlainRequest | undefined {
  const { id, method, params } = message;
  if (!isRequestId(id)) return undefined;
  if (method !== 'tools/list' && method !== 'tools/call') return undefined;
  if (params !== undefined && !isPlainObject(params)) return undefined;
  if (params?._meta !== undefined && !isPlainObject(params._meta)) return undefined;
  const progressToken = params?._meta?.progressToken;
  if (progressToken !== undefined && !isRequestId(progressToken)) return undefined;
  if (params?.task !== undefined) return undefined;
  const accept = c.req.header('accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  const version = c.req.header('mcp-protocol-version');
  if (version !== undefined && !supportedVersions.has(version)) return undefined;
  if (method === 'tools/list') return progressToken === undefined ? { method, id } : undefined;
  if (typeof params?.name !== 'string') return undefined;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) return undefined;
  return { method, id, name: params.name, arguments: params.arguments, ...(progressToken !== undefined ? { progressToken } : {}) };
}

const RESULT_OPEN = Buffer.from('{"result":');
// The id comes last, so everything before it is the same for every answer with the same result.
const resultTail = (id: string | number) => Buffer.from(`,"jsonrpc":"2.0","id":${JSON.stringify(id)}}`);

/** A JSON-RPC result message around an already-encoded result (copied, never re-encoded). */
const jsonRpcResult = (id: string | number, result: Buffer | string) =>
  Buffer.concat([RESULT_OPEN, typeof result === 'string' ? Buffer.from(result) : result, resultTail(id)]);

const jsonRpcAnswer = (c: Context<AppEnv>, id: string | number, result: Buffer | string) =>
  c.body(jsonRpcResult(id, result), 200, { 'content-type': 'application/json' });

/** A tools/list answer; a large one gzipped when the app accepts it, without compressing per request. */
function listAnswer(c: Context<AppEnv>, id: string | number, listed: Listing): Response {
  if (listed.resultBytes.length < GZIP_FROM_BYTES) return jsonRpcAnswer(c, id, listed.resultBytes);
  const headers = { 'content-type': 'application/json', vary: 'accept-encoding' };
  const gzipped = acceptsEncoding(c.req.header('accept-encoding'), 'gzip')
    ? gzipWithTail((listed.gzip ??= gzipHead(Buffer.concat([RESULT_OPEN, listed.resultBytes]))), resultTail(id))
    : undefined;
  if (gzipped) return c.body(gzipped, 200, { ...headers, 'content-encoding': 'gzip' });
  return c.body(jsonRpcResult(id, listed.resultBytes), 200, headers);
}

/**
 * A direct tools/call on Node. Once it waits for the person's approval (up to 30 s) the handler
 * returns, and the answer is written straight to Node's response when the call ends: nothing of the
 * request's async frames, Hono's context or the middleware stays alive while the person decides,
 * only the call's own records and the connection. One reaction on the call serves both endings (a
 * held call keeps it for up to 30 s; a race and two more callbacks were a tenth of a held call).
 */
async function answerDirect(
  c: Context<AppEnv>,
  outgoing: ServerResponse,
  id: string | number,
  run: (onHold: () => void) => Promise<ToolResult>,
): Promise<Response> {
  const { log } = c.get('svc');
  let parked = false;
  let first!: (result: ToolResult | undefined) => void;
  const answered = new Promise<ToolResult | undefined>((resolve) => (first = resolve));
  // Nothing in these callbacks may refer to `c`: that would keep Hono's context alive while the call waits.
  void run(() => {
    parked = true;
    first(undefined);
  }).then(
    (result) => {
      if (parked) writeHeldAnswer(outgoing, id, result, log);
      else first(result);
    },
    // runToolCall answers a failure as a tool error; this is only the last line of defence.
    (err: unknown) => {
      log.error('a tool call rejected', { err });
      if (parked) outgoing.destroy();
      else first(failedCall(err));
    },
  );
  const result = await answered;
  return result ? jsonRpcAnswer(c, id, JSON.stringify(result)) : PARKED;
}

/** False once the app hung up (the call was cancelled with it) or the answer was sent: nobody reads more. */
const answerable = (outgoing: ServerResponse) => !outgoing.destroyed && !outgoing.writableEnded;

/** The answer of a call that was held, on Node's response (the handler returned long ago). */
function writeHeldAnswer(outgoing: ServerResponse, id: string | number, result: ToolResult, log: Services['log']) {
  if (!answerable(outgoing)) return;
  try {
    const body = jsonRpcResult(id, JSON.stringify(result));
    outgoing.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    outgoing.end(body);
  } catch (err) {
    log.error('cannot write a held call’s answer', { err });
    outgoing.destroy();
  }
}

const SSE_OPEN = Buffer.from('event: message\ndata: ');
const SSE_CLOSE = Buffer.from('\n\n');
/** One Server-Sent Event around one encoded JSON-RPC message, as the SDK's Streamable HTTP transport writes it. */
const sseMessage = (json: Buffer | string) => Buffer.concat([SSE_OPEN, typeof json === 'string' ? Buffer.from(json) : json, SSE_CLOSE]);

/**
 * The stream of a tools/call with a progress token: the call's progress notifications as they
 * come, then its answer. One object and its one `progress` function per call, rather than a closure
 * for each (it lives as long as the call, up to 30 s while the person decides).
 */
class ProgressStream {
  private step = 0;
  constructor(
    private readonly outgoing: ServerResponse,
    private readonly progressToken: string | number,
    private readonly id: string | number,
  ) {}

  /** What `callTool` calls with each progress message. */
  readonly progress = async (message: string): Promise<void> => {
    if (!answerable(this.outgoing)) return;
    this.step += 1;
    const notification = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: this.progressToken, progress: this.step, message } };
    this.outgoing.write(sseMessage(JSON.stringify(notification)));
  };

  end(result: ToolResult) {
    if (answerable(this.outgoing)) this.outgoing.end(sseMessage(jsonRpcResult(this.id, JSON.stringify(result))));
  }
}

/**
 * A direct tools/call with a progress token, on Node: answered as the SDK answers it, an SSE stream
 * (progress notifications, then the result), written straight to Node's response. The handler
 * returns at once, so nothing of the request's frames or Hono's context stays alive while the call
 * runs or waits for the person.
 */
function answerStreamed(
  c: Context<AppEnv>,
  outgoing: ServerResponse,
  id: string | number,
  progressToken: string | number,
  run: (progress: (message: string) => Promise<void>) => Promise<ToolResult>,
): Response {
  const { log } = c.get('svc');
  outgoing.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' });
  outgoing.flushHeaders();
  const stream = new ProgressStream(outgoing, progressToken, id);
  run(stream.progress)
    .then((result) => stream.end(result))
    .catch((err: unknown) => {
      log.error('cannot write a streamed call’s answer', { err });
      outgoing.destroy();
    });
  return PARKED;
}

const AI_APPS_OFF_RESULT: ToolResult = {
  content: [{ type: 'text', text: AI_APPS_OFF.callResult }],
  isError: true,
};

/**
 * One tools/call for the app, cancellable by a `notifications/cancelled` that reaches any process.
 * Never rejects: a call that threw answers as a tool error. Callbacks, not an async function: a call
 * waiting for approval keeps no frame of it.
 */
function runToolCall(
  svc: Services,
  identity: Identity,
  aiAppsOn: boolean,
  inflight: InFlight,
  call: {
    requestId: string | number;
    name: string;
    rawArguments: unknown;
    /** What else ends the call: the SDK's request signal, the HTTP request's. */
    signals: AbortSignal[];
    /** On Node: the response whose early close (the app hung up) ends the call. */
    response?: ServerResponse;
    progress?: (message: string) => Promise<void>;
    onHold?: () => void;
  },
): Promise<ToolResult> {
  if (!aiAppsOn) return Promise.resolve(AI_APPS_OFF_RESULT);
  const ctx: Ctx = { svc, actor: { kind: 'app', ...identity } };
  const key = inflight.key(identity.grantId, call.requestId);
  const mine = inflight.add(key);
  for (const signal of call.signals) mine.follow(signal);
  // Cheaper than the adapter's per-request AbortController and AbortSignal.any on every call. Left
  // on the response, which closes right after the answer: aborting a finished call does nothing.
  const response = call.response;
  response?.on('close', () => {
    if (!response.writableFinished) mine.abort(new Error('the app closed the request'));
  });
  let running: Promise<ToolResult>;
  try {
    running = callTool({ ctx, input: { name: call.name, arguments: call.rawArguments, signal: mine, progress: call.progress, onHold: call.onHold } });
  } catch (err) {
    running = Promise.reject(err);
  }
  return running.then(
    (result) => {
      inflight.done(key, mine);
      return result;
    },
    (err: unknown) => {
      inflight.done(key, mine);
      return failedCall(err);
    },
  );
}

/**
 * `rawArguments` are the arguments as the app sent them (our own JSON.parse): the SDK's schema parsing
 * rebuilds objects and would turn a `__proto__` key into a prototype instead of refusing it.
 */
function buildServer(svc: Services, identity: Identity, aiAppsOn: boolean, inflight: InFlight, requestSignal: AbortSignal, rawArguments: unknown) {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    jsonSchemaValidator: sharedValidator,
    instructions: aiAppsOn
      ? 'Tools from the add-ons this person switched on in Toolport. Destructive tools ask the person first.'
      : AI_APPS_OFF.instructions,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      return { tools: (await toolList(svc, identity, aiAppsOn)).tools };
    } catch (err) {
      throw new McpError(ErrorCode.InternalError, listFailed(svc, identity, err));
    }
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const progressToken = request.params._meta?.progressToken;
    let step = 0;
    const progress =
      progressToken === undefined
        ? undefined
        : async (message: string) => {
            step += 1;
            await extra
              .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: step, message } })
              .catch(() => {});
          };
    return (await runToolCall(svc, identity, aiAppsOn, inflight, {
      requestId: extra.requestId,
      name: request.params.name,
      rawArguments,
      signals: [extra.signal, requestSignal],
      progress,
    })) as never;
  });
  return server;
}

export function createMcpRoutes(svc: Services) {
  const inflight = new InFlight();
  // A cancellation may arrive at any API process: every process hears it.
  void svc.bus.subscribe(REQUEST_CANCEL_CHANNEL, (m) => inflight.abort((m as { key: string }).key));

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
      return rpcError(c, 401 as 400, -32001, 'Sign in: this endpoint needs an OAuth access token.', { 'WWW-Authenticate': challenge });
    }
    let access: VerifiedAccess;
    try {
      access = await verifyAccessToken(svc, token, mcpUrl);
    } catch (err) {
      if (!isToolportError(err) || err.code !== 'UNAUTHORIZED') throw err;
      const challenge = await wwwAuthenticate(svc, userKey, 'invalid_token');
      return rpcError(c, 401 as 400, -32001, err.message, { 'WWW-Authenticate': challenge });
    }
    const { identity, aiAppsOn } = access;

    if (c.req.method !== 'POST') {
      // Stateless: no standalone stream and no session to delete (any process can serve any request).
      return rpcError(c, 405, -32000, 'Use POST: this server is stateless and keeps no sessions.', { Allow: 'POST' });
    }

    let body: unknown;
    try {
      body = await readJson(c, MAX_MCP_BODY);
    } catch (err) {
      if (isToolportError(err) && err.code === 'PAYLOAD_TOO_LARGE') return rpcError(c, 413, -32600, 'The request is larger than 1 MB.');
      if (isToolportError(err) && err.details.status === 415) return rpcError(c, 400, -32600, 'Send JSON-RPC as application/json.');
      return rpcError(c, 400, -32700, 'Parse error: the body is not valid JSON.');
    }
    if (Array.isArray(body)) return rpcError(c, 400, -32600, 'JSON-RPC batches are not supported; send one message per request.');
    const invalid = invalidJsonRpc(body);
    if (invalid) return rpcError(c, 400, -32600, `Invalid request: ${invalid}.`);
    const nameless = toolCallWithoutName(body);
    if (nameless) return c.json(jsonRpcError((body as { id: string | number | null }).id, ErrorCode.InvalidParams, `Invalid params: ${nameless}.`));
    const message = body as { method?: string; id?: string | number; params?: { requestId?: string | number; arguments?: unknown; _meta?: { progressToken?: unknown } } };
    if (message.method === 'notifications/cancelled' && message.params?.requestId !== undefined) {
      // This process first: it may be the one holding the call, and a bus that is down (Redis) must
      // not keep it from hearing. Then every other process, without making the app wait for Redis.
      const key = inflight.key(identity.grantId, message.params.requestId);
      inflight.abort(key);
      svc.bus.publish(REQUEST_CANCEL_CHANNEL, { key }).catch((err: unknown) => svc.log.warn('cannot pass a cancellation to the other processes', { err }));
    }

    const streaming = message.method === 'tools/call' && message.params?._meta?.progressToken !== undefined;
    const plain = plainRequest(c, body as Record<string, unknown>);
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
    const outgoing = plain?.method === 'tools/call' ? nodeResponse(c) : undefined;
    // Off Node, a call with a progress token is the SDK's (it streams); on Node it is streamed here.
    if (plain?.method === 'tools/call' && (outgoing || plain.progressToken === undefined)) {
      const call = { requestId: plain.id, name: plain.name, rawArguments: plain.arguments };
      if (outgoing && plain.progressToken !== undefined) {
        return answerStreamed(c, outgoing, plain.id, plain.progressToken, (progress) =>
          runToolCall(svc, identity, aiAppsOn, inflight, { ...call, signals: [], response: outgoing, progress }),
        );
      }
      if (outgoing) {
        return answerDirect(c, outgoing, plain.id, (onHold) =>
          runToolCall(svc, identity, aiAppsOn, inflight, { ...call, signals: [], response: outgoing, onHold }),
        );
      }
      const result = await runToolCall(svc, identity, aiAppsOn, inflight, { ...call, signals: [c.req.raw.signal] });
      return jsonRpcAnswer(c, plain.id, JSON.stringify(result));
    }

    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streaming });
    const server = buildServer(svc, identity, aiAppsOn, inflight, c.req.raw.signal, message.params?.arguments);
    await server.connect(transport);
    const response = await transport.handleRequest(c.req.raw, {
      parsedBody: withArgumentsForSdk(body),
      authInfo: { token, clientId: identity.clientId, scopes: [TOOLS_SCOPE], extra: { userId: identity.userId } },
    });
    if (!streaming) void server.close();
    return response;
  });
}
