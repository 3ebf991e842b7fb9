import type { Context } from 'hono';
import {
  answerApprovalElicitation,
  awaitTask,
  cancelTask,
  declaresUrlElicitation,
  getTask,
  isToolportError,
  type AppIdentity,
  type CallWatcher,
  type Services,
  type TaskView,
  type ToolResult,
} from '@toolport/core';
import type { AppEnv } from '../../http/env';
import { isPlainObject, isRequestId, jsonRpcError } from '../../http/json-rpc';
import type { InFlight } from './cancellation';
import { jsonRpcAnswer } from './frames';
import { INVALID_PARAMS, RESULT_META } from './revisions';
import { runToolCall } from './tool-call';
import { appAnswer, approvalInputRequests } from './held-call';

/*
 * MCP Tasks on both revisions, over the core's task record (calls/tasks.ts): a tool that may take
 * longer than one request answers with a task, which the app polls. 2026-07-28: the extension
 * io.modelcontextprotocol/tasks (tasks/get, tasks/update, tasks/cancel; resultType "task").
 * 2025-11-25: `params.task` on tools/call, then tasks/get, tasks/result and tasks/cancel.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** 2026-07-28 basic/index §Error Codes: Missing Required Client Capability. */
const MISSING_CAPABILITY = -32021;
/** 2025-11-25: the `_meta` key tying a result to its task. */
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** What 2025-11-25 servers say they can do with tasks (no tasks/list: an app polls the tasks it made). */
export const LEGACY_TASKS_CAPABILITY = { cancel: {}, requests: { tools: { call: {} } } };

/** 2026-07-28: the request's capabilities name the extension (an empty object declares it). */
export function declaresTasks(capabilities: unknown): boolean {
  const extensions = isPlainObject(capabilities) ? capabilities.extensions : undefined;
  return isPlainObject(extensions) && isPlainObject(extensions[TASKS_EXTENSION]);
}

/** 2025-11-25 (tools, taskSupport "required"): a call without `task` is `-32601`. */
export const legacyTaskRequired = (c: Context<AppEnv>, id: string | number, name: string) =>
  c.json(
    jsonRpcError(
      id,
      -32601,
      `The tool "${name.slice(0, 80)}" can take longer than one request lasts, so it runs only as a task (its execution.taskSupport is "required"): call it with params.task. Nothing was sent.`,
    ),
  );
/** 2026-07-28: `-32021` naming the tasks extension, with why it is needed. */
export const missingTasks = (c: Context<AppEnv>, id: string | number, why: string) =>
  c.json(jsonRpcError(id, MISSING_CAPABILITY, `Missing required client capability: ${why}`, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } }));

/** 2026-07-28: the tool needs a task and the request did not offer the extension; nothing ran. */
export const tasksRequired = (c: Context<AppEnv>, id: string | number, name: string) =>
  missingTasks(
    c,
    id,
    `the tool "${name.slice(0, 80)}" can take longer than one request lasts, so it runs only as a task; declare the ${TASKS_EXTENSION} extension in this request's capabilities. Nothing was sent.`,
  );

interface Call {
  requestId: string | number;
  name: string;
  rawArguments: unknown;
  /** The app's session or conversation (appSession in tool-call.ts). */
  session?: string;
}

/**
 * Runs the call offering a task: the answer is the task once it exists, or the call's own answer
 * when it ended before one (a refusal, a denial). The rest of the call goes on detached, counted
 * in flight so a stopping server lets its delivery end.
 */
export async function callOfferingTask(
  c: Context<AppEnv>,
  svc: Services,
  identity: AppIdentity,
  aiAppsOn: boolean,
  inflight: InFlight,
  call: Call,
): Promise<{ task: TaskView } | { result: ToolResult }> {
  let created: (task: TaskView) => void = () => {};
  const task = new Promise<TaskView>((resolve) => (created = resolve));
  const watcher: CallWatcher = {
    task: true,
    on: (event) => {
      if (event.kind === 'task') created(event.task);
    },
  };
  const inFlight = c.get('inFlight') as { count: number } | undefined;
  if (inFlight) inFlight.count++;
  const running = runToolCall(svc, identity, aiAppsOn, inflight, { ...call, watcher }).finally(() => {
    if (inFlight) inFlight.count--;
  });
  return Promise.race([running.then((result) => ({ result })), task.then((t) => ({ task: t }))]);
}

/**
 * 2026-07-28: the Task shape of the extension (its status fields inline). Waiting for the person,
 * it is `input_required` with the approval's page for an app that can open a URL; else `working`,
 * its status message naming the page.
 */
export function modernTask(task: TaskView, urlElicitation = false) {
  const { result, approval, ...rest } = task;
  if (task.status === 'completed' && result) return { ...rest, result: { ...result, resultType: 'complete' } };
  if (approval && urlElicitation) {
    return { ...rest, status: 'input_required', inputRequests: approvalInputRequests(approval.url, approval.message) };
  }
  if (approval) return { ...rest, statusMessage: waitingSentence(approval.url) };
  return rest;
}

const waitingSentence = (url: string) => `Waiting for the person to approve the call on its page, ${url} (or in the Toolport dashboard, or on their phone).`;

/** 2025-11-25: `ttl` and `pollInterval` where 2026-07-28 says `ttlMs` and `pollIntervalMs`. */
function legacyTask(task: TaskView) {
  const { result: _result, error: _error, approval, ttlMs, pollIntervalMs, ...rest } = task;
  return { ...rest, ...(approval ? { statusMessage: waitingSentence(approval.url) } : {}), ttl: ttlMs, pollInterval: pollIntervalMs };
}

