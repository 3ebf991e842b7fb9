import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import http, { type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signatureHeaders } from '../packages/core/src/outbound/signing';
import { AddOnError, boolean, choice, defineAddon, GENERIC_FAILURE, number, serveNode, text, tool, type ArgsOf } from '@toolport/addon-kit';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const secretA = newSecret();
const secretB = newSecret();
const logged: unknown[] = [];
let runs = 0;

const addon = defineAddon({
  id: 'kit-test',
  name: 'Kit test',
  description: 'Exercises the kit.',
  webhook: 'https://kit.example.com/hook',
  tools: {
    echo: tool({
      title: 'Echo',
      summary: 'Returns the text it was given.',
      readOnly: true,
      arguments: {
        text: text({ maxLength: 20, summary: 'What to echo.' }),
        n: number({ min: 1, max: 5, whole: true, summary: 'How many times.' }).optional(),
        loud: boolean({ summary: 'Upper case?', required: false }),
        colour: choice(['red', 'blue'], { summary: 'A colour.', required: false }),
      },
      run: (args, ctx) => {
        runs++;
        const out = args.text.repeat(args.n ?? 1);
        return `${args.loud ? out.toUpperCase() : out}${args.colour ? ` in ${args.colour}` : ''} for ${ctx.userId}`;
      },
    }),
    as_json: tool({
      title: 'As JSON',
      summary: 'Returns the call context as JSON.',
      run: (_args, ctx) => ({ json: { userId: ctx.userId, callId: ctx.callId, attempt: ctx.attempt, app: ctx.app, deadline: ctx.deadline.toISOString(), session: ctx.session ?? null } }),
    }),
    as_content: tool({
      title: 'As content',
      summary: 'Returns MCP content blocks.',
      run: (_args, ctx) =>
        ctx.callId.endsWith('files')
          ? { content: [{ type: 'text', text: 'one' }], files: [{ name: 'a.csv', mediaType: 'text/csv', data: 'a,b\n' }, { name: 'b.bin', mediaType: 'application/octet-stream', data: new Uint8Array([0, 1]) }] }
          : { content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
    }),
    refuse: tool({ title: 'Refuse', summary: 'Always refuses.', run: () => { throw new AddOnError('No, and here is why.'); } }),
    crash: tool({ title: 'Crash', summary: 'Always crashes.', run: () => { throw new Error('db password is hunter2'); } }),
    remove: tool({
      title: 'Remove',
      summary: 'Removes a thing and returns nothing.',
      destructive: true,
      arguments: { id: text({ maxLength: 10, summary: 'Which.' }) },
      confirm: (args) => {
        if (args.id === 'crash') throw new Error('confirm broke');
        return args.id === 'none' ? null : { message: `Remove ${args.id}?`, info: [{ name: 'Id', value: args.id }], style: 'destructive' };
      },
      run: (args) => `removed ${args.id}`,
    }),
    no_confirm: tool({ title: 'Plain', summary: 'Destructive without a confirm handler.', destructive: true, run: () => 'done' }),
    until_deadline: tool({
      title: 'Until the deadline',
      summary: 'Waits for the call to reach its deadline and returns when it did.',
      run: (_args, ctx) => new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve(`aborted after the deadline: ${Date.now() >= ctx.deadline.getTime()}`))),
    }),
  },
});

// Compile-time: args are typed from the declared kinds.
type EchoArgs = ArgsOf<{ t: ReturnType<typeof text>; c: ReturnType<typeof choice<['x', 'y'], false>> }>;
const typed: EchoArgs = { t: 'a' };
void typed;

let server: Server;
let url: string;
let secrets = [secretA];

before(async () => {
  server = await serveNode(addon.handler({ secrets: () => secrets, onError: (err) => logged.push(err) }), 0, '127.0.0.1');
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

function delivery(toolName: string, args: Record<string, unknown> = {}, type = 'tool.call', callId = `call_${randomUUID()}`) {
  return {
    type,
    addon: 'kit-test',
    tool: toolName,
    arguments: args,
    call: { id: callId, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
    user: { id: 'usr_pseudo1' },
    app: { name: 'Claude', clientId: 'cli_1' },
  };
}

async function send(
  body: unknown,
  opts: { secret?: string | string[]; at?: Date; id?: string; tamper?: (raw: string) => string; headers?: Record<string, string | undefined>; method?: string } = {},
) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const id = opts.id ?? `msg_${randomUUID()}`;
  const at = opts.at ?? new Date();
  const signers = [opts.secret ?? secretA].flat();
  const signature = signers.map((s) => new Webhook(s).sign(id, at, raw)).join(' ');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === undefined) delete headers[k];
    else headers[k] = v;
  }
  const res = await fetch(url, { method: opts.method ?? 'POST', headers, body: opts.method === 'GET' ? undefined : opts.tamper ? opts.tamper(raw) : raw });
  const textBody = await res.text();
  let parsed: any;
  try { parsed = JSON.parse(textBody); } catch { parsed = undefined; }
  return { status: res.status, body: parsed, text: textBody };
}

