import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ToolportError } from '../packages/core/src/errors';
import { createOutboundClient, OutboundError } from '../packages/core/src/outbound/http-client';
import { newSigningSecret } from '../packages/core/src/outbound/signing';
import type { OutboundClient, WebhookAnswer } from '../packages/core/src/outbound/types';
import { pingWebhook, postWebhook, safeSentence, type WebhookKind } from '../packages/core/src/outbound/webhook';

// A real local webhook receiver. Each test sets `handle`; every request is recorded.
interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Handle = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  connections: number;
  handle: Handle;
  server: http.Server;
  close(): Promise<void>;
}

async function startReceiver(handle: Handle = (_q, _b, res) => res.end('{}')): Promise<Receiver> {
  const r = { received: [] as Received[], connections: 0, handle } as Receiver;
  r.server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      r.received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      r.handle(req, body, res);
    });
  });
  r.server.on('connection', () => r.connections++);
  await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', ok));
  r.port = (r.server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}/hook`;
  r.close = () => {
    r.server.closeAllConnections();
    return new Promise((ok) => r.server.close(() => ok()));
  };
  return r;
}

const json = (status: number, value: unknown, headers: Record<string, string> = {}): Handle => (_q, _b, res) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof value === 'string' ? value : JSON.stringify(value));
};

const secret = newSigningSecret();
let client: OutboundClient;
let hook: Receiver;

before(async () => {
  client = createOutboundClient({ allowPrivate: true });
  hook = await startReceiver();
});
after(async () => {
  client.close();
  await hook.close();
});
beforeEach(() => {
  hook.received.length = 0;
});

interface Extra {
  deadlineMs?: number;
  maxResultBytes?: number;
  url?: string;
  secrets?: string[];
  client?: OutboundClient;
}
const deliver = (kind: WebhookKind = 'tool.call', extra: Extra = {}) =>
  postWebhook({
    client: extra.client ?? client,
    url: extra.url ?? hook.url,
    secrets: extra.secrets ?? [secret],
    id: 'call_test1',
    body: JSON.stringify({ type: kind, addon: 'notes', tool: 'add_note', arguments: { text: 'é' } }),
    kind,
    deadline: Date.now() + (extra.deadlineMs ?? 5_000),
    ...(extra.maxResultBytes ? { maxResultBytes: extra.maxResultBytes } : {}),
  });

async function answerTo(handle: Handle, kind: WebhookKind = 'tool.call', extra: Extra = {}) {
  hook.handle = handle;
  return deliver(kind, extra);
}

function assertFailure(answer: WebhookAnswer, errorClass: string, retryable: boolean) {
  assert.equal(answer.kind, 'failure', JSON.stringify(answer));
  if (answer.kind !== 'failure') return;
  assert.equal(answer.errorClass, errorClass, answer.detail);
  assert.equal(answer.retryable, retryable, `${errorClass} retryable`);
  assert.ok(!answer.detail.includes(secret.slice(6)), 'no secret in the detail');
}

describe('postWebhook delivery', () => {
  it('POSTs signed JSON that the standardwebhooks library verifies, and reads a text answer', async () => {
    const { answer, status, latencyMs } = await answerTo(json(200, { text: 'Saved.' }));
    assert.deepEqual(answer, { kind: 'result', content: [{ type: 'text', text: 'Saved.' }] });
    assert.equal(status, 200);
    assert.ok(latencyMs > 0 && latencyMs < 5_000);

    const [got] = hook.received;
    assert.ok(got);
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/hook');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['accept-encoding'], 'identity');
    assert.equal(got.headers['webhook-id'], 'call_test1');
    assert.ok(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000) < 5);
    const headers = got.headers as Record<string, string>;
    assert.deepEqual(new Webhook(secret).verify(got.body, headers), JSON.parse(got.body));
    assert.throws(() => new Webhook(newSigningSecret()).verify(got.body, headers));
  });

  it('signs with both secrets during a rotation, and each verifies', async () => {
    const next = newSigningSecret();
    hook.handle = json(200, { text: 'ok' });
    await deliver('tool.call', { secrets: [next, secret] });
    const got = hook.received[0]!;
    assert.equal(String(got.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(new Webhook(secret).verify(got.body, got.headers as Record<string, string>));
    assert.ok(new Webhook(next).verify(got.body, got.headers as Record<string, string>));
  });

  it('keeps the same webhook-id on a retry, signed afresh', async () => {
    hook.handle = json(503, { error: 'busy' });
    await deliver();
    hook.handle = json(200, { text: 'ok' });
    await deliver();
    const [a, b] = hook.received;
    assert.equal(a!.headers['webhook-id'], b!.headers['webhook-id']);
    for (const r of [a!, b!]) assert.ok(new Webhook(secret).verify(r.body, r.headers as Record<string, string>));
  });

  it('reuses one pooled keep-alive connection for sequential deliveries', async () => {
    const r = await startReceiver(json(200, { text: 'ok' }));
    const c = createOutboundClient({ allowPrivate: true });
    try {
      for (let i = 0; i < 5; i++) {
        const { answer } = await deliver('tool.call', { url: r.url, client: c });
        assert.equal(answer.kind, 'result');
      }
      assert.equal(r.received.length, 5);
      assert.equal(r.connections, 1);
    } finally {
      c.close();
      await r.close();
    }
  });

  it('retries once on a fresh socket when a pooled socket turns out closed', async () => {
    let n = 0;
    const r = await startReceiver((req, _b, res) => {
      // The second request arrives on the kept-alive socket, which dies as if the server had timed it out.
      if (++n === 2) return void req.socket.destroy();
      json(200, { text: `answer ${n}` })(req, _b, res);
    });
    const c = createOutboundClient({ allowPrivate: true });
    try {
      assert.equal((await deliver('tool.call', { url: r.url, client: c })).answer.kind, 'result');
      const { answer } = await deliver('tool.call', { url: r.url, client: c });
      assert.deepEqual(answer, { kind: 'result', content: [{ type: 'text', text: 'answer 3' }] });
      assert.equal(r.connections, 2);
    } finally {
      c.close();
      await r.close();
    }
  });
});

describe('answers', () => {
  it('reads {"json": object} as text plus structuredContent', async () => {
    const value = { notes: [{ id: 'n1', title: 'Shopping' }] };
    const { answer } = await answerTo(json(200, { json: value }));
    assert.deepEqual(answer, { kind: 'result', content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value });
  });

  it('wraps a non-object {"json": value} as {"result": value}', async () => {
    for (const value of [[1, 2], 42, 'text', null, true]) {
      const { answer } = await answerTo(json(201, { json: value }));
      assert.deepEqual(answer, { kind: 'result', content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: { result: value } });
    }
  });

  it('accepts valid MCP content blocks and drops unknown fields', async () => {
    const blocks = [
      { type: 'text', text: 'hello', annotations: { audience: ['user'] } },
      { type: 'image', data: Buffer.from('png').toString('base64'), mimeType: 'image/png' },
      { type: 'audio', data: Buffer.from('wav').toString('base64'), mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'https://notes.example.com/n/1', name: 'n1', title: 'Note 1', size: 12 },
      { type: 'resource', resource: { uri: 'note://1', text: 'body', mimeType: 'text/plain' } },
      { type: 'resource', resource: { uri: 'note://2', blob: Buffer.from('x').toString('base64') } },
    ];
    const { answer } = await answerTo(json(200, { content: [...blocks.slice(0, 1).map((b) => ({ ...b, extra: 'dropped' })), ...blocks.slice(1)] }));
    assert.deepEqual(answer, { kind: 'result', content: blocks });
  });

  it('refuses content blocks with a missing or wrong field', async () => {
    const bad = [
      { type: 'text' },
      { type: 'text', text: 5 },
      { type: 'image', data: 'not base64!', mimeType: 'image/png' },
      { type: 'image', data: 'AAAA' },
      { type: 'audio', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'not a uri', name: 'x' },
      { type: 'resource_link', uri: 'https://x.example', name: 3 },
      { type: 'resource_link', uri: 'https://x.example', name: 'x', size: 'big' },
      { type: 'resource', resource: { uri: 'note://1' } },
      { type: 'resource', resource: { text: 'x' } },
      { type: 'video', data: 'AAAA' },
      { type: 'text', text: 'x', annotations: 'loud' },
      'text',
      null,
    ];
    for (const block of bad) {
      const { answer } = await answerTo(json(200, { content: [block] }));
      assertFailure(answer, 'bad_answer', false);
    }
    assertFailure((await answerTo(json(200, { content: 'hello' }))).answer, 'bad_answer', false);
  });

  it('reads {"error"} as a refusal: trimmed, control characters stripped, at most 500 characters', async () => {
    const { answer } = await answerTo(json(200, { error: '  Note\u0000 42\u202e does\nnot exist.\u0007  ' }));
    assert.deepEqual(answer, { kind: 'refusal', message: 'Note 42 does not exist.' });
    const long = await answerTo(json(200, { error: 'é'.repeat(2_000) }));
    assert.equal(long.answer.kind, 'refusal');
    if (long.answer.kind === 'refusal') assert.ok(Array.from(long.answer.message).length <= 500);
    assertFailure((await answerTo(json(200, { error: '   ' }))).answer, 'bad_answer', false);
    assertFailure((await answerTo(json(200, { error: { message: 'x' } }))).answer, 'bad_answer', false);
  });

  it('reads tool.confirm answers', async () => {
    assert.deepEqual((await answerTo(json(200, { confirm: null }), 'tool.confirm')).answer, { kind: 'confirm', confirm: null });
    const confirm = { message: 'Delete "Shopping"?', info: [{ name: 'Note', value: 'Shopping' }], style: 'destructive' };
    assert.deepEqual((await answerTo(json(200, { confirm }), 'tool.confirm')).answer, { kind: 'confirm', confirm });
    assert.deepEqual((await answerTo(json(200, { confirm: { message: 'Go?' } }), 'tool.confirm')).answer, {
      kind: 'confirm',
      confirm: { message: 'Go?' },
    });
    // A refusal at the confirm step ends the call before the person is asked.
    assert.deepEqual((await answerTo(json(200, { error: 'No such note.' }), 'tool.confirm')).answer, { kind: 'refusal', message: 'No such note.' });
  });

  it('cuts confirm descriptors to their bounds, and leaves out rows without a value (as Raycast does)', async () => {
    const read = async (confirm: unknown) => (await answerTo(json(200, { confirm }), 'tool.confirm')).answer;
    const long = await read({ message: 'x'.repeat(501) });
    assert.equal(long.kind, 'confirm');
    if (long.kind === 'confirm') {
      assert.equal(long.confirm!.message, `${'x'.repeat(499)}…`);
      assert.equal(long.cut, 'Shown cut to fit: confirm.message cut from 501 to 500 characters.');
    }
    const many = await read({ message: 'ok', info: Array.from({ length: 21 }, (_, i) => ({ name: `n${i}`, value: 'v' })) });
    if (many.kind !== 'confirm') assert.fail(`not a confirm: ${JSON.stringify(many)}`);
    assert.equal(many.confirm!.info!.length, 20);
    assert.equal(many.confirm!.infoOmitted, 1);
    const wide = await read({ message: 'ok', info: [{ name: 'n', value: 'v'.repeat(201) }] });
    if (wide.kind !== 'confirm') assert.fail(`not a confirm: ${JSON.stringify(wide)}`);
    assert.deepEqual(wide.confirm!.info, [{ name: 'n', value: `${'v'.repeat(199)}…` }]);
    assert.deepEqual(await read({ message: 'ok', info: [{ name: 'n' }, { name: 'm', value: null }, { name: 'k', value: 'v' }] }), {
      kind: 'confirm',
      confirm: { message: 'ok', info: [{ name: 'k', value: 'v' }] },
    });
  });

  it('refuses confirm descriptors of the wrong shape', async () => {
    const bad = [
      { message: '' },
      { message: 5 },
      { message: 'ok', style: 'scary' },
      { message: 'ok', info: [{ value: 'v' }] },
      { message: 'ok', info: [{ name: 'n', value: 3 }] },
      { message: 'ok', info: 'n=v' },
      'yes',
    ];
    for (const confirm of bad) assertFailure((await answerTo(json(200, { confirm }), 'tool.confirm')).answer, 'bad_answer', false);
    // A confirm answer to a call, or a result to a confirm, is not what was asked.
    assertFailure((await answerTo(json(200, { confirm: null }))).answer, 'bad_answer', false);
    assertFailure((await answerTo(json(200, { text: 'hi' }), 'tool.confirm')).answer, 'bad_answer', false);
  });

  it('calls anything else on a 2xx a bad answer', async () => {
    for (const body of ['not json', '', '[1,2]', 'null', '"text"', '{}', '{"text": 5}', '{"text":"a","error":"b"}', '{"result":"x"}']) {
      const { answer, status } = await answerTo(json(200, body));
      assertFailure(answer, 'bad_answer', false);
      assert.equal(status, 200);
    }
    const { answer } = await answerTo(json(200, `<html>${'x'.repeat(5_000)}</html>`));
    assertFailure(answer, 'bad_answer', false);
    if (answer.kind === 'failure') assert.ok(answer.detail.length < 260, 'the detail carries at most ~200 characters of the body');
    assertFailure((await answerTo((_q, _b, res) => res.writeHead(204).end())).answer, 'bad_answer', false);
  });

  it('refuses a result over the limit as too_large, and accepts one at the limit even when escaping inflates it', async () => {
    const limit = 64 * 1024;
    // A text over the inline limit becomes a preview and a file (artifacts.test.ts); past 4 MB it is refused.
    const over = (await answerTo(json(200, { text: 'a'.repeat(limit + 1) }))).answer;
    assert.equal(over.kind === 'result' && over.files?.[0]?.bytes.length, limit + 1);
    assertFailure((await answerTo(json(200, { text: 'a'.repeat(4 * 1024 * 1024 + 1) }))).answer, 'too_large', false);
    assertFailure((await answerTo(json(200, { json: { a: 'b'.repeat(limit) } }))).answer, 'too_large', false);
    const quoted = '"'.repeat(limit); // 128 KB on the wire, 64 KB of text
    const { answer } = await answerTo(json(200, { text: quoted }));
    assert.equal(answer.kind, 'result');
    assert.equal(answer.kind === 'result' && answer.content[0]!.text, quoted);
    assertFailure((await answerTo(json(200, { json: 'abcdef' }), 'tool.call', { maxResultBytes: 5 })).answer, 'too_large', false);
  });
});

describe('failure classes', () => {
  it('does not follow a redirect: 3xx is final and the Location is never visited', async () => {
    const target = await startReceiver(json(200, { text: 'followed!' }));
    try {
      for (const status of [301, 302, 303, 307, 308]) {
        const { answer, status: got } = await answerTo(json(status, '', { location: target.url }));
        assertFailure(answer, 'redirect', false);
        assert.equal(got, status);
      }
      // The bare client returns the 3xx itself.
      const res = await client.request({ url: hook.url, deadline: Date.now() + 2_000, maxBytes: 1024 });
      assert.equal(res.status, 308);
      assert.equal(res.headers.location, target.url);
      assert.equal(target.received.length, 0);
      assert.equal(target.connections, 0);
    } finally {
      await target.close();
    }
  });

  it('classifies HTTP statuses: 410 gone, 408/429/5xx retryable, other 4xx final', async () => {
    const { answer: gone } = await answerTo(json(410, { error: 'gone' }));
    assertFailure(gone, 'gone', false);
    for (const s of [408, 429, 500, 502, 503, 504]) {
      const { answer, status } = await answerTo(json(s, { error: 'x' }));
      assertFailure(answer, 'http_status', true);
      assert.equal(status, s);
      assert.equal(answer.kind === 'failure' && answer.status, s);
    }
    for (const s of [400, 401, 403, 404, 422]) assertFailure((await answerTo(json(s, { error: 'x' }))).answer, 'http_status', false);
    const { answer } = await answerTo(json(500, 'Traceback: ' + 'y'.repeat(10_000)));
    assert.ok(answer.kind === 'failure' && answer.detail.startsWith('HTTP 500: Traceback') && answer.detail.length < 260);
  });

  it('ends a silent add-on at the deadline (timeout, retryable)', async () => {
    const started = Date.now();
    const { answer, status } = await answerTo(() => {}, 'tool.call', { deadlineMs: 300 });
    const elapsed = Date.now() - started;
    assertFailure(answer, 'timeout', true);
    assert.equal(status, undefined);
    // Not before the deadline; the upper bound only tells an end at the deadline from a hang.
    assert.ok(elapsed >= 280 && elapsed < 5_000, `elapsed ${elapsed} ms`);
  });

  it('cuts a drip-fed body at the deadline, not later', async () => {
    let timer: NodeJS.Timeout | undefined;
    const started = Date.now();
    const { answer } = await answerTo(
      (_q, _b, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"text": "');
        timer = setInterval(() => res.write('a'), 20);
        res.on('close', () => clearInterval(timer));
      },
      'tool.call',
      { deadlineMs: 400 },
    );
    const elapsed = Date.now() - started;
    clearInterval(timer);
    assertFailure(answer, 'timeout', true);
    assert.ok(elapsed >= 380 && elapsed < 5_000, `elapsed ${elapsed} ms`);
  });

  it('cuts a 10 MB answer near the cap without reading it all', async () => {
    // Node publishes every client request here; the socket's bytesRead is what the client really read.
    const sockets: net.Socket[] = [];
    const onRequest = (msg: unknown) => {
      const { request } = msg as { request: http.ClientRequest };
      if (request.socket) sockets.push(request.socket);
      else request.once('socket', (s) => sockets.push(s));
    };
    diagnostics.subscribe('http.client.request.start', onRequest);
    let written = 0;
    let closed!: () => void;
    const done = new Promise<void>((ok) => (closed = ok));
    const started = Date.now();
    const c = createOutboundClient({ allowPrivate: true });
    try {
      const { answer } = await answerTo(
        (_q, _b, res) => {
          res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no length to refuse up front
          const chunk = Buffer.alloc(16 * 1024, 'a');
          const pump = () => {
            while (written < 10 * 1024 * 1024 && !res.destroyed) {
              written += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            res.end();
          };
          res.on('close', () => closed());
          pump();
        },
        'tool.call',
        { client: c },
      );
      await done;
      assertFailure(answer, 'too_large', false);
      assert.equal(sockets.length, 1);
      const read = sockets[0]!.bytesRead;
      // The inline result (JSON may double it) and 4 MB of files in base64 (MAX_ANSWER_WIRE_BYTES).
      const cap = 2 * 64 * 1024 + Math.ceil((4 * 1024 * 1024) / 3) * 4 + 64 * 1024;
      assert.ok(read > cap && read < cap + 256 * 1024, `the client read ${read} bytes for a cap of ${cap}`);
      assert.ok(written < 10 * 1024 * 1024, `the server wrote only ${written} bytes before the client hung up`);
      assert.ok(Date.now() - started < 10_000);
    } finally {
      diagnostics.unsubscribe('http.client.request.start', onRequest);
      c.close();
    }
  });

  it('refuses a declared Content-Length above the cap at once', async () => {
    const { answer } = await answerTo((_q, _b, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) });
      res.write('{"text":"');
    });
    assertFailure(answer, 'too_large', false);
    assert.match(answer.kind === 'failure' ? answer.detail : '', /declares/);
  });

  it('reports a refused connection as connect (retryable)', async () => {
    const spare = net.createServer();
    await new Promise<void>((ok) => spare.listen(0, '127.0.0.1', ok));
    const port = (spare.address() as AddressInfo).port;
    await new Promise((ok) => spare.close(ok));
    const { answer } = await deliver('tool.call', { url: `http://127.0.0.1:${port}/hook` });
    assertFailure(answer, 'connect', true);
  });

  it('reports broken HTTP and a body cut short as protocol (retryable)', async () => {
    const raw = net.createServer((s) => s.once('data', () => s.end('HTTP/1.1 two hundred OK\r\n\r\n')));
    await new Promise<void>((ok) => raw.listen(0, '127.0.0.1', ok));
    try {
      const { answer } = await deliver('tool.call', { url: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/` });
      assertFailure(answer, 'protocol', true);
    } finally {
      await new Promise((ok) => raw.close(ok));
    }
    const { answer } = await answerTo((_q, _b, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"text": "only part');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    assertFailure(answer, 'protocol', true);
  });

  it('reports an untrusted certificate and a non-TLS server as tls', async () => {
    const tlsServer = https.createServer({ key: TEST_KEY, cert: TEST_CERT }, (_q, res) => res.end('{"text":"x"}'));
    await new Promise<void>((ok) => tlsServer.listen(0, '127.0.0.1', ok));
    try {
      const { answer } = await deliver('tool.call', { url: `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}/` });
      assertFailure(answer, 'tls', true);
    } finally {
      tlsServer.closeAllConnections();
      await new Promise((ok) => tlsServer.close(ok));
    }
    const { answer } = await deliver('tool.call', { url: `https://127.0.0.1:${hook.port}/hook` });
    assertFailure(answer, 'tls', true);
  });

  it('refuses bad URLs before any connection (final)', async () => {
    const before = hook.connections;
    for (const url of ['not a url', `ftp://127.0.0.1:${hook.port}/`, `http://user:pw@127.0.0.1:${hook.port}/`, `http://:pw@127.0.0.1:${hook.port}/`, 'file:///etc/passwd']) {
      const { answer } = await deliver('tool.call', { url });
      assertFailure(answer, 'bad_url', false);
    }
    assert.equal(hook.connections, before);
    await assert.rejects(client.request({ url: 'gopher://x', deadline: Date.now() + 1000, maxBytes: 1 }), (e: unknown) => e instanceof OutboundError && e.errorClass === 'bad_url');
  });

  it('sends nothing once the deadline has passed', async () => {
    const answer = (await postWebhook({ client, url: hook.url, secrets: [secret], id: 'call_late', body: '{}', kind: 'tool.call', deadline: Date.now() - 1 })).answer;
    assertFailure(answer, 'deadline', false);
    assert.equal(hook.received.length, 0);
  });

  it('gives the app one short, safe sentence per failure class, never the detail', () => {
    const f = (errorClass: Extract<WebhookAnswer, { kind: 'failure' }>['errorClass'], status?: number): WebhookAnswer => ({
      kind: 'failure',
      errorClass,
      retryable: false,
      detail: 'SECRET-DETAIL 10.0.0.1 stack',
      ...(status ? { status } : {}),
    });
    const expect: Array<[WebhookAnswer, string]> = [
      [f('timeout'), 'The add-on took too long to answer.'],
      [f('deadline'), 'The add-on took too long to answer.'],
      [f('too_large'), "The add-on's result is larger than Toolport takes (64 KB inline, and 4 MB of files or of text, whose first part is then shown)."],
      [f('connect'), 'The add-on could not be reached.'],
      [f('dns'), 'The add-on could not be reached.'],
      [f('tls'), 'The add-on could not be reached.'],
      [f('blocked_address'), 'The add-on could not be reached.'],
      [f('bad_url'), 'The add-on could not be reached.'],
      [f('redirect', 302), 'The add-on could not be reached.'],
      [f('gone', 410), 'The add-on is no longer available.'],
      [f('http_status', 500), 'The add-on failed while handling the call.'],
      [f('http_status', 429), 'The add-on is busy right now; try again later.'],
      [f('bad_answer', 200), 'The add-on answered with something Toolport could not read.'],
      [f('protocol'), 'The add-on answered with something Toolport could not read.'],
    ];
    for (const [answer, sentence] of expect) {
      assert.equal(safeSentence(answer), sentence);
      assert.ok(!safeSentence(answer).includes('SECRET'));
    }
    assert.equal(safeSentence({ kind: 'refusal', message: 'No such note.' }), 'No such note.');
  });
});

