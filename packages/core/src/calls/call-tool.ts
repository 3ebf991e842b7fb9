import { performance } from 'node:perf_hooks';
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Services } from '../services';
import type { Slot } from '../limits';
import { awaitHeldResult, findSameCall, keepHeldResult, standIn } from '../approvals/held';
import { claimDecided, orphansDecided, type ApprovalRow } from '../approvals/records';
import { and, eq } from 'drizzle-orm';
import { oauthGrants, users } from '../db/schema/index';
import { checkArguments } from '../addons/arguments';
import { shapeOutcome, text } from './outcome';
import type { Ctx } from '../context';
import { newId } from '../ids';
import type { CallJob, CallOutcome } from '../queue/types';
import { endFailed, inSpan, tracer } from '../tracing';
import { recordCall, type CallOutcomeName, type CallRecord } from './call-log';
import { whyNotCallable } from './why-not';
import { grantAsksEveryTool } from '../oauth/verify';
import type { EnabledTool, EnabledToolSet } from './enabled-tools';
import type { ApprovalDecision, Approvals, CallWatcher, ToolResult } from './types';
import { announceCallChange, tell } from './watch';
import { argumentsHash, type ApprovalReceipt } from '../queue/types';
import type { CallCancel, CancelSignal } from '../cancel';
import { ruleFor, rulesOf, type Rule } from '../approvals/rules';
import { needsSetupSentence } from '../installs/settings';
import {
  accountTokensFor,
  checkToolAccounts,
  connectElicitationMessage,
  connectLink,
  needsAccountSentence,
  notSetUpSentence,
  providerReady,
  type AccountRow,
  type MissingAccount,
} from '../installs/account-tokens';
import { grantDeclaresUrlElicitation } from '../oauth/elicitation';
import { newToken } from '../ids';
import {
  createTask,
  describeSeconds,
  isLongTool,
  MAX_REQUEST_TOOL_SECONDS,
  noteAsking,
  noteSending,
  settle,
  taskOfCall,
  taskSignal,
  taskViewOfCall,
  type TaskView,
} from './tasks';
import { endTurn, exclusiveLine, waitTurn } from '../turns';
import { publishLiveRefusal } from '../addons/live-deliveries';

/** A call has at most this long from dispatch to the add-on's answer (DESIGN.md limits); a tool may ask for less. */
const CALL_DEADLINE_MS = 30_000;
/*
 * The call budget (CALL_BUDGET_SECONDS, 55 s) holds confirm, approval and every delivery attempt:
 * 5 s under the SDK clients' 60 s request timeout, so the app hears the outcome before it retries.
 */
/** Less than this left of the budget: the call is not sent at all (it could only time out). */
const MIN_DELIVERY_MS = 1_000;
/** A place among a person's waiting approvals outlives the longest wait: the add-on's description (5 s), the person (30 s). */
const APPROVAL_PLACE_MS = 40_000;


/** A deny's reason (checked plain text, decide.ts) is quoted as JSON does. */
const approvalSentences = (
  timeoutSeconds: number,
  decision: Pick<ApprovalDecision, 'reason' | 'decidedBy'> = {},
): Record<Exclude<ApprovalDecision['status'], 'allowed' | 'skipped'>, string> => ({
  denied: decision.reason
    ? `The person denied this call. Their reason: ${JSON.stringify(decision.reason)}. Do not retry it unless they ask you to.`
    : 'The person denied this call. Do not retry it unless they ask you to.',
  dismissed: 'The person dismissed the approval request without allowing it, so the call did not run. Do not retry it unless they ask you to.',
  expired: `The person did not answer the approval request within ${timeoutSeconds} seconds, so the call did not run.`,
  cancelled:
    decision.decidedBy === 'app'
      ? 'The approval request was declined or cancelled in the app before the person decided, so the call did not run.'
      : 'The call was cancelled before the person decided, so it did not run.',
  revoked: 'This app’s access was revoked (or AI apps were turned off) while waiting for approval, so the call did not run.',
});

export interface CallToolInput {
  name: string;
  arguments: unknown;
  signal?: CancelSignal;
  /** The app's exchange watching the call: progress, a page to offer, held, its task. */
  watcher?: CallWatcher;
  /** The app's own session or conversation id, as it sent it (the adapter bounds it); the add-on sees a pseudonym. */
  session?: string;
}

/**
 * A limited call is not logged: a flood must not become a flood of writes. With `slot`, the add-on
 * slot is taken in the same Redis round trip (`release` null: the add-on is busy).
 */
async function admit(run: CallRun, slot?: Slot): Promise<{ limited?: ToolResult; release?: (() => Promise<void>) | null }> {
  const { svc, actor } = run;
  const { limits } = svc.config;
  const windows = [
    { key: `calls:person:${actor.userId}`, limit: limits.callsPerPersonPerMinute, windowMs: 60_000, whom: 'for this person' },
    { key: `calls:app:${actor.grantId}`, limit: limits.callsPerAppPerMinute, windowMs: 60_000, whom: 'for this app' },
  ];
  const { over, retryAfterMs, release }: { over: number; retryAfterMs: number; release?: () => Promise<void> } = slot
    ? await svc.limiter.hitAndAcquire(windows, slot)
    : await svc.limiter.hit(windows);
  const hit = windows[over];
  if (!hit) return slot ? { release: release ?? null } : {};
  svc.metrics.toolCall('unknown', 'rate_limited', 0);
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return { limited: text(`Too many tool calls ${hit.whom}: at most ${hit.limit} a minute. Try again in ${seconds} seconds.`, true) };
}

const addonSlot = (svc: Services, addonId: string): Slot => ({
  key: `addon:${addonId}`,
  max: svc.config.limits.addonConcurrency,
  ttlMs: CALL_DEADLINE_MS + 5_000,
});

