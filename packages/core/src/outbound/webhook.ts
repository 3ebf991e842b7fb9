import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { systemClock, type Clock } from '../clock';
import { ToolportError } from '../errors';
import { inSpan } from '../tracing';
import { OutboundError } from './http-client';
import { signatureHeaders } from './signing';
import { ARTIFACT_LIMITS, bareMediaType, fileProblem, nameProblem, PREVIEW_CHARS, type AnswerFile } from './files';
import { MAX_CONFIRM_BYTES, readConfirm } from './confirm';
import { cleanSentence } from '../text/sentence';
import type { ContentBlock, OutboundClient, OutboundResponse, ResultAnswer, WebhookAnswer } from './types';
import type { CancelSignal } from '../cancel';

export type WebhookKind = 'tool.call' | 'tool.confirm' | 'tools.list' | 'ping';
type Failure = Extract<WebhookAnswer, { kind: 'failure' }>;

export interface PostWebhookInput {
  client: OutboundClient;
  url: string;
  /** Every valid signing secret (two while a rotation overlaps). */
  secrets: string[];
  /** The call's id; the same on every retry. */
  id: string;
  /** The JSON body, sent byte for byte and signed as is. */
  body: string;
  kind: WebhookKind;
  /** Epoch ms by which the whole exchange must be over. */
  deadline: number;
  /** The clock `deadline` was set by (the services'); the system clock by default. */
  clock?: Clock;
  /** Largest result accepted, in bytes of its text. */
  maxResultBytes?: number;
  /** The app cancelled the call: hang up on the add-on, whatever stage the exchange is at. */
  signal?: CancelSignal;
  /** A task's call: HTTP 202 means the add-on answers later (its body is not read). */
  answerLater?: boolean;
}

export interface WebhookDelivery {
  answer: WebhookAnswer;
  status?: number;
  latencyMs: number;
}

export const MAX_RESULT_BYTES = 64 * 1024;
/** A tool call's answer as read off the wire: the inline result (JSON may double it), and files in base64. */
export const MAX_ANSWER_WIRE_BYTES = MAX_RESULT_BYTES * 2 + Math.ceil(ARTIFACT_LIMITS.bytes / 3) * 4 + 64 * 1024;
const MAX_SENTENCE = 500;
const DETAIL_SNIPPET = 200;
const USER_AGENT = 'Toolport-Webhooks/1';

const failure = (
  errorClass: Failure['errorClass'],
  retryable: boolean,
  detail: string,
  status?: number,
): Failure => (status === undefined ? { kind: 'failure', errorClass, retryable, detail } : { kind: 'failure', errorClass, retryable, status, detail });

const snippet = (body: Buffer) => cleanSentence(body.subarray(0, DETAIL_SNIPPET * 4).toString('utf8'), DETAIL_SNIPPET);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function isUri(v: unknown): v is string {
  if (typeof v !== 'string' || !v) return false;
  try {
    new URL(v);
    return true;
  } catch {
    return false;
  }
}

/** Copies optional string/number fields when present, refusing a wrong type. Unknown fields are dropped. */
function copyOptional(from: Record<string, unknown>, to: Record<string, unknown>, fields: Record<string, 'string' | 'number' | 'object'>): string | undefined {
  for (const [name, type] of Object.entries(fields)) {
    const v = from[name];
    if (v === undefined) continue;
    if (type === 'object' ? !isObject(v) : typeof v !== type) return `${name} must be ${type === 'object' ? 'an object' : `a ${type}`}`;
    to[name] = v;
  }
  return undefined;
}

