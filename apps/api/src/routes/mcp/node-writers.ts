import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { CallEvent, CallWatcher, ElicitationLink, Services, ToolResult } from '@toolport/core';
import { PARKED, type AppEnv } from '../../http/env';
import { elicitationComplete, elicitationRequest, jsonRpcAnswer, jsonRpcResult, SSE_HEADERS, sseMessage } from './frames';
import { failedCall } from './tool-call';

/*
 * Answers as the SDK's transport would, without a per-request Server. Once a call waits, its answer
 * is written straight to Node's response, so no request frame, Hono context or middleware stays
 * alive while the person decides (up to 30 s). A JSON answer becomes SSE to offer an elicitation.
 */

/** Whether the call's answer may become an SSE stream carrying an elicitation (its Accept lists text/event-stream). */
interface WriterOptions {
  elicitation?: boolean;
}

/** The approval whose page was offered (its completion is sent before the result); none for a connect link. */
const completes = (link: ElicitationLink) => (link.kind === 'approval' ? link.elicitationId : undefined);

/** How a call's result is put into its answer: as is (2025-11-25 and earlier), or with 2026-07-28's fields (modern.ts). */
export type EncodeResult = (result: ToolResult) => string;
const asIs: EncodeResult = (result) => JSON.stringify(result);

/** False once the app hung up (the call was cancelled with it) or the answer was sent: nobody reads more. */
const answerable = (outgoing: ServerResponse) => !outgoing.destroyed && !outgoing.writableEnded;

/** One reaction on the call serves both endings (Hono's answer, or Node's once held): a held call keeps it up to 30 s. */
export async function answerDirect(
  c: Context<AppEnv>,
  outgoing: ServerResponse,
  id: string | number,
  run: (watcher: CallWatcher) => Promise<ToolResult>,
  encode: EncodeResult = asIs,
  options: WriterOptions = {},
): Promise<Response> {
  const { log } = c.get('svc');
  let parked = false;
  /** Something was offered to the app: the answer is an SSE stream from then on. */
  let elicited = false;
  /** The approval offered, completed before the result. */
  let completion: string | undefined;
  let first!: (result: ToolResult | undefined) => void;
  const answered = new Promise<ToolResult | undefined>((resolve) => (first = resolve));
  // Nothing in this watcher may refer to `c`: that would keep Hono's context alive while the call waits.
  const watcher: CallWatcher = {
    ...(options.elicitation ? { elicitation: 'grant' as const } : {}),
    on(event) {
      if (event.kind === 'held') {
        parked = true;
        first(undefined);
      } else if (event.kind === 'offer') {
        if (!answerable(outgoing) || outgoing.headersSent) return;
        elicited = true;
        completion = completes(event.link);
        parked = true;
        outgoing.writeHead(200, SSE_HEADERS);
        outgoing.write(sseMessage(elicitationRequest(event.link)));
        first(undefined);
      }
    },
  };
  void run(watcher).then(
    (result) => {
      if (elicited) endElicited(outgoing, id, encode(result), completion);
      else if (parked) writeHeldAnswer(outgoing, id, encode(result), log);
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
  return result ? jsonRpcAnswer(c, id, encode(result)) : PARKED;
}

/** The answer of a call that was held, on Node's response (the handler returned long ago). */
function writeHeldAnswer(outgoing: ServerResponse, id: string | number, result: string, log: Services['log']) {
  if (!answerable(outgoing)) return;
  try {
    const body = jsonRpcResult(id, result);
    outgoing.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    outgoing.end(body);
  } catch (err) {
    log.error('cannot write a held call’s answer', { err });
    outgoing.destroy();
  }
}

/** The end of a stream that offered a page: an approval's elicitation is complete, then the result. */
function endElicited(outgoing: ServerResponse, id: string | number, result: string, approvalId: string | undefined) {
  if (!answerable(outgoing)) return;
  if (approvalId) outgoing.write(sseMessage(elicitationComplete(approvalId)));
  outgoing.end(sseMessage(jsonRpcResult(id, result)));
}

const HEADERS_ALONE_MS = 100;

/** One object per call rather than closures: it lives as long as the call, up to 30 s. */
class ProgressStream implements CallWatcher {
  readonly progress = true;
  private step = 0;
  private elicited: string | undefined;
  constructor(
    private readonly outgoing: ServerResponse,
    private readonly progressToken: string | number,
    private readonly id: string | number,
    private readonly encode: EncodeResult,
    /** Offered for an app that declared URL elicitation at initialize (the approval's page, a connect link). */
    readonly elicitation: 'grant' | undefined,
  ) {}

  on(event: CallEvent): void {
    if (!answerable(this.outgoing)) return;
    if (event.kind === 'progress') {
      this.step += 1;
      const notification = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: this.progressToken, progress: this.step, message: event.message } };
      this.outgoing.write(sseMessage(JSON.stringify(notification)));
    } else if (event.kind === 'offer') {
      this.elicited = completes(event.link) ?? this.elicited;
      this.outgoing.write(sseMessage(elicitationRequest(event.link)));
    }
  }

  end(result: ToolResult) {
    if (!answerable(this.outgoing)) return;
    if (this.elicited) this.outgoing.write(sseMessage(elicitationComplete(this.elicited)));
    this.outgoing.end(sseMessage(jsonRpcResult(this.id, this.encode(result))));
  }
}

/** Returns at once, so nothing of the request's frames or Hono's context stays alive while the call waits. */
export function answerStreamed(
  c: Context<AppEnv>,
  outgoing: ServerResponse,
  id: string | number,
  progressToken: string | number,
  run: (watcher: CallWatcher) => Promise<ToolResult>,
  encode: EncodeResult = asIs,
  options: WriterOptions = {},
): Response {
  const { log } = c.get('svc');
  outgoing.writeHead(200, SSE_HEADERS);
  // The headers leave with the first event or the answer (one write for a quick call, not two), or
  // alone once the call has taken HEADERS_ALONE_MS, so the app knows its stream is open.
  setTimeout(() => {
    if (!outgoing.headersSent && answerable(outgoing)) outgoing.flushHeaders();
  }, HEADERS_ALONE_MS);
  const stream = new ProgressStream(outgoing, progressToken, id, encode, options.elicitation ? 'grant' : undefined);
  run(stream)
    .then((result) => stream.end(result))
    .catch((err: unknown) => {
      log.error('cannot write a streamed call’s answer', { err });
      outgoing.destroy();
    });
  return PARKED;
}