export interface CallToolOptions {
  /** The tools to resolve the name against; by default the person's enabled tools. */
  tools?: EnabledToolSet;
  /** Who is asked before a destructive call; by default `svc.approvals`. */
  approvals?: Approvals;
  /** A check script: the developer's own approval rules do not govern it. */
  asTestPerson?: boolean;
}

/** Traced as `mcp tools/call`, never with the arguments. */
export function callTool({ ctx, input, options = {} }: { ctx: Ctx; input: CallToolInput; options?: CallToolOptions }): Promise<ToolResult> {
  const actor = ctx.actor;
  if (actor.kind !== 'app') throw new Error('callTool needs an app acting for a person.');
  const callId = newId('call');
  return inSpan('mcp tools/call', { attributes: { 'toolport.call.id': callId } }, (span) => {
    const run = new CallRun(ctx.svc, actor, callId, span);
    return runCall(run, input, options).then(
      (result) => {
        if (!run.sent) showRefusal(run, input, result);
        return result;
      },
      (err: unknown) => {
        ctx.svc.log.error('tool call failed', { err, callId });
        throw err;
      },
    );
  });
}

/** A call answered without reaching its add-on, on the add-on's live stream (its developer's calls only). */
function showRefusal(run: CallRun, input: CallToolInput, result: ToolResult) {
  const logged = run.logged;
  // A limited call is not logged; an unknown name with no add-on in it has no stream.
  if (!logged?.addonId) return;
  publishLiveRefusal(run.svc, {
    addonId: logged.addonId,
    userId: run.actor.userId,
    callId: run.id,
    tool: logged.toolName,
    arguments: input.arguments,
    outcome: logged.outcome,
    sentence: result.content.map((b) => (b.type === 'text' ? String(b.text) : '')).join(' ').trim(),
    latencyMs: performance.now() - run.started,
  });
}

type AppActor = Extract<Ctx['actor'], { kind: 'app' }>;
type Logged = Partial<CallRecord> & { outcome: CallOutcomeName; addonId: string; toolName: string; argsDigest: string };

/** A call still at its add-on after this long is announced to the person's dashboards (Running now, its own page). */
const SHOWN_AFTER_MS = 1_000;

/** One call on its way: what its log row, metric and span need, whichever step ends it. */
class CallRun {
  readonly started = performance.now();
  /** Epoch ms by which the app is answered, whatever happens (config.callBudgetSeconds). */
  readonly budgetEnd: number;
  private running: ReturnType<typeof setTimeout> | undefined;
  /** The person may be watching it (shown running, or waiting for them): its ending is announced too. */
  shown = false;
  /** What its log row said last (a task that never reached its add-on ends with the same). */
  logged: Logged | undefined;
  /** Handed to its add-on: the delivery's own line goes on the live stream, not a refusal's. */
  sent = false;
  constructor(
    readonly svc: Services,
    readonly actor: AppActor,
    readonly id: string,
    readonly span: Span,
  ) {
    this.budgetEnd = svc.clock.now().getTime() + svc.config.callBudgetSeconds * 1000;
  }

  /**
   * The call is at its add-on: its row says so from now, in every process, and outlives this one
   * (the sweep ends it as lost). Written behind the call like its ending, which replaces it in the
   * same batch when the add-on answers within it: most calls still cost one row.
   */
  atAddon(rec: Omit<Logged, 'outcome'>) {
    const { svc, actor } = this;
    this.sent = true;
    recordCall(svc, { id: this.id, userId: actor.userId, grantId: actor.grantId, appName: actor.appName, ...rec, outcome: 'running', latencyMs: performance.now() - this.started });
    this.running = setTimeout(() => {
      this.shown = true;
      announceCallChange(svc, actor.userId, this.id);
    }, SHOWN_AFTER_MS);
    this.running.unref();
  }

  /** Back from the add-on; a call that throws from here on leaves a running row to the sweep (endLostCalls). */
  leftAddon() {
    clearTimeout(this.running);
  }

  log(rec: Logged) {
    const { svc, actor, span } = this;
    this.leftAddon();
    this.logged = rec;
    const latencyMs = performance.now() - this.started;
    // An unknown tool's name is the app's input: the span keeps only that it was unknown.
    if (rec.outcome !== 'unknown_tool') span.setAttributes({ 'toolport.addon.id': rec.addonId, 'toolport.tool.name': rec.toolName });
    span.setAttribute('toolport.outcome', rec.outcome);
    if (rec.outcome === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: rec.detail ?? 'failed' });
    // An unknown tool's name is the app's input: never a metric label (unbounded cardinality).
    svc.metrics.toolCall(rec.outcome === 'unknown_tool' ? 'unknown' : rec.addonId, rec.outcome, latencyMs / 1000);
    recordCall(svc, { id: this.id, userId: actor.userId, grantId: actor.grantId, appName: actor.appName, ...rec, latencyMs });
    if (this.shown) announceCallChange(svc, actor.userId, this.id);
  }
}

/** A call past its checks: what its delivery needs. */
interface Checked {
  tool: EnabledTool;
  argumentsText: string;
  /** Where the log row points: add-on, tool, digest of the arguments. */
  where: { addonId: string; toolName: string; argsDigest: string };
  subject: string;
  /** The add-on slot taken with the rate check (null: the add-on was busy); undefined: none taken yet. */
  slot: (() => Promise<void>) | null | undefined;
  /** The tool's connected accounts as the check read them; dropped once the call waits for the person. */
  accountRows?: Map<string, AccountRow>;
  /** The app took a task for a tool that may outlast one request (calls/tasks.ts). */
  asTask: boolean;
  /** Its task, when the app has it before the person is asked; `following` stops the call when the task is cancelled. */
  task?: TaskView;
  following?: { signal: CallCancel; done: () => void };
  /** Handed to deliverAsTask, which ends the task from then on. */
  sent?: boolean;
  /** The app's session as this add-on sees it (`call.session`). */
  session?: string;
}