export const modernCreated = (task: TaskView) => JSON.stringify({ resultType: 'task', ...modernTask(task), _meta: RESULT_META });
export const legacyCreated = (task: TaskView) => JSON.stringify({ task: legacyTask(task) });

const NOT_FOUND = 'Failed to retrieve task: Task not found (tasks are kept 10 minutes after they end, and only the app that made one sees it).';

function taskIdOf(params: Record<string, unknown> | undefined): string | undefined {
  const id = params?.taskId;
  return typeof id === 'string' && id.length > 0 && id.length <= 64 ? id : undefined;
}

const invalid = (c: Context<AppEnv>, id: string | number, message: string) => c.json(jsonRpcError(id, INVALID_PARAMS, message));

/** 2026-07-28's tasks/get, tasks/update and tasks/cancel; undefined for another method. */
export async function answerModernTasks(
  c: Context<AppEnv>,
  svc: Services,
  identity: AppIdentity,
  request: { id: string | number; method: string; params: Record<string, unknown> },
  capabilities: unknown,
): Promise<Response | undefined> {
  const { id, method, params } = request;
  if (method !== 'tasks/get' && method !== 'tasks/update' && method !== 'tasks/cancel') return undefined;
  if (!declaresTasks(capabilities)) return missingTasks(c, id, `${method} needs the ${TASKS_EXTENSION} extension in this request's capabilities.`);
  const taskId = taskIdOf(params);
  if (!taskId) return invalid(c, id, `Invalid params: ${method} needs params.taskId, the id of a task this app made.`);
  const complete = (extra: object = {}) => jsonRpcAnswer(c, id, JSON.stringify({ resultType: 'complete', ...extra, _meta: RESULT_META }));
  switch (method) {
    case 'tasks/get': {
      const task = await getTask(svc, identity.grantId, taskId);
      return task ? complete(modernTask(task, declaresUrlElicitation(capabilities))) : invalid(c, id, NOT_FOUND);
    }
    case 'tasks/update': {
      const responses = params.inputResponses;
      if (responses !== undefined && !isPlainObject(responses)) return invalid(c, id, 'Invalid params: inputResponses must be an object.');
      const task = await getTask(svc, identity.grantId, taskId);
      if (!task) return invalid(c, id, NOT_FOUND);
      // The only input a task asks for is the approval's page. The app's answer never approves:
      // decline or cancel ends the call, accept changes nothing. Any other response is to no request, and ignored.
      const answer = appAnswer(responses);
      if (answer && 'problem' in answer) return invalid(c, id, `Invalid params: ${answer.problem}`);
      if (answer && task.approval && answer.action !== 'accept') {
        try {
          await answerApprovalElicitation({ ctx: { svc, actor: { kind: 'app', ...identity } }, approvalId: task.approval.id, action: answer.action });
        } catch (err) {
          // Decided or gone meanwhile: the task says what happened.
          if (!isToolportError(err)) throw err;
        }
      }
      return complete();
    }
    default:
      return (await cancelTask(svc, { grantId: identity.grantId }, taskId)) ? complete() : invalid(c, id, NOT_FOUND);
  }
}

/** 2025-11-25's tasks/get, tasks/result and tasks/cancel; undefined for another method. */
export async function answerLegacyTasks(
  c: Context<AppEnv>,
  svc: Services,
  identity: AppIdentity,
  body: { id?: unknown; method?: unknown; params?: unknown },
): Promise<Response | undefined> {
  const { method } = body;
  if ((method !== 'tasks/get' && method !== 'tasks/result' && method !== 'tasks/cancel') || !isRequestId(body.id)) return undefined;
  const id = body.id as string | number;
  const params = isPlainObject(body.params) ? body.params : undefined;
  const taskId = taskIdOf(params);
  if (!taskId) return invalid(c, id, `Invalid params: ${method} needs params.taskId, the id of a task this app made.`);
  switch (method) {
    case 'tasks/get': {
      const task = await getTask(svc, identity.grantId, taskId);
      return task ? jsonRpcAnswer(c, id, JSON.stringify(legacyTask(task))) : invalid(c, id, NOT_FOUND);
    }
    case 'tasks/result': {
      // It blocks until the task ends: here at most one call budget, then the app asks again.
      const until = svc.clock.now().getTime() + svc.config.callBudgetSeconds * 1000;
      const task = await awaitTask(svc, identity.grantId, taskId, until, c.req.raw.signal);
      if (!task) return invalid(c, id, NOT_FOUND);
      if (task.status === 'working') return c.json(jsonRpcError(id, -32603, 'The task is still working; poll tasks/get and ask for its result once it has ended.'));
      if (task.error) return c.json(jsonRpcError(id, task.error.code, task.error.message));
      const result = task.result ?? { content: [{ type: 'text', text: 'The call was cancelled before the add-on answered.' }], isError: true };
      return jsonRpcAnswer(c, id, JSON.stringify({ ...result, _meta: { [RELATED_TASK]: { taskId } } }));
    }
    default: {
      const before = await getTask(svc, identity.grantId, taskId);
      if (!before) return invalid(c, id, NOT_FOUND);
      if (before.status !== 'working') return invalid(c, id, `Cannot cancel a task in terminal status: it is ${before.status}.`);
      await cancelTask(svc, { grantId: identity.grantId }, taskId);
      const after = await getTask(svc, identity.grantId, taskId);
      return jsonRpcAnswer(c, id, JSON.stringify(legacyTask(after ?? before)));
    }
  }
}
