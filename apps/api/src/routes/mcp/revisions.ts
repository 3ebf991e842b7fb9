import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { AI_APPS_OFF } from '@toolport/core';
import { isPlainObject, isRequestId } from '../../http/json-rpc';

/*
 * The one place a request's revision is decided and refused; each rule names the spec text that sets
 * it (under 2026-07-28/ unless said otherwise). 2026-07-28 is stateless (modern.ts); 2025-11-25 and
 * earlier use `initialize`, served per request without sessions.
 */

export const MODERN_REVISION = '2026-07-28';
/** The handshake revisions, as the SDK's Server negotiates them (its list, newest first). */
const LEGACY_REVISIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** Every revision served, newest first: server/discover's `supportedVersions`, an unsupported version's `data.supported`. */
export const SUPPORTED_REVISIONS: readonly string[] = [MODERN_REVISION, ...LEGACY_REVISIONS];

export const SERVER_INFO = { name: 'Toolport', version: '0.1.0' };
/** Tools only, and apps are told when the list changes: a GET stream (legacy), subscriptions/listen (modern). */
/** `resources`: the files tool results link to are read with resources/read (routes/mcp/resources.ts). */
export const SERVER_CAPABILITIES = { tools: { listChanged: true }, resources: {} };
export const instructionsFor = (aiAppsOn: boolean) =>
  aiAppsOn ? 'Tools from the add-ons this person switched on in Toolport. Destructive tools ask the person first.' : AI_APPS_OFF.instructions;

/** basic/index §Error Codes: the codes 2026-07-28 defines (none of them exists before it). */
const HEADER_MISMATCH = -32020;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;
export const INVALID_PARAMS = -32602;
export const METHOD_NOT_FOUND = -32601;

/** basic/index §_meta, reserved keys. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The reserved keys a 2026-07-28 request may carry (basic/index §_meta, per-request protocol fields). */
const REQUEST_KEYS = new Set<string>([META.protocolVersion, META.clientInfo, META.clientCapabilities, META.logLevel]);
/** Those only 2026-07-28 defines: a handshake request carrying them mixes two revisions. */
const MODERN_ONLY_KEYS = [META.clientInfo, META.clientCapabilities, META.logLevel];
const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

/** A request refused before any method runs: the HTTP status and the JSON-RPC error. */
export interface Refusal {
  status: 400 | 404 | 406;
  code: number;
  message: string;
  data?: unknown;
}

export interface ModernRequest {
  id: string | number;
  method: string;
  params: Record<string, unknown>;
}

export type Route =
  | { era: 'legacy' }
  | { era: 'modern'; request: ModernRequest }
  /** basic/transports/streamable-http §Sending Messages: a notification is accepted with 202. */
  | { era: 'modern-notification' }
  | { era: 'refused'; refusal: Refusal };

export interface RevisionHeaders {
  /** `MCP-Protocol-Version` */
  version?: string;
  /** `Mcp-Method` */
  method?: string;
  /** `Mcp-Name` */
  name?: string;
  accept?: string;
}

const refused = (status: Refusal['status'], code: number, message: string, data?: unknown): Route => ({
  era: 'refused',
  refusal: { status, code, message, ...(data === undefined ? {} : { data }) },
});

/** basic/versioning §Protocol Version Negotiation: the versions served, and the one asked for. */
const unsupported = (requested: string): Route =>
  refused(400, UNSUPPORTED_PROTOCOL_VERSION, `Unsupported protocol version ${JSON.stringify(requested)}: this server speaks ${SUPPORTED_REVISIONS.join(', ')}.`, {
    supported: SUPPORTED_REVISIONS,
    requested,
  });

/** basic/transports/streamable-http §Sending Messages 2: a client accepts both; the SDK's transport answers 406 otherwise. */
const acceptsBoth = (accept: string | undefined) => !!accept?.includes('application/json') && accept.includes('text/event-stream');
const NOT_ACCEPTABLE = 'Not Acceptable: send an Accept header listing both application/json and text/event-stream.';