describe('pingWebhook', () => {
  const ping = (url = hook.url, deadlineMs = 2_000, c = client) => pingWebhook({ client: c, url, secrets: [secret], deadline: Date.now() + deadlineMs });

  async function assertPingRefused(p: Promise<void>, reason: RegExp) {
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof ToolportError);
      assert.equal(e.code, 'VALIDATION');
      assert.equal(e.message, 'The webhook did not answer the ping challenge.');
      const [err] = e.details.errors ?? [];
      assert.equal(err?.path, '/webhook');
      assert.match(err!.message, reason);
      return true;
    });
  }

  it('passes when the webhook echoes the signed challenge', async () => {
    hook.handle = (_q, body, res) => json(200, { challenge: JSON.parse(body).challenge })(_q, body, res);
    await ping();
    const got = hook.received[0]!;
    const payload = new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as { type: string; challenge: string };
    assert.equal(payload.type, 'ping');
    assert.ok(payload.challenge.length >= 16);
    assert.match(String(got.headers['webhook-id']), /^ping_/);
  });

  it('refuses a wrong echo, a 404, a timeout, a redirect, a blocked address and a non-answer', async () => {
    hook.handle = json(200, { challenge: 'something else' });
    await assertPingRefused(ping(), /different challenge/);
    hook.handle = json(200, { ok: true });
    await assertPingRefused(ping(), /challenge/);
    hook.handle = json(404, 'Not Found');
    await assertPingRefused(ping(), /HTTP 404/);
    hook.handle = json(301, '', { location: 'http://127.0.0.1:1/' });
    await assertPingRefused(ping(), /redirect/);
    hook.handle = () => {};
    const started = Date.now();
    await assertPingRefused(ping(hook.url, 300), /timed out/);
    assert.ok(Date.now() - started < 5_000);

    const strict = createOutboundClient({ allowPrivate: false });
    const before = hook.connections;
    try {
      await assertPingRefused(ping(hook.url, 2_000, strict), /private, loopback/);
    } finally {
      strict.close();
    }
    assert.equal(hook.connections, before);

    const spare = net.createServer();
    await new Promise<void>((ok) => spare.listen(0, '127.0.0.1', ok));
    const port = (spare.address() as AddressInfo).port;
    await new Promise((ok) => spare.close(ok));
    await assertPingRefused(ping(`http://127.0.0.1:${port}/`), /unreachable/);
  });
});

