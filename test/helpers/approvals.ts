// Approvals as the call path asks for them, and the dashboard's view of them: listings and the event stream.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ApprovalDecision, ApprovalRequest } from '../../packages/core/src/calls/types';
import type { EnabledTool } from '../../packages/core/src/calls/enabled-tools';
import type { Approvals } from '@toolport/core';
import type { Client } from './http';
import type { Toolport } from './target';

/** The service's approvals, which an API process always has. */
export function approvalsOf(tp: Toolport): Approvals {
  assert.ok(tp.svc.approvals, 'svc.approvals is wired');
  return tp.svc.approvals;
}

export function destructiveTool(over: Partial<EnabledTool> = {}): EnabledTool {
  const addonId = over.addonId ?? 'notes';
  const name = over.name ?? 'delete_note';
  return {
    mcpName: `${addonId}__${name}`,
    addonId,
    addonName: 'Notes',
    name,
    title: 'Delete a note',
    summary: 'Deletes one note by id.',
    destructive: true,
    readOnly: false,
    confirm: false,
    alwaysAsk: false,
    exclusive: false,
    timeoutSeconds: null,
    inputSchema: { type: 'object' },
    webhookDisabled: false,
    ...over,
  };
}

export interface Asked {
  /** A nonce in the arguments, to find this approval among the person's. */
  nonce: string;
  argumentsText: string;
  decision: Promise<ApprovalDecision>;
  progress: string[];
}

/** Asks as the call path does (callTool → svc.approvals.request). */
export function ask(
  approvals: Approvals,
  userId: string,
  /** `progress: false`: a call without a progress token (nothing to send while it waits). */
  opts: { tool?: EnabledTool; signal?: AbortSignal; grantId?: string; callId?: string; progress?: false } = {},
): Asked {
  const nonce = randomBytes(6).toString('hex');
  const argumentsText = JSON.stringify({ id: `note-${nonce}`, note: 'gone for good' });
  const progress: string[] = [];
  const req: ApprovalRequest = {
    callId: opts.callId ?? `call_${randomBytes(16).toString('base64url')}`,
    userId,
    grantId: opts.grantId,
    clientId: 'cli_test',
    appName: 'Claude',
    tool: opts.tool ?? destructiveTool(),
    argumentsText,
    subject: 'usr_pseudonym',
    signal: opts.signal,
    watcher:
      opts.progress === false
        ? undefined
        : {
            progress: true,
            on: (event) => {
              if (event.kind === 'progress') progress.push(event.message);
            },
          },
  };
  return { nonce, argumentsText, decision: approvals.request(req), progress };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the person's dashboard lists a pending approval of a call on note `noteId`. */
export const pendingOf = (client: Client, noteId: string, timeoutMs = 10_000): Promise<any> =>
  pendingWhere(client, (args) => args?.id === noteId, noteId, timeoutMs);

/** Waits until the person's dashboard lists a pending approval whose arguments `match`; `what` names it in the failure. */
export async function pendingWhere(client: Client, match: (args: any) => boolean, what: string, timeoutMs = 10_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await client.get('/api/approvals?status=pending');
    if (res.status !== 200) throw new Error(`listing failed: ${res.status} ${res.text}`);
    const found = (res.body as any[]).find((a) => match(a.arguments));
    if (found) return found;
    if (Date.now() > until) throw new Error(`no approval for ${what} appeared`);
    await sleep(25);
  }
}

/** Waits until the person's dashboard lists the approval `ask` made with `nonce`. */
export const pendingFor = (client: Client, nonce: string, timeoutMs?: number) => pendingOf(client, `note-${nonce}`, timeoutMs);

/** Reads a Server-Sent Events stream over fetch, as a dashboard's EventSource would. */
export async function openEvents(baseUrl: string, client: Client, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(`${baseUrl}/api/events`, { headers: { cookie, accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const events: Array<{ event: string; id?: string; data: any }> = [];
  const comments: string[] = [];
  let retry: number | undefined;
  let notify: (() => void) | undefined;
  const pump = (async () => {
    if (!res.body || res.status !== 200) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const e: { event: string; id?: string; data: any } = { event: 'message', data: '' };
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('data: ')) data += line.slice(6);
            else if (line.startsWith('retry: ')) retry = Number(line.slice(7));
          }
          if (data) {
            e.data = JSON.parse(data);
            events.push(e);
          }
          notify?.();
        }
      }
    } catch {
      /* aborted */
    }
  })();
  return {
    res,
    events,
    comments,
    get retry() {
      return retry;
    },
    async waitFor(pred: (e: { event: string; id?: string; data: any }) => boolean, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const hit = events.find(pred);
        if (hit) return hit;
        if (Date.now() > until) throw new Error(`no such event; got ${JSON.stringify(events.map((x) => x.event))}`);
        await new Promise<void>((r) => {
          notify = r;
          setTimeout(r, 50);
        });
      }
    },
    async close() {
      ac.abort();
      await pump;
    },
  };
}

/** Opens an event stream once a place is free (a closed stream's place comes back within moments). */
export async function openEventsWhenFree(baseUrl: string, client: Client, message: string, timeoutMs = 5_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const stream = await openEvents(baseUrl, client);
    if (stream.res.status === 200) return stream;
    await stream.close();
    assert.ok(Date.now() < until, message);
    await sleep(50);
  }
}
