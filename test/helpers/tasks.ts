// MCP Tasks as an app and an add-on speak them on the wire (tasks.test.ts, tasks-activity.test.ts).
import { randomUUID } from 'node:crypto';
import { signatureHeaders } from '../../packages/core/src/outbound/signing';
import type { TestOAuthProvider } from './mcp';

const MODERN = '2026-07-28';
export const TASKS = 'io.modelcontextprotocol/tasks';

/** 2026-07-28 on the wire, as the tasks requester sends what the SDK client cannot (its rawDispatch). */
export function modernWire(mcpUrl: string, provider: TestOAuthProvider, clientCapabilities: Record<string, unknown> = { extensions: { [TASKS]: {} } }) {
  const post = async (message: Record<string, any>) => {
    const params = message.params ?? {};
    const name = message.method === 'tools/call' ? params.name : params.taskId;
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${provider.tokens()!.access_token}`,
        'mcp-protocol-version': MODERN,
        'mcp-method': message.method,
        ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify(message),
    });
    return res.json() as Promise<any>;
  };
  const framed = (method: string, params: Record<string, unknown>) => ({
    jsonrpc: '2.0',
    id: randomUUID(),
    method,
    params: {
      ...params,
      _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': clientCapabilities, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' } },
    },
  });
  return {
    post,
    call: (method: string, params: Record<string, unknown>) => post(framed(method, params)),
    /** The tasks requester's raw path: a JSON-RPC answer as a result or an error. */
    dispatch: async (request: any) => {
      const answer = await post({ jsonrpc: '2.0', id: randomUUID(), ...request });
      return answer.error ? { kind: 'error' as const, error: answer.error } : { kind: 'result' as const, result: answer.result };
    },
  };
}

/**
 * The answer URL's POST, signed as an add-on signs it (Standard Webhooks, its secret; the
 * webhook-id names the call). `signedFor`: the answer URL whose call the signature names, to post
 * one call's captured answer to another call.
 */
export async function answer(url: string, secret: string, payload: unknown, opts: { id?: string; raw?: string; signedFor?: string } = {}) {
  const body = opts.raw ?? JSON.stringify(payload);
  const callId = decodeURIComponent((opts.signedFor ?? url).split('/').pop()!);
  const headers = signatureHeaders({ id: opts.id ?? `${callId}.${randomUUID()}`, timestamp: Date.now() / 1000, body, secrets: [secret] });
  const res = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
  return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
}


/** A 2026-07-28 `subscriptions/listen` stream, read as it comes: each JSON-RPC message in order. */
export async function listen(mcpUrl: string, provider: TestOAuthProvider, notifications: Record<string, unknown>, clientCapabilities: Record<string, unknown> = { extensions: { [TASKS]: {} } }) {
  const ac = new AbortController();
  const id = `listen-${randomUUID().slice(0, 8)}`;
  const res = await fetch(mcpUrl, {
    method: 'POST',
    signal: ac.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${provider.tokens()!.access_token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { notifications, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': clientCapabilities } },
    }),
  });
  const messages: any[] = [];
  if (!res.headers.get('content-type')?.includes('text/event-stream')) {
    messages.push(await res.json());
    return { id, messages, next: async () => messages[0], close: () => ac.abort() };
  }
  const reader = res.body!.getReader();
  let buffered = '';
  let reading: Promise<void> | undefined;
  const readMore = async () => {
    const { done, value } = await reader.read();
    if (done) throw new Error('the stream ended');
    buffered += Buffer.from(value).toString('utf8');
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) messages.push(JSON.parse(data));
    }
  };
  let seen = 0;
  return {
    id,
    messages,
    /** The next message after those already taken that `match` accepts (the ones before it are skipped). */
    async next(match: (m: any) => boolean = () => true, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        while (seen < messages.length) {
          const m = messages[seen++];
          if (match(m)) return m;
        }
        if (Date.now() > end) throw new Error(`no matching message on the stream; it carried ${JSON.stringify(messages).slice(0, 500)}`);
        reading ??= readMore().finally(() => (reading = undefined));
        await Promise.race([reading, new Promise((r) => setTimeout(r, 200))]);
      }
    },
    close: () => ac.abort(),
  };
}