describe('addon-kit manifest', () => {
  it('renders addon.json in the documented format', () => {
    const m = addon.manifest();
    assert.equal(m.id, 'kit-test');
    assert.equal(m.webhook, 'https://kit.example.com/hook');
    assert.equal('visibility' in m, false);
    assert.deepEqual(m.tools.map((t) => t.name), ['echo', 'as_json', 'as_content', 'refuse', 'crash', 'remove', 'no_confirm', 'until_deadline']);
    assert.deepEqual(m.tools[0], {
      name: 'echo',
      title: 'Echo',
      summary: 'Returns the text it was given.',
      readOnly: true,
      arguments: [
        { name: 'text', summary: 'What to echo.', kind: { text: { maxLength: 20 } } },
        { name: 'n', summary: 'How many times.', kind: { number: { minimum: 1, maximum: 5, whole: true } }, required: false },
        { name: 'loud', summary: 'Upper case?', kind: 'boolean', required: false },
        { name: 'colour', summary: 'A colour.', kind: { choice: ['red', 'blue'] }, required: false },
      ],
    });
    assert.deepEqual(m.tools[5], {
      name: 'remove', title: 'Remove', summary: 'Removes a thing and returns nothing.', destructive: true, confirm: true,
      arguments: [{ name: 'id', summary: 'Which.', kind: { text: { maxLength: 10 } } }],
    });
    assert.equal(m.tools[6]!.confirm, undefined, 'no handler, no confirm in the manifest');
    assert.equal(addon.manifest({ webhook: 'https://tunnel.example/x' }).webhook, 'https://tunnel.example/x');
  });

  it('refuses a tool that was not made with tool()', () => {
    assert.throws(() => defineAddon({ id: 'x', name: 'x', description: 'x', webhook: 'https://x', tools: { bad: { run() {} } as any } }), /tool\(/);
  });
});

describe('addon-kit handler', () => {
  it('echoes a ping challenge', async () => {
    const res = await send({ type: 'ping', challenge: 'abc123' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { challenge: 'abc123' });
  });

  it('echoes a registration ping signed with a secret it does not know yet, but only with fresh headers', async () => {
    assert.deepEqual((await send({ type: 'ping', challenge: 'c1' }, { secret: newSecret() })).body, { challenge: 'c1' });
    assert.equal((await send({ type: 'ping', challenge: 'c2' }, { headers: { 'webhook-signature': undefined } })).status, 401);
    assert.equal((await send({ type: 'ping', challenge: 'c3' }, { at: new Date(Date.now() - 600_000) })).status, 401);
    const strict = defineAddon({ id: 'strict', name: 's', description: 's', webhook: 'https://s', tools: {} }).handler({ secrets: [secretA], strictPing: true });
    const raw = JSON.stringify({ type: 'ping', challenge: 'c4' });
    const headers = signatureHeaders({ id: 'msg_1', timestamp: Date.now() / 1000, body: raw, secrets: [newSecret()] });
    assert.equal((await strict(new Request('http://x/', { method: 'POST', headers, body: raw }))).status, 401);
    const good = signatureHeaders({ id: 'msg_1', timestamp: Date.now() / 1000, body: raw, secrets: [secretA] });
    assert.deepEqual(await (await strict(new Request('http://x/', { method: 'POST', headers: good, body: raw }))).json(), { challenge: 'c4' });
  });

  it("verifies deliveries signed by Toolport's own signer, including both secrets during a rotation", async () => {
    const raw = JSON.stringify(delivery('echo', { text: 'srv' }));
    const post = (headers: Record<string, string>, body = raw) => fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
    const one = await post(signatureHeaders({ id: 'call_srv1', timestamp: Date.now() / 1000, body: raw, secrets: [secretA] }));
    assert.equal(one.status, 200);
    assert.deepEqual(await one.json(), { text: 'srv for usr_pseudo1' });
    const rotated = await post(signatureHeaders({ id: 'call_srv2', timestamp: Date.now() / 1000, body: raw, secrets: [newSecret(), secretA] }));
    assert.equal(rotated.status, 200);
    const stale = await post(signatureHeaders({ id: 'call_srv3', timestamp: Date.now() / 1000 - 400, body: raw, secrets: [secretA] }));
    assert.equal(stale.status, 401);
    const tampered = await post(signatureHeaders({ id: 'call_srv4', timestamp: Date.now() / 1000, body: raw, secrets: [secretA] }), raw.replace('srv', 'srw'));
    assert.equal(tampered.status, 401);
  });

  it('answers a string as text, with typed args and the user from the delivery', async () => {
    const res = await send(delivery('echo', { text: 'hi', n: 2, loud: true, colour: 'red' }));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { text: 'HIHI in red for usr_pseudo1' });
  });

  it('answers { json } and { content }, and passes the call context', async () => {
    const d = delivery('as_json');
    const res = await send(d);
    assert.deepEqual(res.body, { json: { userId: 'usr_pseudo1', callId: d.call.id, attempt: 1, app: { name: 'Claude', clientId: 'cli_1' }, deadline: d.call.deadline, session: null } });
    const inSession = delivery('as_json');
    (inSession.call as Record<string, unknown>).session = 'ses_abc';
    assert.equal((await send(inSession)).body.json.session, 'ses_abc', 'ctx.session is the delivery’s call.session');
    const content = await send(delivery('as_content'));
    assert.deepEqual(content.body, { content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] });
    const withFiles = await send(delivery('as_content', {}, 'tool.call', `call_${randomUUID()}_files`));
    assert.deepEqual(withFiles.body, {
      content: [{ type: 'text', text: 'one' }],
      artifacts: [
        { name: 'a.csv', mediaType: 'text/csv', data: 'YSxiCg==' },
        { name: 'b.bin', mediaType: 'application/octet-stream', data: 'AAE=' },
      ],
    });
  });

  it('maps AddOnError to its sentence and hides unexpected errors', async () => {
    assert.deepEqual((await send(delivery('refuse'))).body, { error: 'No, and here is why.' });
    const before = logged.length;
    const res = await send(delivery('crash'));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { error: GENERIC_FAILURE, failed: true });
    assert.doesNotMatch(res.text, /hunter2/);
    assert.equal(logged.length, before + 1);
    assert.match(String((logged.at(-1) as Error).message), /hunter2/);
  });

  it('answers an unknown tool and arguments the code does not accept with an error sentence', async () => {
    const unknown = await send(delivery('nope'));
    assert.equal(unknown.status, 200);
    assert.match(unknown.body.error, /no tool named "nope"/);
    const bad = await send(delivery('echo', { text: 'x'.repeat(21), n: 9, extra: 1 }));
    assert.match(bad.body.error, /"extra" is not an argument/);
    assert.match(bad.body.error, /"text" must be at most 20 characters/);
    assert.match(bad.body.error, /"n" must be at most 5/);
    assert.match((await send(delivery('echo', {}))).body.error, /"text" is required/);
  });

  it('dispatches tool.confirm to the confirm handler; null skips, no handler keeps the approval', async () => {
    assert.deepEqual((await send(delivery('remove', { id: 'a1' }, 'tool.confirm'))).body, {
      confirm: { message: 'Remove a1?', info: [{ name: 'Id', value: 'a1' }], style: 'destructive' },
    });
    assert.deepEqual((await send(delivery('remove', { id: 'none' }, 'tool.confirm'))).body, { confirm: null });
    // A confirm handler that throws is the add-on's code failing, as for run: the log says addon_failed.
    assert.deepEqual((await send(delivery('remove', { id: 'crash' }, 'tool.confirm'))).body, { error: GENERIC_FAILURE, failed: true });
    const fallback = await send(delivery('no_confirm', {}, 'tool.confirm'));
    assert.equal(fallback.body.confirm.style, 'destructive');
    assert.match(fallback.body.confirm.message, /Plain/);
  });

  it('runs a retried call once: the same webhook-id gets the remembered answer', async () => {
    const d = delivery('echo', { text: 'once' });
    const id = `msg_${randomUUID()}`;
    const start = runs;
    const first = await send(d, { id });
    const retry = await send({ ...d, call: { ...d.call, attempt: 2 } }, { id });
    assert.deepEqual(retry.body, first.body);
    assert.equal(runs, start + 1);
  });

  it('remembers at most rememberAtMost answers, forgetting the oldest first', async () => {
    let ran = 0;
    const count = tool({ title: 'Count', summary: 'Counts its runs.', run: () => String(++ran) });
    const counted = defineAddon({ id: 'counted', name: 'c', description: 'c', webhook: 'https://c', tools: { count } });
    const h = counted.handler({ secrets: [secretA], rememberAtMost: 3 });
    const call = async (id: string) => {
      const raw = JSON.stringify(delivery('count', {}, 'tool.call', `call_${id}`));
      const at = new Date();
      const res = await h(
        new Request('http://x/', {
          method: 'POST',
          headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secretA).sign(id, at, raw) },
          body: raw,
        }),
      );
      assert.equal(res.status, 200);
      return ((await res.json()) as { text: string }).text;
    };
    assert.deepEqual([await call('a'), await call('b'), await call('c'), await call('d')], ['1', '2', '3', '4']);
    assert.equal(await call('d'), '4', 'the newest is remembered');
    assert.equal(await call('b'), '2', 'so is the one before');
    assert.equal(await call('a'), '5', 'the oldest was forgotten to make room, so it runs again');
    assert.equal(ran, 5);
  });

  it('refuses unsigned, badly signed, tampered, stale and future deliveries with a bare 401', async () => {
    const d = delivery('echo', { text: 'hi' });
    const start = runs;
    const cases = [
      await send(d, { secret: newSecret() }),
      await send(d, { tamper: (raw) => raw.replace('"hi"', '"ho"') }),
      await send(d, { at: new Date(Date.now() - 301_000) }),
      await send(d, { at: new Date(Date.now() + 301_000) }),
      await send(d, { headers: { 'webhook-signature': undefined } }),
      await send(d, { headers: { 'webhook-id': undefined } }),
      await send(d, { headers: { 'webhook-timestamp': undefined } }),
      await send(d, { headers: { 'webhook-timestamp': 'soon' } }),
      await send(d, { headers: { 'webhook-signature': 'v2,abc' } }),
      await send(d, { method: 'GET' }),
    ];
    for (const [i, res] of cases.entries()) {
      assert.equal(res.status, 401, `case ${i}`);
      assert.equal(res.text, 'Unauthorized', `case ${i} says nothing more`);
    }
    assert.equal(runs, start, 'nothing ran');
    // Within the tolerance both ways still works.
    assert.equal((await send(d, { at: new Date(Date.now() - 250_000) })).status, 200);
    assert.equal((await send(d, { at: new Date(Date.now() + 250_000) })).status, 200);
  });

  it('accepts any of several signatures and any of several secrets during a rotation', async () => {
    const d = () => delivery('echo', { text: 'rot' });
    // Toolport signs with new and old secret; the add-on still has only the old one.
    assert.equal((await send(d(), { secret: [newSecret(), secretA] })).status, 200);
    secrets = [secretB, secretA];
    try {
      assert.equal((await send(d(), { secret: secretA })).status, 200);
      assert.equal((await send(d(), { secret: secretB })).status, 200);
      assert.equal((await send(d(), { secret: newSecret() })).status, 401);
    } finally {
      secrets = [secretA];
    }
    assert.equal((await send(d(), { secret: secretB })).status, 401, 'a removed secret is refused');
  });

  it('refuses an oversized body with 413 before verifying it', async () => {
    const small = defineAddon({ id: 'small', name: 's', description: 's', webhook: 'https://s', tools: {} });
    const h = small.handler({ secrets: [secretA], maxBodyBytes: 100 });
    const res = await h(new Request('http://x/', { method: 'POST', headers: { 'webhook-id': 'a', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,x' }, body: 'x'.repeat(500) }));
    assert.equal(res.status, 413);
  });

  it('gives a tool a signal that aborts at the call deadline, never before it', async () => {
    // A timer for the time left can fire a millisecond before the wall clock reaches the deadline
    // (about one call in thirty did): a hundred calls in a row, each must see its deadline passed.
    for (let i = 0; i < 100; i++) {
      const d = delivery('until_deadline');
      d.call.deadline = new Date(Date.now() + 20).toISOString();
      assert.deepEqual((await send(d)).body, { text: 'aborted after the deadline: true' }, `call ${i + 1}`);
    }
  });

  it('answers tools.list: every tool without toolsFor; with it, the names it chooses for the person', async () => {
    const listing = (extra: Record<string, unknown> = {}) => ({ type: 'tools.list', addon: 'kit-test', user: { id: 'usr_pseudo1' }, call: { id: 'call_l1', deadline: new Date().toISOString() }, tools: ['echo', 'remove'], accounts: [], ...extra });
    assert.deepEqual((await send(listing())).body, { tools: ['echo', 'remove'] });
    const seen: unknown[] = [];
    const chooser = defineAddon({
      id: 'chooser',
      name: 'c',
      description: 'c',
      webhook: 'https://c',
      tools: { echo: tool({ title: 'Echo', summary: 'Echoes.', run: () => 'x' }), remove: tool({ title: 'Remove', summary: 'Removes.', destructive: true, run: () => 'x' }) },
      toolsFor: async (who) => {
        seen.push(who);
        if (who.settings.plan === 'broken') throw new Error('plan lookup failed');
        return who.tools.filter((n) => who.settings.plan === 'pro' || n !== 'remove');
      },
    });
    assert.deepEqual(Object.keys(chooser.manifest()).slice(0, 5), ['id', 'name', 'description', 'webhook', 'toolsPerPerson']);
    const errors: unknown[] = [];
    const h = chooser.handler({ secrets: [secretA], onError: (err) => errors.push(err) });
    const ask = async (d: unknown) => {
      const raw = JSON.stringify(d);
      const id = `msg_${randomUUID()}`;
      const at = new Date();
      const res = await h(new Request('http://x/', { method: 'POST', body: raw, headers: { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secretA).sign(id, at, raw) } }));
      return { status: res.status, body: await res.json() };
    };
    assert.deepEqual((await ask(listing({ settings: { plan: 'free' } }))).body, { tools: ['echo'] });
    assert.deepEqual((await ask(listing({ settings: { plan: 'pro' }, accounts: ['github'] }))).body, { tools: ['echo', 'remove'] });
    assert.deepEqual(seen.at(-1), { userId: 'usr_pseudo1', settings: { plan: 'pro' }, accounts: ['github'], tools: ['echo', 'remove'] });
    assert.equal((await ask(listing({ settings: { plan: 'broken' } }))).status, 500);
    assert.match(String(errors.at(-1)), /plan lookup failed/);
  });

  it('answers through the web-standard handler exactly as through serveNode', async () => {
    const h = addon.handler({ secrets: [secretA] });
    for (const [d, tamper] of [[delivery('echo', { text: 'web' })], [delivery('echo', { text: 12 })], [delivery('echo', { text: 'x' }), true]] as const) {
      const raw = JSON.stringify(d);
      const id = `msg_${randomUUID()}`;
      const at = new Date();
      const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secretA).sign(id, at, raw) };
      const body = tamper ? raw.replace('"x"', '"y"') : raw;
      const web = await h(new Request('http://x/', { method: 'POST', headers, body }));
      const node = await fetch(url, { method: 'POST', headers, body });
      assert.equal(web.status, node.status);
      assert.equal(web.headers.get('content-type'), node.headers.get('content-type'));
      assert.equal(await web.text(), await node.text());
    }
  });

  it('serveNode refuses a body that grows past the limit without a length, and closes the connection', async () => {
    const small = defineAddon({ id: 'small', name: 's', description: 's', webhook: 'https://s', tools: {} });
    const srv = await serveNode(small.handler({ secrets: [secretA], maxBodyBytes: 100 }), 0, '127.0.0.1');
    try {
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request({ port: (srv.address() as { port: number }).port, host: '127.0.0.1', method: 'POST', headers: { 'webhook-id': 'a', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,x' } }, resolve);
        req.on('error', reject);
        req.write('x'.repeat(60));
        setTimeout(() => req.end('y'.repeat(60)), 20);
      });
      assert.equal(res.headers['transfer-encoding'], undefined);
      assert.equal(res.statusCode, 413);
      assert.equal(res.headers.connection, 'close');
      res.resume();
    } finally {
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it('serveNode adapts any other web-standard handler', async () => {
    const srv = await serveNode(async (req) => new Response(`${await req.text()}!`, { status: 201, headers: { 'x-seen': req.method } }), 0, '127.0.0.1');
    try {
      const res = await fetch(`http://127.0.0.1:${(srv.address() as { port: number }).port}/`, { method: 'POST', body: 'hi' });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('x-seen'), 'POST');
      assert.equal(await res.text(), 'hi!');
    } finally {
      srv.closeAllConnections();
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });
});