async function runCall(run: CallRun, input: CallToolInput, options: CallToolOptions): Promise<ToolResult> {
  const { svc, actor } = run;
  // This app's tools: the person's enabled ones its grant lets it use; any other is unknown here.
  const tools = options.tools ?? (await svc.tools.forApp(actor));
  const tool = tools.byName.get(input.name);
  const checked = tool ? checkArguments(tool.inputSchema, input.arguments ?? {}) : undefined;
  // The common call (not destructive) is counted and takes its add-on's slot in one Redis round trip;
  // any other takes its slot after its approval.
  const straight = tool && checked?.ok && !tool.webhookDisabled && !tool.destructive ? addonSlot(svc, tool.addonId) : undefined;
  const admitted = await admit(run, straight);
  if (admitted.limited) {
    run.span.setAttribute('toolport.outcome', 'rate_limited');
    return admitted.limited;
  }

  if (!tool || !checked) {
    // Not this app's tool: say why when it is the person's (switched off, not given to this app...).
    const why = await whyNotCallable(svc, actor, input.name);
    run.log({ outcome: why.outcome, addonId: why.addonId, toolName: why.toolName, argsDigest: '' });
    return text(why.sentence, true);
  }

  if (!checked.ok) {
    run.log({ outcome: 'invalid_arguments', addonId: tool.addonId, toolName: tool.name, argsDigest: '', detail: checked.problems.join(' ') });
    return text(checked.problems.join('\n'), true);
  }
  const argumentsText = JSON.stringify(checked.value);
  const where = { addonId: tool.addonId, toolName: tool.name, argsDigest: svc.secrets.argsDigest(argumentsText) };

  if (tool.webhookDisabled) {
    run.log({ ...where, outcome: 'disabled' });
    return text(`The add-on "${tool.addonName}" is unavailable right now; its developer has to fix it. Try again later.`, true);
  }

  // A tool that may outlast one request runs only as a task: without one, nothing is asked or sent.
  const asTask = isLongTool(tool) && !!input.watcher?.task && !!actor.grantId;
  if (isLongTool(tool) && !asTask) {
    if (admitted.release) void admitted.release().catch(() => {});
    run.log({ ...where, outcome: 'needs_task' });
    return text(needsTaskSentence(tool), true);
  }
  // A required setting unset: nothing is delivered, and the person is told where to set it.
  if (tool.settings?.missing.length) return needsSetup(run, tool, where, admitted.release);
  const call: Checked = {
    tool,
    argumentsText,
    where,
    subject: svc.secrets.pseudonym(tool.addonId, actor.userId),
    slot: admitted.release,
    asTask,
    ...(input.session ? { session: svc.secrets.sessionPseudonym(tool.addonId, actor.grantId, input.session) } : {}),
  };
  // An account the tool needs is not connected (or failed): nothing is delivered, nobody is asked.
  if (tool.accounts) {
    let found: Awaited<ReturnType<typeof checkToolAccounts>>;
    try {
      found = await checkToolAccounts(svc, actor.userId, tool.addonId, tool.accounts);
    } catch (err) {
      if (call.slot) void call.slot().catch(() => {});
      throw err;
    }
    if ('missing' in found) return needsAccount(run, input, call, found.missing);
    call.accountRows = found.rows;
  }
  // The person's rule for this tool (this app's, else every app's): cached, so a hit waits for nothing.
  let rule: Rule | undefined;
  if (!options.asTestPerson) {
    const cached = rulesOf(svc, actor.userId);
    rule = ruleFor(cached instanceof Map ? cached : await cached, actor.grantId, tool.mcpName, () => svc.clock.now());
  }
  if (rule?.mode === 'never') return blocked(run, call, rule);
  const asksAll = options.asTestPerson ? false : grantAsksEveryTool(svc, actor.grantId);
  const mustAsk = tool.alwaysAsk || rule?.mode === 'ask_every_time' || (typeof asksAll === 'boolean' ? asksAll : await asksAll);
  if (!tool.destructive && !mustAsk) return deliver(run, input, call);
  // An allow rule stands in for the person's decision, except where the add-on says every call asks,
  // and, for a destructive tool, only if the person set it through the warning (a release may have
  // made the tool destructive since).
  if (rule?.mode === 'allow' && !mustAsk && (rule.acknowledged || !tool.destructive)) return deliver(run, input, call, { status: 'allowed', approvalId: rule.id, decidedBy: 'rule', decidedAt: rule.setAt });
  // A call that went straight to its add-on's slot gives it back while the person decides.
  if (call.slot) void call.slot().catch(() => {});
  call.slot = undefined;
  // After the wait, the accounts are read again (disconnected, renewed or failed meanwhile).
  call.accountRows = undefined;

  // The same app, tool and arguments while that call waits, or just after the person decided it: the
  // app's retry or the model calling again is that call, not a second approval or delivery. A task's
  // app polls its task instead.
  if (actor.grantId && !options.asTestPerson && !asTask) {
    const same = await findSameCall(svc, { userId: actor.userId, grantId: actor.grantId, addonId: tool.addonId, toolName: tool.name, argumentsText });
    const answer = same && (await repeated(run, input, call, same));
    if (answer) return answer;
  }

  // A lease, so a process that dies holding a place frees it on expiry.
  const place = await svc.limiter.lease(`approvals:${actor.userId}`, svc.config.limits.pendingApprovalsPerPerson, APPROVAL_PLACE_MS);
  if (!place) {
    run.log({ ...where, outcome: 'limited', detail: 'pending_approvals' });
    return text(
      `Too many calls are already waiting for this person's approval (at most ${svc.config.limits.pendingApprovalsPerPerson}). Wait until they are decided, then try again.`,
      true,
    );
  }
  const approvals = options.approvals ?? svc.approvals;
  if (!approvals) {
    void place.release().catch(() => {});
    run.log({ ...where, outcome: 'denied', decision: 'unavailable' });
    return text('This tool needs the person’s approval, and approvals are not available right now, so the call did not run.', true);
  }
  run.shown = true;
  // A task's app has its task before the person is asked, and polls it meanwhile (tasks.ts shows
  // the approval's page); the task's cancellation, not the app's request, governs from here.
  let asked = input;
  if (asTask) {
    let task: TaskView | null;
    try {
      task = await createTask(svc, { ...newTaskOf(run, call), asksFirst: true });
      if (task) call.following = await taskSignal(svc, task.taskId);
    } catch (err) {
      void place.release().catch(() => {});
      throw err;
    }
    if (!task) {
      void place.release().catch(() => {});
      run.log({ ...where, outcome: 'limited', detail: 'open_tasks' });
      return text(openTasksSentence(svc), true);
    }
    call.task = task;
    tell(svc, input.watcher!, { kind: 'task', task });
    const callId = run.id;
    asked = { ...input, signal: call.following!.signal, watcher: { on: (e) => e.kind === 'held' && void noteAsking(svc, callId).catch(() => {}) } };
  }
  // Returned, not awaited, and one callback rather than async functions: while the person decides
  // (up to 30 s) no frame of the call stays alive, only its records and this one reaction.
  const waiting = tracer().startSpan('approval wait', { attributes: { 'toolport.call.id': run.id, 'toolport.addon.id': tool.addonId, 'toolport.tool.name': tool.name } });
  let decided: Promise<ApprovalDecision>;
  try {
    decided = context.with(trace.setSpan(context.active(), waiting), () =>
      approvals.request({
        callId: run.id,
        userId: actor.userId,
        grantId: actor.grantId,
        clientId: actor.clientId,
        appName: actor.appName,
        tool,
        argumentsText,
        subject: call.subject,
        ...(call.session ? { session: call.session } : {}),
        signal: asked.signal,
        watcher: asked.watcher,
        ...(mustAsk ? { mustAsk } : {}),
        ...(asTask ? { durable: true } : {}),
      }),
    );
  } catch (err) {
    decided = Promise.reject(err);
  }
  const failedTask = (err: unknown): Promise<never> => endTaskUnsent(run, call, undefined, undefined).then(() => Promise.reject(err));
  return decided.then(
    (decision) => {
      waiting.setAttribute('toolport.approval.decision', decision.status);
      waiting.end();
      void place.release().catch(() => {});
      if (decision.finishedElsewhere) {
        call.following?.done();
        // A task's app polls its task, which whoever finishes the call ends.
        if (call.task) return text('Another Toolport server finishes this call; its task says how it ends.', true);
        return answerOfTakenOver(run, input, decision);
      }
      const answered = afterApproval(run, asked, call, decision);
      if (call.task) return Promise.resolve(answered).then((result) => endTaskUnsent(run, call, decision, result), failedTask);
      // Kept on the approval, for a repeat of this call (findSameCall) and a 2026-07-28 retry; a
      // task's call has its own record, which its app polls.
      const approvalId = decision.approvalId;
      if (approvalId && !asTask) {
        void Promise.resolve(answered)
          .then((result) => keepHeldResult(svc, approvalId, result))
          .catch((err: unknown) => svc.log.warn('cannot keep a held call’s answer', { err, approvalId }));
      }
      return answered;
    },
    (err: unknown) => {
      endFailed(waiting, err);
      void place.release().catch(() => {});
      if (call.task) return failedTask(err);
      throw err;
    },
  );
}

