import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { accountsFrom, accountsProblemSentence } from './accounts';
import { checkArguments } from './arguments';
import { settingMapOf, type AddonDefinition, type AnswerFile, type ApprovalReceipt, type CallContext, type ConfirmDescriptor, type Tool, type ToolAnswer } from './define';
import { settingsFrom } from './settings';
import { isAddOnError } from './errors';

export interface HandlerOptions {
  /**
   * The `whsec_...` signing secrets to accept. During a rotation give the new and the old one; a
   * function is read on every request, so secrets can change without a restart.
   */
  secrets: string[] | (() => string[]);
  /** Deliveries whose `webhook-timestamp` is further than this from now (either way) are refused. */
  toleranceSeconds?: number;
  /** Larger request bodies are refused with 413 before they are verified. Default 1 MB. */
  maxBodyBytes?: number;
  /**
   * Answers to `tool.call` are remembered by `webhook-id` for the tolerance window, so a retry of a
   * call whose answer was lost gets the same answer instead of running the tool twice. Per process.
   */
  dedupe?: boolean;
  /** How many answers are remembered at most for `dedupe`; the oldest go first. Default 10,000. */
  rememberAtMost?: number;
  /**
   * At registration Toolport pings the webhook signed with the secret it is about to show you, which
   * this add-on cannot know yet. So a ping with well-formed, fresh headers is echoed even when its
   * signature does not verify (it runs nothing and reveals nothing). `strictPing: true` verifies pings
   * too, once the secret is configured.
   */
  strictPing?: boolean;
  /** Where unexpected errors go; they are never sent to Toolport. Default: console.error. */
  onError?: (err: unknown, where: { tool?: string; callId?: string }) => void;
}

/** The sentence an app sees when `run` throws something other than AddOnError. */
export const GENERIC_FAILURE = 'The add-on failed; try again later.';
/** What a `requireApproval` tool answers to a call without a matching approval. */
export const NOT_APPROVED = 'This call carries no approval from the person for these arguments, so it did not run.';
const RESULT_LIMIT_BYTES = 64 * 1024;
const REMEMBER_AT_MOST = 10_000;
/** Tries at an answer URL (a task's answer, or its progress) before giving up. */
const LATER_ATTEMPTS = 5;

/** A delivery as any server sees it: the method, the headers, and the body read up to a limit. */
export interface RawDelivery {
  method: string;
  /** A header's value by lower-case name; several values joined with ", ". */
  header(name: string): string | null | undefined;
  /** The whole body; rejects with TooLarge once it passes `max` bytes (a declared length is checked before). */
  body(max: number): Promise<Uint8Array>;
}

/** What the handler answers, before any server turns it into a response. */
export interface RawAnswer {
  status: number;
  contentType: string;
  body: string;
}

/**
 * The handler's server-neutral core, attached to the web-standard handler under this symbol:
 * serveNode calls it straight from node:http, without building a Request, a Response and the web
 * streams between them, which cost a small add-on most of its CPU per call.
 */
export const RAW_HANDLER = Symbol.for('toolport.addon-kit.raw-handler');
export type WebHandler = ((request: Request) => Promise<Response>) & { [RAW_HANDLER]?: (d: RawDelivery) => Promise<RawAnswer> };

const json = (status: number, body: unknown): RawAnswer => ({ status, contentType: 'application/json', body: JSON.stringify(body) });
// Every refusal before verification looks the same: no hint about which check failed.
const unauthorized = (): RawAnswer => ({ status: 401, contentType: 'text/plain', body: 'Unauthorized' });

export class TooLarge extends Error {}

async function readBody(request: Request, max: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new TooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function signatureMatches(webhooks: Webhook[], id: string, timestamp: number, body: string, header: string): boolean {
  const passed = header
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3)));
  if (!passed.length) return false;
  const at = new Date(timestamp * 1000);
  let ok = false;
  for (const wh of webhooks) {
    // The library computes the HMAC; the comparison is ours so the tolerance window can be configured.
    const expected = Buffer.from(wh.sign(id, at, body).slice(3));
    for (const p of passed) {
      if (p.length === expected.length && timingSafeEqual(p, expected)) ok = true;
    }
  }
  return ok;
}

