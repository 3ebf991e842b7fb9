import type { ServerResponse } from 'node:http';
import {
  AI_APPS_OFF,
  callTool,
  isDependencyDown,
  isToolportError,
  type AppIdentity,
  type CallWatcher,
  type Ctx,
  type Services,
  type ToolResult,
} from '@toolport/core';
import type { InFlight } from './cancellation';

const DOWN_SENTENCE = 'Toolport cannot reach its database or queue right now, so the call did not run. Try again in a few seconds.';

const AI_APPS_OFF_RESULT: ToolResult = { content: [{ type: 'text', text: AI_APPS_OFF.callResult }], isError: true };

/**
 * A call that threw instead of answering (callTool logged it). It throws only before dispatch, so
 * the call did not run; the SDK would otherwise echo the raw error message to the app.
 */
export function failedCall(err: unknown): ToolResult {
  const text = isToolportError(err) && err.expose
    ? err.message
    : isDependencyDown(err)
      ? DOWN_SENTENCE
      : 'Something went wrong on Toolport’s side, so the call did not run. Try again in a moment.';
  return { content: [{ type: 'text', text }], isError: true };
}

/** Up to 200 visible ASCII characters: what the SDKs' session ids and common conversation ids are. */
const SESSION_ID = /^[\x21-\x7e]{1,200}$/;

/**
 * The app's session or conversation, so an add-on can keep state per conversation (`call.session`):
 * a string the app puts in the call's `_meta` as `conversationId` or `sessionId` (one connection may
 * carry many conversations), else 2025-11-25's `Mcp-Session-Id` (issued at initialize, echoed by
 * the app). Anything else is no session.
 */
export function appSession(header: string | undefined, meta: unknown): string | undefined {
  const m = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : {};
  for (const v of [m.conversationId, m.sessionId, header]) if (typeof v === 'string' && SESSION_ID.test(v)) return v;
  return undefined;
}

/** Never rejects. Reactions, not async: a call waiting for approval keeps no frame of it. */
export function runToolCall(
  svc: Services,
  identity: AppIdentity,
  aiAppsOn: boolean,
  inflight: InFlight,
  call: {
    requestId: string | number;
    name: string;
    rawArguments: unknown;
    /** What else ends the call (the SDK path): the SDK's request signal, the HTTP request's. */
    signals?: AbortSignal[];
    /** On Node (the direct path): the response whose early close (the app hung up) ends the call. */
    response?: ServerResponse;
    /** The exchange watching the call (node-writers.ts, held-call.ts, tasks.ts). */
    watcher?: CallWatcher;
    /** The app's session or conversation (appSession). */
    session?: string;
  },
): Promise<ToolResult> {
  if (!aiAppsOn) return Promise.resolve(AI_APPS_OFF_RESULT);
  const ctx: Ctx = { svc, actor: { kind: 'app', ...identity } };
  const key = inflight.key(identity.grantId, call.requestId);
  const mine = inflight.add(key);
  if (call.signals) for (const signal of call.signals) mine.follow(signal);
  // Cheaper than the adapter's per-request AbortController and AbortSignal.any on every call. Left
  // on the response, which closes right after the answer: aborting a finished call does nothing.
  const response = call.response;
  response?.on('close', () => {
    if (!response.writableFinished) mine.abort(new Error('the app closed the request'));
  });
  let running: Promise<ToolResult>;
  try {
    running = callTool({
      ctx,
      input: {
        name: call.name,
        arguments: call.rawArguments,
        signal: mine,
        watcher: call.watcher,
        ...(call.session ? { session: call.session } : {}),
      },
    });
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