/** Checks one MCP content block; returns the block rebuilt from known fields, or why it is refused. */
function checkBlock(b: unknown, i: number): ContentBlock | string {
  const at = `content[${i}]`;
  if (!isObject(b) || typeof b.type !== 'string') return `${at} is not a content block`;
  const out: ContentBlock = { type: b.type };
  let problem: string | undefined;
  switch (b.type) {
    case 'text':
      if (typeof b.text !== 'string') return `${at}.text must be a string`;
      out.text = b.text;
      break;
    case 'image':
    case 'audio':
      if (typeof b.data !== 'string' || !BASE64.test(b.data)) return `${at}.data must be base64`;
      if (typeof b.mimeType !== 'string' || !b.mimeType) return `${at}.mimeType must be a string`;
      out.data = b.data;
      out.mimeType = b.mimeType;
      break;
    case 'resource_link':
      if (!isUri(b.uri)) return `${at}.uri must be a URI`;
      if (typeof b.name !== 'string') return `${at}.name must be a string`;
      out.uri = b.uri;
      out.name = b.name;
      problem = copyOptional(b, out, { title: 'string', description: 'string', mimeType: 'string', size: 'number' });
      break;
    case 'resource': {
      const r = b.resource;
      if (!isObject(r) || !isUri(r.uri)) return `${at}.resource.uri must be a URI`;
      const res: Record<string, unknown> = { uri: r.uri };
      if (typeof r.text === 'string') res.text = r.text;
      else if (typeof r.blob === 'string' && BASE64.test(r.blob)) res.blob = r.blob;
      else return `${at}.resource needs text or base64 blob`;
      problem = copyOptional(r, res, { mimeType: 'string' });
      out.resource = res;
      break;
    }
    default:
      return `${at}.type "${cleanSentence(b.type, 40)}" is not a content type`;
  }
  problem ??= copyOptional(b, out, { annotations: 'object' });
  return problem ? `${at}.${problem}` : out;
}

/** An answer that comes later, at a task's answer URL: read by the same rules as one in the webhook's response. */
export const readLaterAnswer = (body: Buffer, maxResultBytes = MAX_RESULT_BYTES): WebhookAnswer =>
  readAnswer('tool.call', { status: 200, headers: {}, body }, maxResultBytes);