/**
 * This call repeats one the person is deciding, or decided moments ago: that call's answer, said to
 * be so. Undefined when that call ended without the person deciding (expired, cancelled, revoked):
 * this one asks them.
 */
async function repeated(run: CallRun, input: CallToolInput, call: Checked, same: NonNullable<Awaited<ReturnType<typeof findSameCall>>>): Promise<ToolResult | undefined> {
  const { svc, actor } = run;
  if (call.slot) void call.slot().catch(() => {});
  call.slot = undefined;
  const answer = same.result
    ? ({ kind: 'result', result: same.result, status: same.status } as const)
    : await awaitHeldResult(svc, { userId: actor.userId, grantId: actor.grantId! }, same.approvalId, run.budgetEnd, input.signal);
  if (answer.kind === 'result' && !PERSON_DECIDED.has(answer.status)) return undefined;
  // An allowed call that failed is tried again, the person asked again (findSameCall's rule for a kept one).
  if (answer.kind === 'result' && answer.status === 'allowed' && answer.result.isError) return undefined;
  if (answer.kind === 'unknown' || (answer.kind === 'lost' && answer.status !== 'allowed')) return undefined;
  const seconds = Math.max(1, Math.round((svc.clock.now().getTime() - same.createdAt.getTime()) / 1000));
  run.log({ ...call.where, outcome: 'repeated', detail: `the call of approval ${same.approvalId}` });
  switch (answer.kind) {
    case 'result': {
      const note = `This app made this exact call ${seconds} seconds ago; Toolport did not run it or ask the person again. That call's answer follows.`;
      return { ...answer.result, content: [{ type: 'text', text: note }, ...answer.result.content] };
    }
    case 'waiting':
      return text(`This app made this exact call ${seconds} seconds ago and it is still waiting for the person's approval; Toolport did not ask again. Call again in a while for its answer.`, true);
    default:
      return text('This app made this exact call moments ago, and the server holding it stopped before it ended, so it may or may not have run: check before trying again.', true);
  }
}
const PERSON_DECIDED = new Set(['allowed', 'denied', 'dismissed']);

