import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import {
  answerApprovalElicitation,
  awaitHeldResult,
  isToolportError,
  issueRequestState,
  keepHeldResult,
  readRequestState,
  RESULT_KEPT_MINUTES,
  type AppIdentity,
  type CallWatcher,
  type ElicitationLink,
  type Services,
  type ToolResult,
} from '@toolport/core';
import type { AppEnv } from '../../http/env';
import { isPlainObject, jsonRpcError } from '../../http/json-rpc';
import type { InFlight } from './cancellation';
import { jsonRpcAnswer } from './frames';
import { INVALID_PARAMS, RESULT_META } from './revisions';
import { runToolCall } from './tool-call';

/*
 * In-app approval on 2026-07-28 (basic/patterns/mrtr): a call that waits for the person answers
 * `input_required` with the approval page as a URL-mode elicitation, and a signed `requestState`
 * naming the call. The call goes on where it is held; the app's retry, in any process, waits for
 * its answer. The app's own answer never approves: "decline" or "cancel" ends the call, "accept"
 * only says the person was shown the page.
 */

/** The key of the one input Toolport asks for (of a held call, and of a task waiting for the person). */
const APPROVAL_INPUT = 'approval';

/** 2026-07-28's URL mode has no elicitationId (nor its completion notification): the URL names the approval. */
export const approvalInputRequests = (url: string, message: string) => ({ [APPROVAL_INPUT]: { method: 'elicitation/create', params: { mode: 'url', url, message } } });

/** The app's answer to the approval's page, as `inputResponses` carries it: its action, or why it cannot be read. */
export function appAnswer(responses: Record<string, unknown> | undefined): { action: 'accept' | 'decline' | 'cancel' } | { problem: string } | undefined {
  const answer = responses?.[APPROVAL_INPUT];
  if (answer === undefined) return undefined;
  const action = isPlainObject(answer) ? answer.action : undefined;
  if (action === 'accept' || action === 'decline' || action === 'cancel') return { action };
  return { problem: `inputResponses.${APPROVAL_INPUT} answers an elicitation: {"action": "accept" | "decline" | "cancel"}.` };
}

type Encode = (result: ToolResult) => string;
interface Call {
  requestId: string | number;
  name: string;
  rawArguments: unknown;
  /** The app's session or conversation (appSession in tool-call.ts). */
  session?: string;
}

const invalid = (c: Context<AppEnv>, id: string | number, message: string) => c.json(jsonRpcError(id, INVALID_PARAMS, `Invalid params: ${message}`));

const toolError = (text: string): ToolResult => ({ content: [{ type: 'text', text }], isError: true });

/** The arguments as the app sends them, in both rounds (the SDK echoes its params). */
const argsDigestOf = (svc: Services, rawArguments: unknown) => svc.secrets.argsDigest(JSON.stringify(rawArguments ?? {}));

function inputRequired(c: Context<AppEnv>, id: string | number, requestState: string, link?: ElicitationLink): Response {
  const inputRequests = link ? approvalInputRequests(link.url, link.message) : undefined;
  return jsonRpcAnswer(c, id, JSON.stringify({ resultType: 'input_required', ...(inputRequests ? { inputRequests } : {}), requestState, _meta: RESULT_META }));
}

/** The first round, for an app that declared URL elicitation: the answer, or the page to show the person. */
export async function callOfferingPage(
  c: Context<AppEnv>,
  svc: Services,
  identity: AppIdentity,
  aiAppsOn: boolean,
  inflight: InFlight,
  call: Call & { response?: ServerResponse },
  encode: Encode,
): Promise<Response> {
  let offer: (link: ElicitationLink) => void = () => {};
  const offered = new Promise<ElicitationLink>((resolve) => (offer = resolve));
  // Only the approval's page: a connect link is in the call's answer, which comes at once.
  const watcher: CallWatcher = {
    elicitation: 'declared',
    on: (event) => {
      if (event.kind === 'offer' && event.link.kind === 'approval') offer(event.link);
    },
  };
  const running = runToolCall(svc, identity, aiAppsOn, inflight, { ...call, watcher });
  const first = await Promise.race([running.then((result) => ({ result }) as const), offered.then((link) => ({ link }) as const)]);
  if ('result' in first) return jsonRpcAnswer(c, call.requestId, encode(first.result));
  const approvalId = first.link.elicitationId;
  // Counted until it ends, so a stopping server lets it finish (or be cancelled) and keep its answer.
  const inFlight = c.get('inFlight') as { count: number } | undefined;
  if (inFlight) inFlight.count++;
  // Core keeps every held call's answer; this also keeps the sentence of a call that threw.
  void running
    .then((result) => keepHeldResult(svc, approvalId, result))
    .catch((err: unknown) => svc.log.error('cannot keep a held call’s answer; its retry will say it was lost', { err, approvalId }))
    .finally(() => {
      if (inFlight) inFlight.count--;
    });
  const state = issueRequestState(svc, { approvalId, grantId: identity.grantId, tool: call.name, argsDigest: argsDigestOf(svc, call.rawArguments) });
  return inputRequired(c, call.requestId, state, first.link);
}

/** A retry carrying our `requestState`: the app's answer (if any), then the held call's answer. */
export async function answerRetry(c: Context<AppEnv>, svc: Services, identity: AppIdentity, call: Call, params: Record<string, unknown>, encode: Encode): Promise<Response> {
  const { requestId: id } = call;
  const read = readRequestState(svc, params.requestState as string);
  if (!read.ok) {
    return read.reason === 'expired'
      ? invalid(c, id, `this requestState has expired (a waiting call is kept ${RESULT_KEPT_MINUTES} minutes); call the tool again without it.`)
      : invalid(c, id, 'requestState is not one Toolport issued; send it back exactly as received, or call the tool again without it.');
  }
  const held = read.call;
  // Another app's state, or this one pointed at another call: refused the same way, saying nothing of it.
  if (held.grantId !== identity.grantId || held.tool !== call.name || held.argsDigest !== argsDigestOf(svc, call.rawArguments)) {
    return invalid(c, id, 'this requestState belongs to another call; a retry sends the same tool and arguments as the call it continues.');
  }
  const who = { kind: 'app' as const, ...identity };
  const answer = appAnswer(params.inputResponses as Record<string, unknown> | undefined);
  if (answer && 'problem' in answer) return invalid(c, id, answer.problem);
  if (answer) {
    try {
      await answerApprovalElicitation({ ctx: { svc, actor: who }, approvalId: held.approvalId, action: answer.action });
    } catch (err) {
      if (!(isToolportError(err) && err.code === 'NOT_FOUND')) throw err;
    }
  }
  const until = svc.clock.now().getTime() + svc.config.callBudgetSeconds * 1000;
  const outcome = await awaitHeldResult(svc, identity, held.approvalId, until, c.req.raw.signal);
  switch (outcome.kind) {
    case 'result':
      return jsonRpcAnswer(c, id, encode(outcome.result));
    case 'waiting':
      // Nothing new to ask: the app retries with the same state and keeps waiting.
      return inputRequired(c, id, params.requestState as string);
    case 'lost':
      return jsonRpcAnswer(
        c,
        id,
        encode(
          toolError(
            outcome.status === 'allowed'
              ? 'Toolport lost track of this call after the person allowed it (the server holding it stopped), so it may or may not have run: check before trying again.'
              : 'This call ended without running, and the server holding it stopped before it could answer. Call the tool again if it is still needed.',
          ),
        ),
      );
    default:
      return invalid(c, id, 'this requestState names no call of this app.');
  }
}
