import type { Context } from 'hono';
import {
  answerApprovalElicitation,
  declaresUrlElicitation,
  isToolportError,
  recordUrlElicitation,
  type AppIdentity,
  type ElicitationAnswer,
  type Services,
} from '@toolport/core';
import type { AppEnv } from '../../http/env';
import { isPlainObject, jsonRpcError } from '../../http/json-rpc';
import { ACCOUNT_ELICITATION_ID_PREFIX, ELICITATION_ID_PREFIX } from './frames';

/*
 * MCP 2025-11-25 client/elicitation. The app's answer never approves: only the person decides. A
 * decline or cancel ends the call (an app may always say no); an answer to a connect link means nothing.
 */

const APPROVAL_ID = /^apr_[A-Za-z0-9_-]{1,60}$/;
/** A connect link's elicitation id (call-tool.ts needsAccount). */
const CONNECT_ID = /^con_[A-Za-z0-9_-]{1,60}$/;
const INVALID_PARAMS = -32602;
const ACTIONS = new Set(['accept', 'decline', 'cancel']);

/** A JSON-RPC response to one of our `elicitation/create` requests (its id names an approval, or a connect link). */
export const isElicitationAnswer = (body: Record<string, unknown>) =>
  !('method' in body) && typeof body.id === 'string' && (body.id.startsWith(ELICITATION_ID_PREFIX) || body.id.startsWith(ACCOUNT_ELICITATION_ID_PREFIX));

/** At initialize. On failure the grant is unchanged: its calls fall back to progress messages. */
export async function noteCapabilities(svc: Services, identity: AppIdentity, params: unknown) {
  const capabilities = isPlainObject(params) ? params.capabilities : undefined;
  try {
    await recordUrlElicitation(svc, identity.grantId, declaresUrlElicitation(capabilities));
  } catch (err) {
    svc.log.warn('cannot record whether the app declared URL elicitation', { err, grantId: identity.grantId });
  }
}

const refuse = (c: Context<AppEnv>, status: 400 | 404, message: string) =>
  // basic/transports §Sending Messages: a response the server cannot accept gets an HTTP error, and a JSON-RPC error without an id.
  c.body(JSON.stringify(jsonRpcError(undefined, INVALID_PARAMS, message)), status, { 'content-type': 'application/json' });

/** What the app answered: an ElicitResult's action, a JSON-RPC error, or undefined when it is neither. */
function actionOf(body: Record<string, unknown>): ElicitationAnswer | undefined {
  if ('error' in body) return 'error';
  const result = body.result;
  const named = isPlainObject(result) ? result.action : undefined;
  if (typeof named !== 'string' || !ACTIONS.has(named) || (isPlainObject(result) && result.content !== undefined && !isPlainObject(result.content))) return undefined;
  return named as ElicitationAnswer;
}

const NOT_AN_ANSWER = 'Invalid params: an answer to elicitation/create is a result with action "accept", "decline" or "cancel" (content, if any, an object), or a JSON-RPC error.';

/** The app's answer to an approval's elicitation (or a connect link's): 202 as for any response, or why it is refused (nothing changes). */
export async function answerElicitation(c: Context<AppEnv>, svc: Services, identity: AppIdentity, body: Record<string, unknown>): Promise<Response> {
  const id = body.id as string;
  if (id.startsWith(ACCOUNT_ELICITATION_ID_PREFIX)) {
    // The call it came with has ended; "accept" says only that the person was offered the page.
    if (!CONNECT_ID.test(id.slice(ACCOUNT_ELICITATION_ID_PREFIX.length))) {
      return refuse(c, 400, `Invalid params: this response's id names no connect link: Toolport's ids for those are ${ACCOUNT_ELICITATION_ID_PREFIX} followed by con_...`);
    }
    return actionOf(body) ? c.body(null, 202) : refuse(c, 400, NOT_AN_ANSWER);
  }
  const approvalId = id.slice(ELICITATION_ID_PREFIX.length);
  if (!APPROVAL_ID.test(approvalId)) {
    return refuse(c, 400, `Invalid params: this response's id names no approval: Toolport's elicitation ids are ${ELICITATION_ID_PREFIX} followed by an approval id (apr_...).`);
  }
  const action = actionOf(body);
  if (!action) return refuse(c, 400, NOT_AN_ANSWER);
  try {
    await answerApprovalElicitation({ ctx: { svc, actor: { kind: 'app', ...identity } }, approvalId, action });
  } catch (err) {
    if (isToolportError(err) && err.code === 'NOT_FOUND') {
      return refuse(c, 404, `No call of this app asked about ${approvalId}: nothing changed. An app answers only the elicitations of its own calls.`);
    }
    throw err;
  }
  return c.body(null, 202);
}