/** Reads a 2xx answer by the rules of DESIGN.md "Answers". */
function readAnswer(kind: WebhookKind, res: OutboundResponse, maxResultBytes: number): WebhookAnswer {
  const status = res.status;
  const bad = (why: string) => failure('bad_answer', false, `HTTP ${status}: ${why}`, status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body.toString('utf8'));
  } catch {
    return bad(res.body.length ? `not JSON: ${snippet(res.body)}` : 'empty body');
  }
  if (!isObject(parsed)) return bad('the answer is not a JSON object');
  const has = (k: string) => Object.hasOwn(parsed as object, k);
  const keys = (kind === 'ping' ? ['challenge'] : kind === 'tool.confirm' ? ['confirm', 'error'] : kind === 'tools.list' ? ['tools'] : ['text', 'json', 'content', 'error']).filter(has);
  const files = kind === 'tool.call' && has('artifacts') ? readFiles(parsed.artifacts) : undefined;
  if (typeof files === 'string') return bad(files);
  if (files && (has('error') || parsed.isError === true)) return bad('artifacts come only with a result (text, json or content), not with an error');
  // A preview's result.txt comes first, then the add-on's own files.
  const withFiles = <T extends ResultAnswer>(r: T): T => {
    if (!files) return r;
    const notKept = [...(r.notKept ?? []), ...(files.notKept ?? [])];
    return { ...r, files: [...(r.files ?? []), ...files.files], ...(notKept.length ? { notKept } : {}) };
  };
  if (keys.length !== 1) {
    const expected =
      kind === 'ping' ? '{"challenge"}' : kind === 'tool.confirm' ? '{"confirm"} or {"error"}' : kind === 'tools.list' ? '{"tools": [names]}' : 'exactly one of {"text"}, {"json"}, {"content"}, {"error"}';
    return bad(`expected ${expected}, got keys ${cleanSentence(Object.keys(parsed).slice(0, 5).join(', '), 80) || 'none'}`);
  }
  const tooLarge = (bytes: number) =>
    bytes > maxResultBytes ? failure('too_large', false, `HTTP ${status}: result is ${bytes} bytes, limit ${maxResultBytes}`, status) : undefined;

  switch (keys[0]) {
    case 'challenge':
      if (typeof parsed.challenge !== 'string') return bad('challenge must be a string');
      return { kind: 'result', content: [{ type: 'text', text: parsed.challenge }] };
    case 'text': {
      if (typeof parsed.text !== 'string') return bad('text must be a string');
      const bytes = Buffer.byteLength(parsed.text);
      if (bytes > maxResultBytes && kind === 'tool.call' && bytes <= ARTIFACT_LIMITS.bytes) return withFiles(previewed(parsed.text, bytes, maxResultBytes));
      return tooLarge(bytes) ?? withFiles({ kind: 'result', content: [{ type: 'text', text: parsed.text }] });
    }
    case 'json': {
      const text = JSON.stringify(parsed.json);
      const value = parsed.json;
      // structuredContent must be an object in MCP; any other JSON value is wrapped as { "result": value }.
      const structuredContent = isObject(value) ? value : { result: value };
      return tooLarge(Buffer.byteLength(text)) ?? withFiles({ kind: 'result', content: [{ type: 'text', text }], structuredContent });
    }
    case 'content': {
      if (!Array.isArray(parsed.content)) return bad('content must be a list of content blocks');
      if (parsed.isError !== undefined && typeof parsed.isError !== 'boolean') return bad('isError must be true or false');
      const blocks: ContentBlock[] = [];
      for (const [i, b] of parsed.content.entries()) {
        const checked = checkBlock(b, i);
        if (typeof checked === 'string') return bad(checked);
        blocks.push(checked);
      }
      if (parsed.isError !== true) return tooLarge(Buffer.byteLength(JSON.stringify(blocks))) ?? withFiles({ kind: 'result', content: blocks });
      // A tool error: the model still needs a sentence to act on when the add-on gave none.
      const said = blocks.some((b) => b.type === 'text' && typeof b.text === 'string' && b.text.trim());
      if (!said) blocks.unshift({ type: 'text', text: 'The tool reported an error without saying what went wrong.' });
      return tooLarge(Buffer.byteLength(JSON.stringify(blocks))) ?? { kind: 'result', content: blocks, isError: true };
    }
    case 'error': {
      if (typeof parsed.error !== 'string') return bad('error must be a sentence (a string)');
      const message = cleanSentence(parsed.error, MAX_SENTENCE);
      if (!message) return bad('error is empty');
      return parsed.failed === true ? { kind: 'refusal', message, failed: true } : { kind: 'refusal', message };
    }
    case 'tools':
      // Checked against the manifest where it is asked for (installs/tool-lists.ts).
      return { kind: 'tools', tools: parsed.tools, ttlSeconds: parsed.ttlSeconds };
    case 'confirm': {
      const read = readConfirm(parsed.confirm);
      return typeof read === 'string' ? bad(read) : { kind: 'confirm', ...read };
    }
    default:
      return bad('unexpected answer');
  }
}

/**
 * A text answer over the inline limit: a preview for the model, the whole text kept as a file (the
 * link is added where it is kept, calls/artifacts.ts).
 */
function previewed(text: string, bytes: number, maxResultBytes: number): ResultAnswer {
  let preview = text.slice(0, PREVIEW_CHARS);
  // Never half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(preview)) preview = preview.slice(0, -1);
  const said =
    `The result is ${kb(bytes)}, more than the ${kb(maxResultBytes)} an answer may hold inline, so only its first ${PREVIEW_CHARS.toLocaleString('en')} ` +
    'characters follow; the whole text is in the file "result.txt" linked below.';
  return { kind: 'result', content: [{ type: 'text', text: `${said}\n\n${preview}` }], files: [{ name: 'result.txt', mediaType: 'text/plain', bytes: Buffer.from(text, 'utf8') }] };
}

/**
 * `artifacts`: [{name, mediaType, data (base64)}]. A malformed list is a bad answer; a file that is
 * well formed but not kept (its type, its size, bytes that are not what it says) is said in `notKept`.
 */