// Test-only, self-signed for IP:127.0.0.1; nothing trusts it, which is the point of the test.
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg2TrV2aJaUPBMsm2i
7OJxnw0sywVKeqL/IsxdNGkj216hRANCAATSjtwHM5Lawl6CoqAUtpl/5gNfAT+G
bnMzwpRO1JWCsqXSBLO2k5fqoyd/suGmi8crkliQv1l0Y6uhDyxNPOKF
-----END PRIVATE KEY-----`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBkDCCATagAwIBAgIUYrTQJ043faxHoEgnuHTl9bZtTPkwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEzMDA1MjIyMFoYDzIxMjYxMTA2
MDUyMjIwWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATSjtwHM5Lawl6CoqAUtpl/5gNfAT+GbnMzwpRO1JWCsqXSBLO2k5fq
oyd/suGmi8crkliQv1l0Y6uhDyxNPOKFo2QwYjAdBgNVHQ4EFgQU+1KOX8pa00dx
Uxv3bMFjPvtHUqkwHwYDVR0jBBgwFoAU+1KOX8pa00dxUxv3bMFjPvtHUqkwDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC
IQDunsuz6mCqlcMCQuP/KnvoZj68ir8ECjkswfufZi7sbQIgMj/ISu3ThLB15Msw
5DyBCBsGHuwyzrg9RuqKx5PZF6U=
-----END CERTIFICATE-----`;