const needsTaskSentence = (tool: EnabledTool) =>
  `The tool "${tool.name}" of "${tool.addonName}" can take up to ${describeSeconds(tool.timeoutSeconds!)}, longer than one request lasts, so it runs only for apps that support MCP tasks, and this app did not ask for one. Nothing was sent. Tell the person to use it from an app that supports MCP tasks.`;

/** A required setting of the install is unset: nothing is delivered, before anyone is asked. */
function needsSetup(run: CallRun, tool: EnabledTool, where: Checked['where'], slot: Checked['slot']): ToolResult {
  if (slot) void slot().catch(() => {});
  run.log({ ...where, outcome: 'needs_setup' });
  return text(needsSetupSentence(run.svc, tool.addonId, tool.addonName, tool.settings!.missing), true);
}

/** Before anyone is asked. The app may offer the connect link by URL elicitation; its answer connects nothing. */
async function needsAccount(run: CallRun, input: CallToolInput, call: Checked, missing: MissingAccount): Promise<ToolResult> {
  const { svc, actor } = run;
  const { tool } = call;
  if (call.slot) void call.slot().catch(() => {});
  call.slot = undefined;
  // Without the developer's OAuth client nobody can connect one: a link would lead to a Connect
  // button that is switched off, so the answer says who has to act instead, and offers nothing.
  if (!(await providerReady(svc, tool.addonId, missing.account.provider))) {
    run.log({ ...call.where, outcome: 'needs_setup', detail: `account ${missing.account.provider}: not set up by its developer` });
    return text(notSetUpSentence(tool.addonName, missing), true);
  }
  run.log({ ...call.where, outcome: 'needs_setup', detail: `account ${missing.account.provider}: ${missing.failure === null ? 'not connected' : 'failed'}` });
  const watcher = input.watcher;
  if (watcher?.elicitation) {
    try {
      if (watcher.elicitation === 'declared' || (await grantDeclaresUrlElicitation(svc, actor.grantId))) {
        tell(svc, watcher, {
          kind: 'offer',
          link: {
            kind: 'account',
            elicitationId: newToken('con_', 16),
            url: connectLink(svc, tool.addonId, missing.account.provider),
            message: connectElicitationMessage(tool.addonName, missing),
          },
        });
      }
    } catch (err) {
      svc.log.warn('cannot offer the connect link to the app', { err, callId: run.id });
    }
  }
  return text(needsAccountSentence(svc, tool.addonId, tool.addonName, missing), true);
}

/** The person's rule says never: nothing is delivered, and the model is told not to try again. */
function blocked(run: CallRun, call: Checked, rule: Rule): ToolResult {
  if (call.slot) void call.slot().catch(() => {});
  run.log({ ...call.where, outcome: 'blocked', decision: 'blocked', decidedBy: 'rule' });
  return text(`The person blocked this tool${rule.forApp ? ' for this app' : ''} in Toolport, so the call did not run. Do not retry it.`, true);
}



/** DESIGN.md "Webhook protocol": the digest is of the exact argument text shown, which the add-on receives. */
function receiptOf(svc: Services, decision: ApprovalDecision, argumentsText: string): ApprovalReceipt {
  return {
    id: decision.approvalId ?? '',
    decidedAt: (decision.decidedAt ?? svc.clock.now()).toISOString(),
    channel: decision.decidedBy ?? 'dashboard',
    argumentsHash: argumentsHash(argumentsText),
  };
}

function afterApproval(run: CallRun, input: CallToolInput, call: Checked, decision: ApprovalDecision): ToolResult | Promise<ToolResult> {
  if (decision.status === 'allowed' || decision.status === 'skipped') return deliver(run, input, call, decision);
  run.log({ ...call.where, outcome: decision.status, decision: decision.status, decidedBy: decision.decidedBy });
  return text(approvalSentences(run.svc.config.approvalTimeoutSeconds, decision)[decision.status], true);
}

/**
 * A task whose call never reached its add-on (the person did not allow it, or a check refused it
 * after) ends with what its app would have heard; one that did is ended by its delivery.
 */
async function endTaskUnsent(run: CallRun, call: Checked, decision: ApprovalDecision | undefined, result: ToolResult | undefined): Promise<ToolResult> {
  call.following?.done();
  const said = result ?? { content: [{ type: 'text', text: 'Something went wrong on Toolport’s side while asking the person, so the call did not run. Try again in a moment.' }], isError: true };
  if (call.sent) return said;
  const logged = run.logged;
  // The person's no (or the app's) is `refused`; a call they allowed that a later check stopped is not.
  const refused = result && decision && decision.status !== 'allowed' && decision.status !== 'skipped';
  await settle(run.svc, run.id, {
    ...(result ? { result } : { result: { error: { code: -32603, message: String(said.content[0]!.text) } }, status: 'failed' as const }),
    reason: refused ? 'refused' : 'failed',
    outcome: logged?.outcome ?? 'failed',
    ...(logged?.detail ? { detail: logged.detail } : {}),
    ...(decision ? { decision: decision.status, decidedBy: decision.decidedBy } : {}),
  });
  return said;
}

/** A task's row, as its call makes it. */
const newTaskOf = (run: CallRun, call: Checked) => ({
  callId: run.id,
  userId: run.actor.userId,
  grantId: run.actor.grantId,
  appName: run.actor.appName,
  addonId: call.tool.addonId,
  addonName: call.tool.addonName,
  toolName: call.tool.name,
  argsDigest: call.where.argsDigest,
  timeoutSeconds: call.tool.timeoutSeconds!,
  outputSchema: call.tool.outputSchema ?? null,
});