/** Body first (basic/versioning §Backward Compatibility), the headers a cross-check. */
export function routeMessage(headers: RevisionHeaders, body: Record<string, unknown>): Route {
  const { version } = headers;
  // A response to a request of ours: only the handshake revisions had a channel for those.
  if (typeof body.method !== 'string') return { era: 'legacy' };
  const isRequest = 'id' in body;
  const params = isPlainObject(body.params) ? body.params : undefined;
  const meta = params?._meta;
  if (meta !== undefined && !isPlainObject(meta)) return refused(400, INVALID_PARAMS, 'Invalid params: _meta must be an object.');

  if (meta && META.protocolVersion in meta) return routeModern(headers, body.method, isRequest ? (body.id as string | number) : undefined, params!, meta);

  if (version === MODERN_REVISION) {
    if (!isRequest) return { era: 'modern-notification' };
    // basic/versioning §Compatibility Matrix (legacy client, modern server): a handshake under a modern header mixes two revisions.
    if (body.method === 'initialize') {
      return refused(400, HEADER_MISMATCH, `Header mismatch: initialize is the handshake of 2025-11-25 and earlier, but MCP-Protocol-Version says ${MODERN_REVISION}, which has none.`);
    }
    // basic/index §_meta: "A request missing any required field is malformed" (-32602, HTTP 400).
    return refused(400, INVALID_PARAMS, `Invalid params: a ${MODERN_REVISION} request carries ${META.protocolVersion} and ${META.clientCapabilities} in params._meta.`, {
      missing: meta ? [META.protocolVersion] : ['_meta'],
    });
  }

  // The handshake revisions from here.
  if (version !== undefined && !LEGACY_REVISIONS.includes(version)) return unsupported(version);
  const stray = meta ? MODERN_ONLY_KEYS.find((k) => k in meta) : undefined;
  if (stray) {
    return refused(400, INVALID_PARAMS, `Invalid params: _meta carries ${stray}, a ${MODERN_REVISION} field, without ${META.protocolVersion}: send the ${MODERN_REVISION} fields together, or neither.`);
  }
  if (!acceptsBoth(headers.accept)) return refused(406, -32000, NOT_ACCEPTABLE);
  return { era: 'legacy' };
}

/** 2025-11-25's standalone stream; 2026-07-28 answers a GET 405 (it has subscriptions/listen). */
export function routeGet(headers: RevisionHeaders): 'stream' | Refusal | 'not-allowed' {
  const { version } = headers;
  if (version === MODERN_REVISION || !headers.accept?.includes('text/event-stream')) return 'not-allowed';
  if (version !== undefined && !LEGACY_REVISIONS.includes(version)) return (unsupported(version) as { refusal: Refusal }).refusal;
  return 'stream';
}

/** basic/index §_meta: what is wrong with a 2026-07-28 request's `_meta`, if anything. */
function envelopeProblem(meta: Record<string, unknown>): string | undefined {
  const version = meta[META.protocolVersion];
  if (typeof version !== 'string' || version === '') return `${META.protocolVersion} must be a protocol version string`;
  const capabilities = meta[META.clientCapabilities];
  if (capabilities === undefined) return `${META.clientCapabilities} is required (an empty object declares none)`;
  if (!isPlainObject(capabilities) || Object.values(capabilities).some((c) => !isPlainObject(c))) {
    return `${META.clientCapabilities} must be an object of capability objects`;
  }
  const info = meta[META.clientInfo];
  if (info !== undefined && (!isPlainObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string')) {
    return `${META.clientInfo} must be {"name": string, "version": string}`;
  }
  const level = meta[META.logLevel];
  if (level !== undefined && (typeof level !== 'string' || !LOG_LEVELS.has(level))) return `${META.logLevel} must be one of ${[...LOG_LEVELS].join(', ')}`;
  const token = meta.progressToken;
  if (token !== undefined && !isRequestId(token)) return 'progressToken must be a string or an integer';
  // The reserved prefixes are the specification's: a key there that this revision does not define is a mistake.
  const unknown = Object.keys(meta).find((k) => isReservedKey(k) && !REQUEST_KEYS.has(k));
  if (unknown) return `${unknown} is not a request field of ${MODERN_REVISION} (its reserved keys are ${[...REQUEST_KEYS].join(', ')})`;
  return undefined;
}

/** basic/index §_meta, prefix: reserved where the second label is `modelcontextprotocol` or `mcp`. */
function isReservedKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const second = key.slice(0, slash).split('.')[1];
  return second === 'modelcontextprotocol' || second === 'mcp';
}

