// Issue #26, the kits' side of connected accounts: a tool lists the providers it acts on
// (`accounts: ["github"]`), `ctx.accounts.github.accessToken` is typed from that list, the kit
// takes each token from the signed body's `accounts` (only the tool's own, checked for shape) and
// fails a call whose account the body lacks (Toolport never sends one: the code and the registered
// manifest disagree). The Notes examples' `export_notes` then works against a real OAuth provider
// (oidc-provider, test/helpers/oauth-provider.ts) with a token got through its own login and consent.
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { signatureHeaders } from '../packages/core/src/outbound/signing';
import { launchBrowser } from './helpers/browser';
import { connectInBrowser, startOAuthProvider, type OAuthProvider } from './helpers/oauth-provider';
import { runToEnd } from './helpers/process';

const whsec = `whsec_${randomBytes(32).toString('base64')}`;
const root = path.resolve(import.meta.dirname, '..');

/** A signed delivery as Toolport writes it, `accounts` included when given. */
function signed(tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}, type = 'tool.call') {
  const callId = `call_${randomUUID()}`;
  const body = JSON.stringify({
    type, addon: 'kit', tool, arguments: args,
    call: { id: callId, deadline: new Date(Date.now() + 30_000).toISOString(), attempt: 1 },
    user: { id: 'usr_acct' }, app: { name: 'Test', clientId: 'c' },
    ...extra,
  });
  return { body, headers: signatureHeaders({ id: callId, timestamp: Date.now() / 1000, body, secrets: [whsec] }) };
}

async function deliver(handler: (r: Request) => Promise<Response>, tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}, type = 'tool.call') {
  const { body, headers } = signed(tool, args, extra, type);
  const res = await handler(new Request('http://kit.test/webhook', { method: 'POST', headers, body }));
  assert.equal(res.status, 200);
  return (await res.json()) as any;
}

const GITHUB = {
  provider: 'github', title: 'GitHub',
  authorizationUrl: 'https://github.com/login/oauth/authorize', tokenUrl: 'https://github.com/login/oauth/access_token',
  scopes: ['gist', 'read:user'],
} as const;
const CLOUD = {
  provider: 'notes_cloud', title: 'Notes Cloud',
  authorizationUrl: 'https://notes-cloud.example.com/oauth/authorize', tokenUrl: 'https://notes-cloud.example.com/oauth/token',
  revocationUrl: 'https://notes-cloud.example.com/oauth/revoke', scopes: [],
} as const;