const openTasksSentence = (svc: Services) =>
  `This person already has ${svc.config.limits.openTasksPerPerson} calls running as tasks, the most Toolport runs at once for one person, so this one did not start. Wait until some finish (or cancel them), then try again.`;

/** Another process took this call over after the person decided (this one looked gone): that process's answer. */
async function answerOfTakenOver(run: CallRun, input: CallToolInput, decision: ApprovalDecision): Promise<ToolResult> {
  const { svc, actor } = run;
  const answer = await awaitHeldResult(svc, { userId: actor.userId, grantId: actor.grantId }, decision.approvalId!, run.budgetEnd, input.signal);
  if (answer.kind === 'result') return answer.result;
  // Not kept as the call's answer (keepHeldResult skips it): the process finishing the call keeps its own.
  return standIn(text('Another Toolport server took this call over after the person decided, and its answer did not come within this request. Call again in a while for it.', true));
}

/** Decided calls taken over per sweep. */
const TAKE_OVER_BATCH = 20;

/**
 * Finishes the calls decided after the process holding them was gone (it crashed, or stopped
 * before the person answered): delivered if the person allowed, else answered with the decision;
 * the answer is kept for the app's retry (approvals/held.ts). Each is taken by one conditional
 * update, so neither its holder nor another process finishes it too. `runner`: this process.
 */
export async function finishOrphans(svc: Services, runner: string): Promise<void> {
  for (const id of await orphansDecided(svc, TAKE_OVER_BATCH, runner)) {
    const row = await claimDecided(svc, id, runner, { orphan: true });
    if (!row) continue;
    // Not awaited: a delivery may take a call's time, and the sweep goes on meanwhile.
    void inSpan('mcp tools/call taken over', { attributes: { 'toolport.call.id': row.callId } }, (span) => finishTakenOver(svc, row, span))
      .then((result) => keepHeldResult(svc, row.id, result))
      .catch((err: unknown) => svc.log.error('cannot finish a call taken over from a stopped server', { err, approvalId: row.id, callId: row.callId }));
  }
}