function readFiles(v: unknown): { files: AnswerFile[]; notKept?: string[] } | string {
  if (!Array.isArray(v)) return 'artifacts must be a list of {"name", "mediaType", "data"}';
  if (v.length > ARTIFACT_LIMITS.files) return `artifacts may hold at most ${ARTIFACT_LIMITS.files} files (got ${v.length})`;
  const files: AnswerFile[] = [];
  const notKept: string[] = [];
  let total = 0;
  for (const [i, f] of v.entries()) {
    const at = `artifacts[${i}]`;
    if (!isObject(f)) return `${at} is not an object`;
    const named = nameProblem(f.name);
    if (named) return `${at}: ${named}`;
    if (typeof f.mediaType !== 'string' || !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(f.mediaType)) return `${at}.mediaType must be a media type such as "text/csv"`;
    if (typeof f.data !== 'string' || !BASE64.test(f.data)) return `${at}.data must be base64`;
    const file = { name: f.name as string, mediaType: bareMediaType(f.mediaType), bytes: Buffer.from(f.data, 'base64') };
    const problem = fileProblem(file) ?? (total + file.bytes.length > ARTIFACT_LIMITS.bytes ? `The file "${file.name}" would take the answer's files past ${ARTIFACT_LIMITS.bytes / 1024 / 1024} MB in all.` : null);
    if (problem) notKept.push(problem);
    else {
      total += file.bytes.length;
      files.push(file);
    }
  }
  return notKept.length ? { files, notKept } : { files };
}

function classifyStatus(res: OutboundResponse): Failure {
  const s = res.status;
  if (s >= 300 && s < 400) {
    const location = res.headers.location;
    const to = typeof location === 'string' ? ` to ${cleanSentence(location, DETAIL_SNIPPET)}` : '';
    return failure('redirect', false, `HTTP ${s}${to} (redirects are not followed)`, s);
  }
  const body = res.body.length ? `: ${snippet(res.body)}` : '';
  if (s === 410) return failure('gone', false, `HTTP 410${body}`, s);
  const retryable = s === 408 || s === 429 || (s >= 500 && s < 600);
  return failure('http_status', retryable, `HTTP ${s}${body}`, s);
}

const FINAL_CLASSES = new Set(['blocked_address', 'bad_url', 'too_large', 'cancelled']);

/** Never throws for anything the add-on does. Each retry is signed afresh: a new timestamp, the same id. */
export function postWebhook(input: PostWebhookInput): Promise<WebhookDelivery> {
  // The host only: a webhook's path or query may hold the developer's own tokens.
  let host = '';
  try {
    host = new URL(input.url).host;
  } catch {
    /* classified as bad_url below */
  }
  const attributes = { 'http.request.method': 'POST', 'server.address': host, 'toolport.webhook.kind': input.kind };
  return inSpan('webhook POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const delivery = await sendWebhook(input);
    if (delivery.status !== undefined) {
      span.setAttribute('http.status_code', delivery.status);
      span.setAttribute('http.response.status_code', delivery.status);
    }
    if (delivery.answer.kind === 'failure') {
      span.setAttribute('toolport.error_class', delivery.answer.errorClass);
      span.setStatus({ code: SpanStatusCode.ERROR, message: delivery.answer.errorClass });
    }
    return delivery;
  });
}

async function sendWebhook(input: PostWebhookInput): Promise<WebhookDelivery> {
  const { client, url, secrets, id, body, kind, deadline, signal, clock = systemClock } = input;
  const maxResultBytes = input.maxResultBytes ?? MAX_RESULT_BYTES;
  const started = performance.now();
  const latency = () => Math.round((performance.now() - started) * 10) / 10;
  if (deadline <= clock.now().getTime()) return { answer: failure('deadline', false, 'the call deadline passed before delivery'), latencyMs: 0 };

  const headers = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    // The real time, not the services' clock (which tests move): the add-on checks it against its own clock.
    ...signatureHeaders({ id, timestamp: Math.floor(systemClock.now().getTime() / 1000), body, secrets }),
  };
  let res: OutboundResponse;
  try {
    // JSON escaping can double a text on the wire, so read more than the result cap to tell "too large" apart.
    // A confirm is read whole up to its own cap and cut to its bounds after (outbound/confirm.ts).
    const maxBytes = kind === 'tool.confirm' ? MAX_CONFIRM_BYTES : kind === 'tool.call' ? MAX_ANSWER_WIRE_BYTES : maxResultBytes * 2 + 4096;
    res = await client.request({ url, method: 'POST', headers, body, deadline, maxBytes, signal });
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    return { answer: failure(err.errorClass, !FINAL_CLASSES.has(err.errorClass), err.message), latencyMs: latency() };
  }
  if (res.status === 202 && input.answerLater) return { answer: { kind: 'accepted' }, status: 202, latencyMs: latency() };
  const answer = res.status >= 200 && res.status < 300 ? readAnswer(kind, res, maxResultBytes) : classifyStatus(res);
  return { answer, status: res.status, latencyMs: latency() };
}

