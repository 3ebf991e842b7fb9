import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from './http';

/** An MCP app's side of OAuth: what Claude or Cursor would keep, kept in memory. */
export class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  constructor(readonly name = 'Test App', readonly redirect = 'http://127.0.0.1:7777/callback') {}
  get redirectUrl() { return this.redirect; }
  state() { return `st-${Math.random().toString(36).slice(2)}`; }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { if (!this.verifier) throw new Error('no verifier'); return this.verifier; }
}

/** Reads a form out of server-rendered HTML: its action and every field it would submit. */
function readForm(html: string, buttonLabel: RegExp, choose?: Record<string, (value: string, preselected: boolean) => boolean>) {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
  for (const [, attrs, inner] of forms) {
    const button = [...inner!.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].find(([, , label]) => buttonLabel.test(label!.replace(/<[^>]+>/g, '')));
    if (!button) continue;
    const attr = (s: string, name: string) => new RegExp(`${name}="([^"]*)"`, 'i').exec(s)?.[1];
    const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    const fields = new URLSearchParams();
    for (const [input] of inner!.matchAll(/<input\b[^>]*>/gi)) {
      const name = attr(input, 'name');
      if (!name || /type="(submit|button)"/i.test(input)) continue;
      // A checkbox is sent as a browser sends it: only when ticked (as preselected, unless `choose` says), its value or "on".
      if (/type="(checkbox|radio)"/i.test(input)) {
        const value = unescape(attr(input, 'value') ?? 'on');
        const ticked = choose?.[name] ? choose[name]!(value, /\schecked\b/i.test(input)) : /\schecked\b/i.test(input);
        if (ticked) fields.append(name, value);
        continue;
      }
      fields.append(name, unescape(attr(input, 'value') ?? ''));
    }
    const bname = attr(button[1]!, 'name');
    if (bname) fields.append(bname, unescape(attr(button[1]!, 'value') ?? ''));
    return { action: unescape(attr(attrs!, 'action') ?? ''), method: (attr(attrs!, 'method') ?? 'post').toUpperCase(), fields };
  }
  throw new Error(`no form with a button matching ${buttonLabel}`);
}

/** What the person changes on the consent page before pressing: tools to untick, and the later-tools box. */
export interface ConsentChoice {
  /** Tools (`{addonId}__{toolName}`) to untick; the rest stay ticked as the page preselects them. */
  untick?: string[];
  /** Set "Also let it use tools I switch on later" (the page ticks it only when no tool is switched on). */
  newTools?: boolean;
}

/**
 * The person lets the app in through the real consent page, as a browser would with their cookie:
 * the preselected tools ticked (less `choice.untick`), the later-tools box as `choice.newTools`.
 * Returns the redirect the app receives.
 */
export async function consent(person: Client, authorizationUrl: URL, decision: 'allow' | 'deny' = 'allow', choice: ConsentChoice = {}) {
  const page = await person.get(authorizationUrl.toString());
  assert.equal(page.status, 200, `consent page: ${page.status} ${page.text.slice(0, 300)}`);
  const untick = new Set(choice.untick ?? []);
  const form = readForm(page.text, decision === 'allow' ? /^\s*allow\s*$/i : /^\s*deny\s*$/i, {
    tool: (value, preselected) => preselected && !untick.has(value),
    new_tools: (_value, preselected) => choice.newTools ?? preselected,
  });
  const action = new URL(form.action || authorizationUrl.toString(), authorizationUrl);
  const res = await person.request(form.method, action.toString(), form.fields.toString(), {
    'content-type': 'application/x-www-form-urlencoded',
    origin: action.origin,
  });
  assert.ok(res.status === 302 || res.status === 303, `consent answer: ${res.status} ${res.text.slice(0, 300)}`);
  return new URL(res.headers.get('location')!);
}

export interface ConnectOptions {
  name?: string;
  provider?: TestOAuthProvider;
  /** What the client declares at initialize, e.g. `{ elicitation: { url: {} } }`. */
  capabilities?: ClientCapabilities;
  /** Sets handlers (elicitation, notifications) on each client before it connects. */
  prepare?: (client: McpClient) => void;
  /** The transport's fetch (to watch or reroute its requests). */
  fetch?: FetchLike;
  /** What the person unticks or ticks on the consent page. */
  choice?: ConsentChoice;
}

/** Connects the SDK's own MCP client to a person's URL through the full OAuth flow. */
export async function connectApp(mcpUrl: string, person: Client, opts: ConnectOptions = {}) {
  const provider = opts.provider ?? new TestOAuthProvider(opts.name);
  const newClient = () => {
    const c = new McpClient({ name: provider.name, version: '1.0.0' }, opts.capabilities ? { capabilities: opts.capabilities } : undefined);
    opts.prepare?.(c);
    return c;
  };
  const newTransport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, ...(opts.fetch ? { fetch: opts.fetch } : {}) });
  const client = newClient();
  let transport = newTransport();
  try {
    await client.connect(transport);
    return { client, provider, transport };
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  assert.ok(provider.authorizationUrl, 'the client was sent to authorize');
  const back = await consent(person, provider.authorizationUrl, 'allow', opts.choice);
  const code = back.searchParams.get('code');
  assert.ok(code, `redirect carries a code: ${back}`);
  await transport.finishAuth(code);
  transport = newTransport();
  const connected = newClient();
  await connected.connect(transport);
  return { client: connected, provider, transport, redirect: back };
}

/**
 * Calls `tool` one after another until stopped, each answered without `isError`: what a test runs
 * beside a background job to show calls go on meanwhile. `stop()` lets at least `atLeast` be made
 * first, then answers how many were.
 */
export function callsMeanwhile(client: McpClient, tool: string, args: (n: number) => Record<string, unknown>) {
  let calling = true;
  let made = 0;
  const running = (async () => {
    while (calling) {
      const r = (await client.callTool({ name: tool, arguments: args(made) })) as { isError?: boolean };
      assert.ok(!r.isError, 'every call made meanwhile is answered');
      made++;
    }
  })();
  return {
    async stop(atLeast = 1): Promise<number> {
      while (made < atLeast) await new Promise((r) => setTimeout(r, 20));
      calling = false;
      await running;
      return made;
    },
  };
}