async function finishTakenOver(svc: Services, row: ApprovalRow, span: Span): Promise<ToolResult> {
  const [gate] = row.grantId
    ? await svc.db
        .select({ clientId: oauthGrants.clientId, revokedAt: oauthGrants.revokedAt, aiApps: users.aiApps })
        .from(oauthGrants)
        .innerJoin(users, eq(users.id, oauthGrants.userId))
        .where(and(eq(oauthGrants.id, row.grantId), eq(oauthGrants.userId, row.userId)))
    : [];
  const actor: AppActor = { kind: 'app', userId: row.userId, grantId: row.grantId ?? '', clientId: gate?.clientId ?? '', appName: row.appName };
  const run = new CallRun(svc, actor, row.callId, span);
  run.shown = true;
  let decision: ApprovalDecision = {
    status: row.status as ApprovalDecision['status'],
    approvalId: row.id,
    ...(row.decidedBy ? { decidedBy: row.decidedBy } : {}),
    ...(row.decidedAt ? { decidedAt: row.decidedAt } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
  };
  // Revoked (or AI apps turned off) since the decision: as for a call still held, it does not run.
  if (!gate || gate.revokedAt || !gate.aiApps) decision = { status: 'revoked', approvalId: row.id, decidedBy: 'revocation' };
  const where = { addonId: row.addonId, toolName: row.toolName, argsDigest: svc.secrets.argsDigest(row.arguments) };
  const tool = decision.status === 'allowed' ? [...(await svc.tools.forApp(actor)).byName.values()].find((t) => t.addonId === row.addonId && t.name === row.toolName) : undefined;
  // A task's app has had its task since before the person was asked: the task ends as the call does.
  const task = await taskViewOfCall(svc, row.callId);
  const unsendable = decision.status === 'allowed' && (!tool || tool.webhookDisabled || !!tool.settings?.missing.length || isLongTool(tool) !== !!task);
  const call: Checked = {
    tool: tool!,
    argumentsText: row.arguments,
    where,
    subject: tool ? svc.secrets.pseudonym(tool.addonId, row.userId) : '',
    slot: undefined,
    asTask: !!task,
    ...(task ? { task } : {}),
    ...(row.session ? { session: row.session } : {}),
  };
  let result: ToolResult;
  if (unsendable) {
    // A tool gone, disabled or changed since is not sent.
    run.log({ ...where, outcome: 'failed', decision: 'allowed', decidedBy: decision.decidedBy, detail: 'taken over: the tool cannot run now' });
    result = text('The Toolport server holding this call stopped after the person allowed it, and the tool or its settings changed since, so it did not run. Call again if it is still needed.', true);
  } else result = await afterApproval(run, { name: tool?.mcpName ?? row.toolName, arguments: undefined }, call, decision);
  return task ? endTaskUnsent(run, call, decision, result) : result;
}

/** Takes the add-on's slot (unless the rate check did), dispatches, and shapes and logs the outcome. */
async function deliver(run: CallRun, input: CallToolInput, call: Checked, decision?: ApprovalDecision): Promise<ToolResult> {
  const { svc, actor } = run;
  const { tool, where } = call;
  const decided = { decision: decision?.status, decidedBy: decision?.decidedBy };
  if (input.signal?.aborted) {
    void call.slot?.().catch(() => {});
    run.log({ ...where, ...decided, outcome: 'cancelled' });
    return text('The call was cancelled, so it did not run.', true);
  }

  // Fresh tokens of the tool's accounts, refreshed here if they expire soon (only tools that name accounts).
  let accounts: string | undefined;
  if (tool.accounts) {
    const toolAccounts = tool.accounts;
    const got = await inSpan('account tokens', { attributes: { 'toolport.call.id': run.id, 'toolport.addon.id': tool.addonId } }, () =>
      accountTokensFor(svc, {
        userId: actor.userId,
        addonId: tool.addonId,
        addonName: tool.addonName,
        accounts: toolAccounts,
        rows: call.accountRows,
        deadline: run.budgetEnd - MIN_DELIVERY_MS,
      }),
    ).catch((err: unknown) => {
      void call.slot?.().catch(() => {});
      throw err;
    });
    if (got.kind === 'missing') return needsAccount(run, input, call, got.missing);
    if (got.kind === 'unavailable') {
      void call.slot?.().catch(() => {});
      run.log({ ...where, ...decided, outcome: 'failed', detail: `account ${got.account.provider}: ${got.reason}` });
      return text(got.message, true);
    }
    accounts = got.sealed;
  }

  // An exclusive tool's call waits here, holding nothing else, for the calls before it to end.
  let endMyTurn: (() => Promise<void>) | undefined;
  if (tool.exclusive) {
    const turn = await myTurn(run, input, call, decided);
    if ('content' in turn) return turn;
    endMyTurn = turn.end;
  }
  try {
    if (call.asTask && (call.task || input.watcher?.task)) return await deliverAsTask(run, input.watcher, call, decision, accounts);
    return await deliverNow(run, input, call, decision, accounts);
  } finally {
    await endMyTurn?.();
  }
}

/** At most this many calls wait in one person's line for an add-on's exclusive tools. */
const EXCLUSIVE_LINE_MAX = 32;

/**
 * The call's turn among the person's calls of the add-on's exclusive tools, waited for within the
 * call's budget; a task's call keeps it until its add-on answers (tasks.ts settle ends it).
 */
async function myTurn(run: CallRun, input: CallToolInput, call: Checked, decided: Partial<Logged>): Promise<ToolResult | { end: () => Promise<void> }> {
  const { svc, actor } = run;
  const { tool, where } = call;
  const key = exclusiveLine(actor.userId, tool.addonId);
  // The add-on's slot is not held while waiting: it is taken again when the turn comes.
  if (call.slot) void call.slot().catch(() => {});
  call.slot = undefined;
  const holdSeconds = call.asTask ? tool.timeoutSeconds! : (tool.timeoutSeconds ?? CALL_DEADLINE_MS / 1000);
  const waited = await waitTurn(svc.limiter, key, run.id, {
    waitMs: run.budgetEnd - MIN_DELIVERY_MS - svc.clock.now().getTime(),
    holdMs: holdSeconds * 1000 + 5_000,
    max: EXCLUSIVE_LINE_MAX,
    signal: input.signal,
  });
  if (waited.kind === 'turn') {
    return {
      end: async () => {
        try {
          // An accepted task's call ends its turn when it settles.
          if (call.asTask && (await taskOfCall(svc, run.id))?.status === 'working') return;
          await endTurn(svc.limiter, key, run.id);
        } catch (err) {
          // The answer stands; the turn ends when its hold runs out.
          svc.log.warn('cannot end an exclusive turn', { err, callId: run.id });
        }
      },
    };
  }
  switch (waited.kind) {
    case 'cancelled':
      run.log({ ...where, ...decided, outcome: 'cancelled' });
      return text('The call was cancelled while it waited for this add-on’s other calls to finish, so it did not run.', true);
    case 'full':
      run.log({ ...where, ...decided, outcome: 'limited', detail: 'exclusive_line' });
      return text(
        `The tool "${tool.name}" of "${tool.addonName}" runs one call at a time, and ${EXCLUSIVE_LINE_MAX} of this person's calls are already waiting for it, so this one did not run. Try again when they have finished.`,
        true,
      );
    default:
      run.log({ ...where, ...decided, outcome: 'timed_out', detail: 'exclusive' });
      return text(
        `The tool "${tool.name}" of "${tool.addonName}" runs one call at a time, and this person's earlier calls kept it busy for all of this call's time (a call has ${svc.config.callBudgetSeconds} seconds in all), so it did not run. Try again when they have finished.`,
        true,
      );
  }
}

/** Sends the call within the request: the add-on's answer is the app's. */
async function deliverNow(run: CallRun, input: CallToolInput, call: Checked, decision: ApprovalDecision | undefined, accounts: string | undefined): Promise<ToolResult> {
  const { svc } = run;
  const { tool, where } = call;
  const decided = { decision: decision?.status, decidedBy: decision?.decidedBy };

  // Delivery gets the tool's time or what is left of the call's budget, whichever ends first.
  const now = svc.clock.now().getTime();
  const deadline = Math.min(now + (tool.timeoutSeconds ?? CALL_DEADLINE_MS / 1000) * 1000, run.budgetEnd);
  if (deadline - now < MIN_DELIVERY_MS) {
    void call.slot?.().catch(() => {});
    run.log({ ...where, ...decided, outcome: 'timed_out', detail: 'budget' });
    return text(`The call ran out of time before it could be sent to the add-on (a call has ${svc.config.callBudgetSeconds} seconds in all), so it did not run.`, true);
  }
  const slot = addonSlot(svc, tool.addonId);
  const release = call.slot !== undefined ? call.slot : await svc.limiter.acquire(slot.key, slot.max, slot.ttlMs);
  if (!release) {
    run.log({ ...where, ...decided, outcome: 'limited', detail: 'addon_concurrency' });
    return text(`The add-on "${tool.addonName}" is busy with too many calls right now. Try again in a few seconds.`, true);
  }
  let outcome: CallOutcome;
  const sentAt = svc.clock.now().getTime();
  run.atAddon({ ...where, ...decided });
  try {
    // Enqueue to result; the BullMQ dispatcher puts this span's context in the job for the worker.
    outcome = await inSpan('dispatch', { attributes: { 'toolport.call.id': run.id, 'toolport.addon.id': tool.addonId } }, async (dispatching) => {
      const out = await svc.dispatcher.dispatch({ ...jobOf(run, call, decision, accounts), deadline }, input.signal);
      dispatching.setAttribute('toolport.dispatch.outcome', out.kind);
      if (out.kind === 'failure') {
        dispatching.setAttribute('toolport.error_class', out.errorClass);
        dispatching.setStatus({ code: SpanStatusCode.ERROR, message: out.errorClass });
      }
      return out;
    });
  } catch (err) {
    // Its running row is written already: it ends here, not as lost by the sweep.
    run.log({ ...where, ...decided, outcome: 'failed', detail: 'internal' });
    throw err;
  } finally {
    run.leftAddon();
    // The slot is given back without holding the answer (a failed release expires with its key).
    void release().catch(() => {});
  }
  const shaped = shapeOutcome(tool, outcome, Math.max(1, Math.round((deadline - sentAt) / 1000)));
  run.log({ ...where, ...decided, outcome: shaped.outcome, ...(shaped.detail ? { detail: shaped.detail } : {}), ...(shaped.sent !== undefined ? { sent: shaped.sent } : {}) });
  return shaped.result;
}

/** The job of a call, all but its deadline. */
function jobOf(run: CallRun, call: Checked, decision: ApprovalDecision | undefined, accounts: string | undefined): Omit<CallJob, 'deadline'> {
  const { tool } = call;
  return {
    callId: run.id,
    type: 'tool.call',
    addonId: tool.addonId,
    tool: tool.name,
    arguments: call.argumentsText,
    subject: call.subject,
    app: { name: run.actor.appName, clientId: run.actor.clientId },
    ...(run.actor.grantId ? { owner: { userId: run.actor.userId, grantId: run.actor.grantId } } : {}),
    ...(call.session ? { session: call.session } : {}),
    ...(decision?.status === 'allowed' ? { approval: receiptOf(run.svc, decision, call.argumentsText) } : {}),
    ...(tool.settings?.sealed ? { settings: tool.settings.sealed } : {}),
    ...(accounts ? { accounts } : {}),
  };
}


/**
 * The app has its task once the row exists; the add-on then has one request's time to answer, or
 * to accept the call and answer later at its answer URL. From here the task's own cancellation
 * governs, not the app's request.
 */
async function deliverAsTask(run: CallRun, watcher: CallWatcher | undefined, call: Checked, decision: ApprovalDecision | undefined, accounts: string | undefined): Promise<ToolResult> {
  const { svc } = run;
  const { tool, where } = call;
  const decided = { decision: decision?.status, decidedBy: decision?.decidedBy };
  call.sent = true;
  run.sent = true;
  let task: TaskView | null = call.task ?? null;
  try {
    // Begun before the person was asked: followed first (a cancel from now on is heard), then the
    // add-on's time starts now; a task that ended meanwhile (cancelled, lapsed) is not sent.
    if (task) {
      call.following ??= await taskSignal(svc, task.taskId);
      if (!(await noteSending(svc, run.id, tool.timeoutSeconds!))) {
        void call.slot?.().catch(() => {});
        call.following.done();
        return text('The call’s task ended before it could be sent, so it did not run.', true);
      }
    } else task = await createTask(svc, newTaskOf(run, call));
  } catch (err) {
    void call.slot?.().catch(() => {});
    call.following?.done();
    throw err;
  }
  if (!task) {
    void call.slot?.().catch(() => {});
    run.log({ ...where, ...decided, outcome: 'limited', detail: 'open_tasks' });
    return text(openTasksSentence(svc), true);
  }
  if (!call.task) tell(svc, watcher!, { kind: 'task', task });
  // From here the task's row says how the call ended: its log row is written where it ends
  // (calls/tasks.ts settle), by the worker that hears the add-on, its answer URL, or a cancel.
  let done = () => {};
  try {
    const running = call.following ?? (await taskSignal(svc, task.taskId));
    done = running.done;
    const now = svc.clock.now().getTime();
    const slot = addonSlot(svc, tool.addonId);
    const release = call.slot !== undefined ? call.slot : await svc.limiter.acquire(slot.key, slot.max, slot.ttlMs);
    if (!release) {
      const busy = text(`The add-on "${tool.addonName}" is busy with too many calls right now. Try again in a few seconds.`, true);
      await settle(svc, run.id, { result: busy, reason: 'failed', outcome: 'limited', detail: 'addon_concurrency', ...decided });
      return busy;
    }
    try {
      const outcome = await svc.dispatcher.dispatch(
        {
          ...jobOf(run, call, decision, accounts),
          deadline: now + MAX_REQUEST_TOOL_SECONDS * 1000,
          answerBy: now + tool.timeoutSeconds! * 1000,
          answerUrl: `${svc.config.publicUrl}/api/answers/${encodeURIComponent(run.id)}`,
        },
        running.signal,
      );
      return outcome.kind === 'accepted' ? text('The add-on accepted the call and answers later.') : shapeOutcome(tool, outcome, MAX_REQUEST_TOOL_SECONDS).result;
    } finally {
      void release().catch(() => {});
    }
  } catch (err) {
    // JSON-RPC's internal error, as the tasks extension says a task fails on the server's side.
    const failed = { error: { code: -32603, message: 'Something went wrong on Toolport’s side while sending the call, so it may not have run. Try again in a moment.' } };
    await settle(svc, run.id, { result: failed, status: 'failed', reason: 'failed', outcome: 'failed', detail: 'internal', ...decided }).catch(() => {});
    throw err;
  } finally {
    done();
  }
}