function answerOf(result: ToolAnswer): Record<string, unknown> | undefined {
  if (typeof result === 'string') return { text: result };
  if (result && typeof result === 'object') {
    const artifacts = Array.isArray(result.files) && result.files.length ? { artifacts: result.files.map(artifactOf) } : {};
    if ('json' in result) return { json: result.json === undefined ? null : result.json, ...artifacts };
    if ('content' in result && Array.isArray(result.content)) return { content: result.content, ...artifacts };
    if ('text' in result && typeof result.text === 'string') return { text: result.text, ...artifacts };
  }
  return undefined;
}

const artifactOf = (f: AnswerFile) => ({
  name: f.name,
  mediaType: f.mediaType,
  data: (typeof f.data === 'string' ? Buffer.from(f.data, 'utf8') : Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength)).toString('base64'),
});

interface Delivery {
  type?: unknown;
  tool?: unknown;
  arguments?: unknown;
  challenge?: unknown;
  call?: { id?: unknown; deadline?: unknown; attempt?: unknown; answerUrl?: unknown; answerBy?: unknown; session?: unknown };
  user?: { id?: unknown };
  app?: { name?: unknown; clientId?: unknown };
  approval?: { id?: unknown; decidedAt?: unknown; channel?: unknown; argumentsHash?: unknown };
  settings?: unknown;
  accounts?: unknown;
  /** A tools.list delivery: the manifest's tool names. */
  tools?: unknown;
}

/**
 * The delivery's approval, if it is well formed and names the arguments this delivery carries.
 * Toolport sends the arguments as the exact JSON text the person saw, and JSON.stringify of what
 * JSON.parse read back gives that text again, so the digest can be recomputed here.
 */
function receiptOf(d: Delivery): ApprovalReceipt | undefined {
  const a = d.approval;
  if (!a || typeof a !== 'object') return undefined;
  if (typeof a.id !== 'string' || typeof a.channel !== 'string' || typeof a.argumentsHash !== 'string' || typeof a.decidedAt !== 'string') return undefined;
  const decidedAt = new Date(a.decidedAt);
  if (!Number.isFinite(decidedAt.getTime())) return undefined;
  const digest = `sha256:${createHash('sha256').update(JSON.stringify(d.arguments ?? {}), 'utf8').digest('hex')}`;
  const sent = Buffer.from(a.argumentsHash);
  if (sent.length !== digest.length || !timingSafeEqual(sent, Buffer.from(digest))) return undefined;
  return { id: a.id, decidedAt, channel: a.channel, argumentsHash: a.argumentsHash };
}