function routeModern(headers: RevisionHeaders, method: string, id: string | number | undefined, params: Record<string, unknown>, meta: Record<string, unknown>): Route {
  const problem = envelopeProblem(meta);
  // basic/index §_meta: a malformed per-request field is -32602, HTTP 400.
  if (problem) return refused(400, INVALID_PARAMS, `Invalid params: ${problem}.`);
  const claimed = meta[META.protocolVersion] as string;
  // basic/transports/streamable-http §Protocol Version Header: present on every POST, equal to _meta's.
  if (headers.version === undefined) {
    if (id === undefined) return { era: 'modern-notification' };
    return refused(400, HEADER_MISMATCH, `Header mismatch: send the MCP-Protocol-Version header (${claimed}, as _meta says).`);
  }
  if (headers.version !== claimed) {
    return refused(400, HEADER_MISMATCH, `Header mismatch: MCP-Protocol-Version says ${headers.version} but _meta's ${META.protocolVersion} says ${claimed}.`);
  }
  if (claimed !== MODERN_REVISION) {
    if (!LEGACY_REVISIONS.includes(claimed)) return unsupported(claimed);
    return refused(400, INVALID_PARAMS, `Invalid params: ${claimed} negotiates with initialize; per-request _meta is ${MODERN_REVISION}'s.`);
  }
  if (id === undefined) return { era: 'modern-notification' };
  // basic/transports/streamable-http §Standard Request Headers, §Server Validation.
  if (headers.method === undefined) return refused(400, HEADER_MISMATCH, `Header mismatch: send the Mcp-Method header (${method}).`);
  if (headers.method !== method) return refused(400, HEADER_MISMATCH, `Header mismatch: Mcp-Method says ${headers.method} but the body's method is ${method}.`);
  if (method === 'tools/call' && typeof params.name === 'string') {
    if (headers.name === undefined) return refused(400, HEADER_MISMATCH, 'Header mismatch: send the Mcp-Name header (the tool name).');
    const named = decodeHeaderValue(headers.name);
    if (named === undefined) return refused(400, HEADER_MISMATCH, 'Header mismatch: Mcp-Name carries a malformed =?base64?...?= value.');
    if (named !== params.name) return refused(400, HEADER_MISMATCH, `Header mismatch: Mcp-Name says ${JSON.stringify(named)} but params.name is ${JSON.stringify(params.name)}.`);
  }
  // The tasks extension §Routing Headers: Mcp-Name carries the task's id, for whatever routes by it.
  if (method.startsWith('tasks/') && headers.name !== undefined && typeof params.taskId === 'string' && decodeHeaderValue(headers.name) !== params.taskId) {
    return refused(400, HEADER_MISMATCH, 'Header mismatch: Mcp-Name must be the task id (params.taskId).');
  }
  if (!acceptsBoth(headers.accept)) return refused(406, -32600, NOT_ACCEPTABLE);
  return { era: 'modern', request: { id, method, params } };
}

/** basic/transports/streamable-http §Value Encoding: a plain value, or `=?base64?{UTF-8 as Base64}?=`. */
function decodeHeaderValue(value: string): string | undefined {
  const sentinel = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(value);
  if (!sentinel) return value.startsWith('=?base64?') && value.endsWith('?=') ? undefined : value;
  const bytes = Buffer.from(sentinel[1]!, 'base64');
  const text = new TextDecoder('utf-8', { fatal: true });
  try {
    return text.decode(bytes);
  } catch {
    return undefined;
  }
}

/** 2026-07-28's `_meta` of every result it answers (basic/index §_meta, per-response fields). */
export const RESULT_META = { [META.serverInfo]: SERVER_INFO };