const kb = (bytes: number) => `${Math.round(bytes / 1024)} KB`;

/** The short sentence an AI app gets instead of an answer. Never carries a detail of the failure. */
export function safeSentence(answer: WebhookAnswer, maxResultBytes = MAX_RESULT_BYTES): string {
  if (answer.kind === 'refusal') return answer.message;
  if (answer.kind !== 'failure') return 'The add-on answered with something Toolport could not read.';
  switch (answer.errorClass) {
    case 'timeout':
    case 'deadline':
      return 'The add-on took too long to answer.';
    case 'too_large':
      return maxResultBytes === MAX_RESULT_BYTES
        ? `The add-on's result is larger than Toolport takes (${kb(maxResultBytes)} inline, and ${ARTIFACT_LIMITS.bytes / 1024 / 1024} MB of files or of text, whose first part is then shown).`
        : `The add-on's result is larger than ${kb(maxResultBytes)}.`;
    case 'cancelled':
      return 'The call was cancelled.';
    case 'gone':
      return 'The add-on is no longer available.';
    case 'http_status':
      return answer.status === 429 ? 'The add-on is busy right now; try again later.' : 'The add-on failed while handling the call.';
    case 'bad_answer':
    case 'protocol':
      return 'The add-on answered with something Toolport could not read.';
    default:
      return 'The add-on could not be reached.';
  }
}

function pingReason(a: Failure, timeoutMs: number): string {
  switch (a.errorClass) {
    case 'blocked_address':
      return 'The webhook URL leads to a private, loopback, link-local or metadata address, which Toolport does not call.';
    case 'bad_url':
      return 'The webhook URL must be an http or https URL without credentials.';
    case 'timeout':
    case 'deadline':
      return `The webhook did not answer the ping within ${Math.max(1, Math.round(timeoutMs / 1000))} s (timed out).`;
    case 'dns':
      return 'The webhook is unreachable: its host name does not resolve.';
    case 'connect':
      return 'The webhook is unreachable: the connection failed.';
    case 'tls':
      return 'The webhook is unreachable: the TLS handshake or certificate failed.';
    case 'redirect':
      return `The webhook answered with a redirect (HTTP ${a.status}); Toolport does not follow redirects.`;
    case 'too_large':
      return 'The webhook answered the ping with too much data.';
    case 'protocol':
      return 'The webhook answered with broken HTTP.';
    case 'bad_answer':
      return 'The webhook must answer the ping with JSON {"challenge": "<the challenge it received>"}.';
    default:
      return `The webhook answered HTTP ${a.status}.`;
  }
}

export interface PingWebhookInput {
  client: OutboundClient;
  url: string;
  secrets: string[];
  /** Epoch ms. */
  deadline: number;
  /** The clock `deadline` was set by (the services'); the system clock by default. */
  clock?: Clock;
}

/** Sends a signed ping challenge; resolves only when the webhook echoes it back. */
export async function pingWebhook({ client, url, secrets, deadline, clock = systemClock }: PingWebhookInput): Promise<void> {
  const challenge = randomBytes(18).toString('base64url');
  const timeoutMs = deadline - clock.now().getTime();
  const { answer } = await postWebhook({
    client,
    url,
    secrets,
    id: `ping_${randomBytes(16).toString('base64url')}`,
    body: JSON.stringify({ type: 'ping', challenge }),
    kind: 'ping',
    deadline,
    clock,
    maxResultBytes: 1024,
  });
  let reason: string | undefined;
  if (answer.kind === 'failure') reason = pingReason(answer, timeoutMs);
  else if (answer.kind !== 'result' || answer.content[0]?.text !== challenge) reason = 'The webhook answered with a different challenge than the one it was sent.';
  if (reason) {
    throw new ToolportError('VALIDATION', 'The webhook did not answer the ping challenge.', { errors: [{ path: '/webhook', message: reason }] });
  }
}