export function createHandler(def: AddonDefinition<any>, options: HandlerOptions): WebHandler {
  const tolerance = options.toleranceSeconds ?? 300;
  const maxBody = options.maxBodyBytes ?? 1_000_000;
  const dedupe = options.dedupe ?? true;
  const rememberAtMost = Math.max(1, options.rememberAtMost ?? REMEMBER_AT_MOST);
  const onError =
    options.onError ??
    ((err, where) => console.error(`[toolport add-on ${def.id}] ${where.tool ?? 'delivery'} failed${where.callId ? ` (call ${where.callId})` : ''}:`, err));
  const byName = new Map<string, Tool<any, any>>(Object.entries(def.tools));
  const providerTitles = new Map<string, string>((def.accounts ?? []).map((a) => [a.provider, a.title]));
  const declaredSettings = settingMapOf(def);
  const webhookCache = new Map<string, Webhook>();
  /** A tools.list delivery's answer: every tool without `toolsFor`; a failure keeps the person's last list at Toolport. */
  const toolsFor = async (d: Delivery): Promise<readonly string[]> => {
    const tools = Array.isArray(d.tools) ? d.tools.filter((n): n is string => typeof n === 'string') : [];
    if (!def.toolsFor) return tools;
    const settings = d.settings && typeof d.settings === 'object' ? (d.settings as Record<string, unknown>) : {};
    const accounts = Array.isArray(d.accounts) ? d.accounts.filter((n): n is string => typeof n === 'string') : [];
    return def.toolsFor({ userId: typeof d.user?.id === 'string' ? d.user.id : '', settings, accounts, tools });
  };
  const remembered = new Map<string, { expires: number; answer: Promise<Record<string, unknown>> }>();

  const webhooksFor = (): Webhook[] => {
    const list = typeof options.secrets === 'function' ? options.secrets() : options.secrets;
    return list.filter(Boolean).map((s) => {
      let wh = webhookCache.get(s);
      if (!wh) {
        wh = new Webhook(s);
        webhookCache.set(s, wh);
      }
      return wh;
    });
  };
  // Fail at start, not on the first delivery, when a static secret is malformed.
  if (typeof options.secrets !== 'function') webhooksFor();

  function contextOf(d: Delivery, webhookId: string, accounts: CallContext<any, any>['accounts']): CallContext<CallContext['settings'], any> {
    // A task's call may run until its answer is due (answered at its answer URL).
    const due = typeof d.call?.answerUrl === 'string' && typeof d.call.answerBy === 'string' ? d.call.answerBy : d.call?.deadline;
    const deadline = typeof due === 'string' ? new Date(due) : new Date(NaN);
    const valid = Number.isFinite(deadline.getTime()) ? deadline : new Date(Date.now() + 30_000);
    let signal: AbortSignal | undefined;
    return {
      userId: String(d.user?.id ?? ''),
      callId: String(d.call?.id ?? webhookId),
      attempt: typeof d.call?.attempt === 'number' ? d.call.attempt : 1,
      deadline: valid,
      // Made when a tool first looks: most never do, and each is a timer until the deadline.
      get signal() {
        return (signal ??= abortAt(valid));
      },
      app: { name: String(d.app?.name ?? ''), clientId: String(d.app?.clientId ?? '') },
      ...(typeof d.call?.session === 'string' ? { session: d.call.session } : {}),
      webhookId,
      approval: receiptOf(d),
      settings: settingsFrom(declaredSettings, d.settings),
      accounts,
      // A task's call replaces it (handle): only it has somewhere to send progress.
      progress: async () => {},
    };
  }

  async function runTool(t: Tool<any, any>, name: string, args: Record<string, unknown>, ctx: CallContext) {
    try {
      const answer = answerOf(await t.run(args, ctx));
      if (!answer) {
        onError(new TypeError('run must return a string, { json }, { content } or { text }'), { tool: name, callId: ctx.callId });
        return { error: GENERIC_FAILURE, failed: true };
      }
      // Toolport withholds any other answer of a tool with an outputSchema: say so here, where it is fixed.
      if (t.outputSchema && !(answer.json !== null && typeof answer.json === 'object' && !Array.isArray(answer.json))) {
        onError(new TypeError('a tool with an outputSchema must return { json: {...} }, an object matching it'), { tool: name, callId: ctx.callId });
        return { error: GENERIC_FAILURE, failed: true };
      }
      const size = Buffer.byteLength(JSON.stringify(answer));
      if (size > RESULT_LIMIT_BYTES) {
        onError(new RangeError(`the result is ${size} bytes; Toolport refuses results over 64 KB`), { tool: name, callId: ctx.callId });
      }
      return answer;
    } catch (err) {
      if (isAddOnError(err)) return { error: err.message };
      onError(err, { tool: name, callId: ctx.callId });
      // `failed`: Toolport's delivery log then shows the add-on's code failing, not a refusal.
      return { error: GENERIC_FAILURE, failed: true };
    }
  }

  async function confirmTool(t: Tool<any, any>, name: string, args: Record<string, unknown>, ctx: CallContext) {
    if (!t.confirm) {
      // Only reached when the registered manifest says `confirm` but this code has no handler:
      // keep the approval rather than skip it.
      const fallback: ConfirmDescriptor = { message: `Run “${t.title}”?`, style: t.destructive ? 'destructive' : 'default' };
      return { confirm: fallback };
    }
    try {
      const c = await t.confirm(args, ctx);
      return { confirm: c ?? null };
    } catch (err) {
      if (isAddOnError(err)) return { error: err.message };
      onError(err, { tool: name, callId: ctx.callId });
      // As for `run`: the delivery log shows the add-on's code failing, and the person is asked plainly.
      return { error: GENERIC_FAILURE, failed: true };
    }
  }

  function remember(key: string, make: () => Promise<Record<string, unknown>>) {
    if (!dedupe) return make();
    const now = Date.now();
    const hit = remembered.get(key);
    if (hit && hit.expires > now) return hit.answer;
    // Oldest first, and every entry lives equally long: the expired ones are at the front. Stop at
    // the first live one once there is room, rather than look at every entry on every call.
    for (const [k, v] of remembered) {
      if (v.expires > now && remembered.size < rememberAtMost) break;
      remembered.delete(k);
    }
    const answer = make();
    remembered.set(key, { expires: now + Math.max(tolerance, 60) * 1000, answer });
    return answer;
  }

  async function handle(request: RawDelivery): Promise<RawAnswer> {
    if (request.method !== 'POST') return unauthorized();
    const id = request.header('webhook-id');
    const ts = request.header('webhook-timestamp');
    const sig = request.header('webhook-signature');
    if (!id || !ts || !sig || id.length > 256 || sig.length > 4096 || !/^\d{1,12}$/.test(ts)) return unauthorized();
    const timestamp = Number(ts);
    if (Math.abs(Date.now() / 1000 - timestamp) > tolerance) return unauthorized();

    const tooLarge = () => json(413, { error: 'The delivery is too large.' });
    const declared = Number(request.header('content-length'));
    if (Number.isFinite(declared) && declared > maxBody) return tooLarge();
    let raw: Uint8Array;
    try {
      raw = await request.body(maxBody);
    } catch (err) {
      if (err instanceof TooLarge) return tooLarge();
      return unauthorized();
    }
    const body = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
    let webhooks: Webhook[];
    try {
      webhooks = webhooksFor();
    } catch (err) {
      onError(err, {});
      return unauthorized();
    }
    const verified = signatureMatches(webhooks, id, timestamp, body, sig);
    let d: Delivery | undefined;
    try {
      d = JSON.parse(body);
    } catch {
      d = undefined;
    }
    const isPing = !!d && typeof d === 'object' && d.type === 'ping' && typeof d.challenge === 'string';
    if (!verified && !(isPing && !options.strictPing)) return unauthorized();
    if (!d || typeof d !== 'object') return json(400, { error: 'The delivery is not a JSON object.' });
    if (isPing) return json(200, { challenge: d.challenge });
    if (d.type === 'tools.list') {
      try {
        return json(200, { tools: await toolsFor(d) });
      } catch (err) {
        onError(err, {});
        return json(500, { error: 'toolsFor failed.' });
      }
    }
    if (d.type !== 'tool.call' && d.type !== 'tool.confirm') return json(400, { error: `Unknown delivery type.` });

    const name = typeof d.tool === 'string' ? d.tool : '';
    const t = byName.get(name);
    if (!t) return json(200, { error: `This add-on has no tool named "${name.slice(0, 64)}".` });
    const checked = checkArguments(t.arguments ?? {}, d.arguments);
    if (!checked.ok) return json(200, { error: checked.problems.join(' ') });
    // Only the providers this tool lists, even if the body carried more.
    const { accounts, problem } = accountsFrom(t.accounts ?? [], d.accounts);
    const ctx = contextOf(d, id, accounts);
    if (!ctx.userId) return json(400, { error: 'The delivery names no user.' });
    // A confirm may come without them (ConfirmContext); a call never runs without every one.
    if (d.type === 'tool.confirm') return json(200, await confirmTool(t, name, checked.value, ctx));
    if (problem) {
      // Toolport does not send such a call: the registered manifest and this code disagree. Say
      // so where the developer looks, and fail the call (the delivery log shows addon_failed).
      const sentence = accountsProblemSentence(problem, providerTitles.get(problem.provider) ?? problem.provider);
      onError(new Error(sentence), { tool: name, callId: ctx.callId });
      return json(200, { error: sentence, failed: true });
    }
    if (t.requireApproval && !ctx.approval) return json(200, { error: NOT_APPROVED });
    const key = [id, ctx.callId, ctx.userId, name].join("\u0000");
    const answerUrl = typeof d.call?.answerUrl === 'string' ? d.call.answerUrl : undefined;
    if (!answerUrl) return json(200, await remember(key, () => runTool(t, name, checked.value, ctx)));
    // A task's call: taken now (202) and answered at its answer URL when `run` returns; a retry of
    // the delivery is taken again without running the tool twice.
    ctx.progress = (message) => sendLater(answerUrl, { progress: message }, { tool: name, callId: ctx.callId }).then(() => {});
    void remember(key, async () => {
      void runTool(t, name, checked.value, ctx).then((answer) => sendLater(answerUrl, answer, { tool: name, callId: ctx.callId }));
      return { accepted: true };
    });
    return json(202, { accepted: true });
  }

  /** Signed like the deliveries (the first secret; the webhook-id names the call), tried again on a network error, 408, 429 or 5xx. */
  async function sendLater(url: string, payload: Record<string, unknown>, where: { tool: string; callId: string }): Promise<boolean> {
    const body = JSON.stringify(payload);
    for (let attempt = 1; attempt <= LATER_ATTEMPTS; attempt++) {
      const at = new Date();
      const id = `${where.callId}.${randomUUID()}`;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': webhooksFor()[0]!.sign(id, at, body),
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        if (res.ok) return true;
        if (res.status !== 408 && res.status !== 429 && res.status < 500) {
          // 409 and 410: answered already, or the call ended (cancelled, out of time); nothing to retry.
          if (res.status !== 409 && res.status !== 410) onError(new Error(`Toolport refused the answer: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`), where);
          return false;
        }
        if (attempt === LATER_ATTEMPTS) onError(new Error(`Toolport did not take the answer: HTTP ${res.status}`), where);
      } catch (err) {
        if (attempt === LATER_ATTEMPTS) onError(err, where);
      }
      if (attempt < LATER_ATTEMPTS) await new Promise((r) => setTimeout(r, Math.min(8_000, 250 * 2 ** attempt)));
    }
    return false;
  }

  const web: WebHandler = async (request) => {
    const answer = await handle({ method: request.method, header: (name) => request.headers.get(name), body: (max) => readBody(request, max) });
    return new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.contentType } });
  };
  web[RAW_HANDLER] = handle;
  return web;
}

/**
 * A signal that aborts once the wall clock has reached `when`. A timer for the time left runs on
 * the monotonic clock and can fire a millisecond before Date.now() gets there, so it checks again.
 */
function abortAt(when: Date): AbortSignal {
  const controller = new AbortController();
  // Like AbortSignal.timeout, it aborts from a timer, never at once (a listener added right after
  // still hears it), and the timer keeps no process alive.
  const arm = () => setTimeout(() => {
    if (Date.now() >= when.getTime()) controller.abort(new DOMException('The call reached its deadline.', 'TimeoutError'));
    else arm();
  }, Math.max(0, when.getTime() - Date.now())).unref();
  arm();
  return controller.signal;
}