describe('the TypeScript kit: ctx.accounts', () => {
  it('types ctx.accounts from the tool\'s accounts, and the add-on\'s accounts bound what a tool may list', async () => {
    const { defineAddon, setting, settings, tool } = await import('@toolport/addon-kit');
    const kit = settings({ api_key: setting.secret({ title: 'API key', required: true }) });
    const gist = tool({
      title: 'Gist', summary: 'Makes a gist.', accounts: ['github'],
      run: (_a, ctx) => {
        const token: string = ctx.accounts.github.accessToken; // no optional chaining: always there
        // @ts-expect-error a provider the tool does not list is not on the type
        void ctx.accounts.notes_cloud;
        return token;
      },
      confirm: (_a, ctx) => {
        // @ts-expect-error a confirm may come without the account
        void ctx.accounts.github.accessToken;
        return { message: ctx.accounts.github?.accessToken ? 'with' : 'without' };
      },
    });
    const plain = tool({
      title: 'Plain', summary: 'Needs no account.',
      // @ts-expect-error a tool that lists no provider has none
      run: (_a, ctx) => ctx.accounts.github.accessToken,
    });
    const both = kit.tool({
      title: 'Both', summary: 'Settings and two accounts.', accounts: ['github', 'notes_cloud'],
      run: (_a, ctx) => `${ctx.settings.api_key.length} ${ctx.accounts.github.accessToken} ${ctx.accounts.notes_cloud.accessToken}`,
    });
    const gitlab = tool({ title: 'GitLab', summary: 'Lists an undeclared provider.', accounts: ['gitlab'], run: () => 'x' });
    defineAddon({ id: 'kit-types', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', settings: kit, accounts: [GITHUB, CLOUD], tools: { gist, plain, both } });
    assert.throws(
      // @ts-expect-error the add-on does not declare gitlab
      () => defineAddon({ id: 'kit-types', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', accounts: [GITHUB], tools: { gitlab } }),
      { name: 'TypeError', message: 'tools.gitlab.accounts lists "gitlab", which the add-on does not declare: add it to defineAddon({ accounts: [...] }).' },
    );
    assert.throws(() => defineAddon({
      id: 'kit-types', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', accounts: [GITHUB],
      tools: {
        // @ts-expect-error written inline, the same
        gl: tool({ title: 'GitLab', summary: 'Lists an undeclared provider.', accounts: ['gitlab'], run: (_a, ctx) => ctx.accounts.gitlab.accessToken }),
      },
    }), /tools\.gl\.accounts lists "gitlab"/);
    assert.throws(
      // @ts-expect-error an add-on that declares no provider has none to give
      () => defineAddon({ id: 'kit-types', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', tools: { gist } }),
      /tools\.gist\.accounts lists "github", which the add-on does not declare/,
    );
  });

  it('writes the providers and each tool\'s list to the manifest, and refuses a list it cannot keep', async () => {
    const { defineAddon, tool } = await import('@toolport/addon-kit');
    const addon = defineAddon({
      id: 'kit-accounts', name: 'Kit', description: 'Acts on accounts.', webhook: 'https://kit.example.com/hook', accounts: [GITHUB, CLOUD],
      tools: {
        gist: tool({ title: 'Gist', summary: 'Makes a gist and returns its URL.', accounts: ['github'], run: () => 'x' }),
        plain: tool({ title: 'Plain', summary: 'Returns a word.', accounts: [], run: () => 'x' }),
      },
    });
    const m = addon.manifest();
    assert.deepEqual(Object.keys(m), ['id', 'name', 'description', 'webhook', 'tools', 'accounts']);
    assert.deepEqual(m.accounts, [
      { provider: 'github', title: 'GitHub', authorizationUrl: GITHUB.authorizationUrl, tokenUrl: GITHUB.tokenUrl, scopes: ['gist', 'read:user'] },
      { provider: 'notes_cloud', title: 'Notes Cloud', authorizationUrl: CLOUD.authorizationUrl, tokenUrl: CLOUD.tokenUrl, revocationUrl: CLOUD.revocationUrl, scopes: [] },
    ]);
    assert.deepEqual(m.tools[0], { name: 'gist', title: 'Gist', summary: 'Makes a gist and returns its URL.', accounts: ['github'], arguments: [] });
    assert.equal('accounts' in m.tools[1]!, false, 'an empty list is left out');
    // Toolport's own manifest check accepts what the kit writes.
    const { checkManifest } = await import('../packages/core/src/addons/manifest');
    const checked = checkManifest(m);
    assert.deepEqual(checked.manifest.accounts?.map((a) => a.provider), ['github', 'notes_cloud']);
    assert.deepEqual(checked.manifest.tools.map((t) => (t as { accounts?: string[] }).accounts), [['github'], undefined]);

    const bad: Array<[unknown, RegExp]> = [
      [['github', 'github'], /lists "github" twice/],
      ['github', /must be a list of provider names/],
      [['GitHub'], /each entry is a provider name/],
      [['a1', 'a2', 'a3', 'a4', 'a5', 'a6'], /at most 5/],
    ];
    for (const [listed, message] of bad) {
      const t = tool({ title: 'T', summary: 'T.', run: () => 'x' });
      (t as any).accounts = listed;
      assert.throws(() => defineAddon({ id: 'kit-accounts', name: 'K', description: '', webhook: 'https://k.example.com', accounts: [GITHUB], tools: { t } }), { name: 'TypeError', message });
    }
  });

  it('gives a tool its own tokens and no others, and fails a call whose account the body lacks, running nothing', async () => {
    const { defineAddon, tool } = await import('@toolport/addon-kit');
    const seen: unknown[] = [];
    const errors: Array<{ message: string; tool?: string }> = [];
    const addon = defineAddon({
      id: 'kit-accounts', name: 'Kit', description: '', webhook: 'https://kit.example.com/hook', accounts: [GITHUB, CLOUD],
      tools: {
        gist: tool({
          title: 'Gist', summary: 'Makes a gist.', accounts: ['github'],
          run: (_a, ctx) => {
            seen.push({ ...ctx.accounts });
            return `token of ${ctx.accounts.github.accessToken.length} characters`;
          },
        }),
        both: tool({
          title: 'Both', summary: 'Deletes with both.', destructive: true, accounts: ['github', 'notes_cloud'],
          confirm: (_a, ctx) => ({ message: `With ${Object.keys(ctx.accounts).join(', ') || 'none'}?` }),
          run: (_a, ctx) => Object.keys(ctx.accounts).join(','),
        }),
        plain: tool({ title: 'Plain', summary: 'Needs none.', run: (_a, ctx) => `accounts: ${JSON.stringify(ctx.accounts)}` }),
      },
    });
    const handler = addon.handler({ secrets: [whsec], onError: (err, where) => errors.push({ message: (err as Error).message, tool: where.tool }) });
    const sent = { github: { accessToken: 'gho_abc123' }, notes_cloud: { accessToken: 'nc_xyz' }, other: { accessToken: 'o' } };

    assert.deepEqual(await deliver(handler, 'gist', {}, { accounts: sent }), { text: 'token of 10 characters' });
    assert.deepEqual(seen.at(-1), { github: { accessToken: 'gho_abc123' } }, 'only the providers the tool lists');
    assert.deepEqual(await deliver(handler, 'both', {}, { accounts: sent }), { text: 'github,notes_cloud' });
    assert.deepEqual(await deliver(handler, 'plain', {}, { accounts: sent }), { text: 'accounts: {}' }, 'a tool that lists none gets none');
    // A confirm runs with what arrived: Toolport checks the accounts before it asks the person.
    assert.deepEqual(await deliver(handler, 'both', {}, {}, 'tool.confirm'), { confirm: { message: 'With none?' } });
    assert.deepEqual(await deliver(handler, 'both', {}, { accounts: { github: sent.github } }, 'tool.confirm'), { confirm: { message: 'With github?' } });
    assert.equal(errors.length, 0);

    const missing = 'This tool needs the person\'s GitHub account ("github") and the call carries none, so it did not run. ' +
      'Toolport sends it when the add-on\'s registered manifest lists "github" in this tool\'s accounts: push the current addon.json.';
    const malformed = 'The GitHub account ("github") this call carries is not a usable access token, so the tool did not run.';
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, missing],
      [{ accounts: {} }, missing],
      [{ accounts: null }, missing],
      [{ accounts: ['gho_in_a_list'] }, missing],
      [{ accounts: { github: null } }, missing],
      [{ accounts: { notes_cloud: { accessToken: 'nc' } } }, missing],
      [{ accounts: { github: { accessToken: '' } } }, malformed],
      [{ accounts: { github: { accessToken: 42 } } }, malformed],
      [{ accounts: { github: 'gho_plain_string' } }, malformed],
      [{ accounts: { github: { access_token: 'gho_snake' } } }, malformed],
      [{ accounts: { github: { accessToken: 'gho_line\r\nx-injected: 1' } } }, malformed],
      [{ accounts: { github: { accessToken: 'g'.repeat(16_385) } } }, malformed],
      [{ accounts: { github: { accessToken: 'gh\u00f6' } } }, malformed],
    ];
    const before = seen.length;
    for (const [extra, sentence] of cases) {
      const answer = await deliver(handler, 'gist', {}, extra);
      assert.deepEqual(answer, { error: sentence, failed: true }, JSON.stringify(extra).slice(0, 80));
    }
    assert.equal(seen.length, before, 'run was never called');
    assert.equal(errors.length, cases.length, 'each reached onError');
    assert.ok(errors.every((e) => e.tool === 'gist' && !e.message.includes('gho_')), 'no token in what is logged');
    assert.deepEqual(await deliver(handler, 'gist', {}, { accounts: { github: { accessToken: 'g'.repeat(16_384) } } }), { text: 'token of 16384 characters' });
  });

  it('Python: the kit\'s own unittest of accounts passes', async () => {
    const run = await runToEnd('python3', ['-m', 'unittest', 'test_accounts'], { cwd: path.join(root, 'packages/addon-kit-python/tests') });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /Ran [1-9]\d* tests?[\s\S]*OK/);
  });
});

/**
 * The Python Notes example in a child process: builds its handler with `userinfoUrl`, answers each
 * signed delivery in turn (one in-memory store for all), and prints the answers.
 */
async function pythonNotes(userinfoUrl: string, deliveries: Array<ReturnType<typeof signed>>) {
  const script = [
    'import json, sys',
    'sys.path[:0] = [sys.argv[1], sys.argv[2]]',
    'from notes_addon import create_notes_addon',
    'job = json.load(sys.stdin)',
    'errors = []',
    'h = create_notes_addon(userinfo_url=job["userinfo"]).handler(secrets=[job["secret"]], on_error=lambda e, w: errors.append(str(e)))',
    'out = [json.loads(h.handle("POST", d["headers"], d["body"].encode()).body) for d in job["deliveries"]]',
    'print(json.dumps({"answers": out, "errors": errors}))',
  ].join('\n');
  const run = await runToEnd('python3', ['-c', script, path.join(root, 'examples/notes-python'), path.join(root, 'packages/addon-kit-python/src')], {
    cwd: root,
    input: JSON.stringify({ userinfo: userinfoUrl, secret: whsec, deliveries }),
  });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as { answers: any[]; errors: string[] };
}

describe('the Notes examples: export_notes with a Notes Cloud account from a real OAuth provider', () => {
  let provider: OAuthProvider;
  let callback: http.Server;
  let closeBrowser: () => Promise<void>;
  let accessToken: string;

  before(async () => {
    // The redirect URI: where the provider sends the browser back with the code, as it would to Toolport.
    const codes: string[] = [];
    callback = http.createServer((req, res) => {
      const code = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('code');
      if (code) codes.push(code);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('back');
    });
    await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
    const redirectUri = `http://127.0.0.1:${(callback.address() as { port: number }).port}/accounts/callback`;
    provider = await startOAuthProvider({ redirectUri });

    // The authorization-code flow with PKCE, the person signing in and consenting in Chromium.
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(provider.authorizationUrl);
    for (const [k, v] of Object.entries({
      client_id: provider.clientId, response_type: 'code', redirect_uri: redirectUri, scope: 'openid profile notes',
      state: randomBytes(16).toString('base64url'), code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    })) authorize.searchParams.set(k, v);
    const launched = await launchBrowser();
    closeBrowser = launched.close;
    const page = await launched.browser.newPage();
    await connectInBrowser(page, authorize.href, 'alice');
    assert.equal(codes.length, 1, 'the provider sent the browser back with a code');
    const token = await fetch(provider.tokenUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded', accept: 'application/json',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(provider.clientId)}:${encodeURIComponent(provider.clientSecret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: codes[0]!, redirect_uri: redirectUri, code_verifier: verifier }),
    });
    assert.equal(token.status, 200, await token.clone().text());
    accessToken = ((await token.json()) as { access_token: string }).access_token;
    assert.equal((await provider.userinfo(accessToken)).body.sub, 'alice');
  });

  after(async () => {
    await closeBrowser?.();
    await provider?.close();
    await new Promise<void>((r) => (callback ? callback.close(() => r()) : r()));
  });

  it('TypeScript: the delivered token reaches the provider\'s userinfo; without it the call fails plainly; the other tools need none', async () => {
    const { createNotesAddon } = await import('@toolport/example-notes');
    const { NoteStore } = await import('../examples/notes/src/store');
    const notes = createNotesAddon(new NoteStore(), undefined, { userinfoUrl: provider.userinfoUrl });
    const m = notes.manifest();
    assert.deepEqual(m.accounts?.map((a) => a.provider), ['notes_cloud']);
    assert.deepEqual(m.tools.map((t) => [t.name, t.accounts ?? []]), [['search_notes', []], ['add_note', []], ['delete_note', []], ['export_notes', ['notes_cloud']]]);
    const handler = notes.handler({ secrets: [whsec], onError: () => {} });
    await deliver(handler, 'add_note', { text: 'Groceries\nOat milk' });
    await deliver(handler, 'add_note', { text: 'Ideas\nA lamp' });

    const exported = await deliver(handler, 'export_notes', {}, { accounts: { notes_cloud: { accessToken } } });
    assert.deepEqual({ ...exported.json, markdown: undefined }, { account: 'alice', exported: 2, total: 2, markdown: undefined });
    assert.equal(exported.json.markdown, '# Notes of alice\n\n## Ideas\n\nIdeas\nA lamp\n\n## Groceries\n\nGroceries\nOat milk');
    const one = await deliver(handler, 'export_notes', { query: 'milk' }, { accounts: { notes_cloud: { accessToken } } });
    assert.equal(one.json.exported, 1);

    const missing = await deliver(handler, 'export_notes', {}, {});
    assert.equal(missing.failed, true);
    assert.match(missing.error, /needs the person's Notes Cloud account \("notes_cloud"\) and the call carries none/);
    const bogus = await deliver(handler, 'export_notes', {}, { accounts: { notes_cloud: { accessToken: 'not-a-token-the-provider-issued' } } });
    assert.deepEqual(bogus, { error: "Notes Cloud no longer accepts the connected account: reconnect Notes Cloud on the add-on's page in Toolport, then try again." });
    assert.equal((await deliver(handler, 'search_notes', {})).json.total, 2, 'search_notes runs without an account');
  });

  it('Python: the same, and a token revoked at the provider asks the person to reconnect', async () => {
    const run = await pythonNotes(provider.userinfoUrl, [
      signed('add_note', { text: 'Groceries\nOat milk' }),
      signed('export_notes', {}, { accounts: { notes_cloud: { accessToken } } }),
      signed('export_notes', {}, {}),
      signed('search_notes', {}),
    ]);
    const [, exported, missing, found] = run.answers;
    assert.deepEqual(exported, { json: { account: 'alice', exported: 1, total: 1, markdown: '# Notes of alice\n\n## Groceries\n\nGroceries\nOat milk' } });
    assert.equal(missing.failed, true);
    assert.match(missing.error, /needs the person's Notes Cloud account \("notes_cloud"\) and the call carries none/);
    assert.equal(found.json.total, 1);
    assert.equal(run.errors.length, 1, 'the missing account reached on_error');
    assert.ok(!run.errors[0]!.includes(accessToken));

    // Revoked at the provider (RFC 7009), as disconnecting does: userinfo then refuses it.
    const revoked = await fetch(provider.revocationUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(provider.clientId)}:${encodeURIComponent(provider.clientSecret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: accessToken, token_type_hint: 'access_token' }),
    });
    assert.equal(revoked.status, 200);
    const again = await pythonNotes(provider.userinfoUrl, [signed('export_notes', {}, { accounts: { notes_cloud: { accessToken } } })]);
    assert.deepEqual(again.answers[0], { error: "Notes Cloud no longer accepts the connected account: reconnect Notes Cloud on the add-on's page in Toolport, then try again." });
  });
});
