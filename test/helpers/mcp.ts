import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
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
function readForm(html: string, buttonLabel: RegExp) {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
  for (const [, attrs, inner] of forms) {
    const button = [...inner!.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].find(([, , label]) => buttonLabel.test(label!.replace(/<[^>]+>/g, '')));
    if (!button) continue;
    const attr = (s: string, name: string) => new RegExp(`${name}="([^"]*)"`, 'i').exec(s)?.[1];
    const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    const fields = new URLSearchParams();
    for (const [input] of inner!.matchAll(/<input\b[^>]*>/gi)) {
      const name = attr(input, 'name');
      if (name && !/type="(submit|button|checkbox)"/i.test(input)) fields.append(name, unescape(attr(input, 'value') ?? ''));
    }
    const bname = attr(button[1]!, 'name');
    if (bname) fields.append(bname, unescape(attr(button[1]!, 'value') ?? ''));
    return { action: unescape(attr(attrs!, 'action') ?? ''), method: (attr(attrs!, 'method') ?? 'post').toUpperCase(), fields };
  }
  throw new Error(`no form with a button matching ${buttonLabel}`);
}

/**
 * The person lets the app in through the real consent page, as a browser would with their cookie:
 * returns the redirect the app receives.
 */
export async function consent(person: Client, authorizationUrl: URL, decision: 'allow' | 'deny' = 'allow') {
  const page = await person.get(authorizationUrl.toString());
  assert.equal(page.status, 200, `consent page: ${page.status} ${page.text.slice(0, 300)}`);
  const form = readForm(page.text, decision === 'allow' ? /^\s*allow\s*$/i : /^\s*deny\s*$/i);
  const action = new URL(form.action || authorizationUrl.toString(), authorizationUrl);
  const res = await person.request(form.method, action.toString(), form.fields.toString(), {
    'content-type': 'application/x-www-form-urlencoded',
    origin: action.origin,
  });
  assert.ok(res.status === 302 || res.status === 303, `consent answer: ${res.status} ${res.text.slice(0, 300)}`);
  return new URL(res.headers.get('location')!);
}

/** Connects the SDK's own MCP client to a person's URL through the full OAuth flow. */
export async function connectApp(mcpUrl: string, person: Client, opts: { name?: string; provider?: TestOAuthProvider } = {}) {
  const provider = opts.provider ?? new TestOAuthProvider(opts.name);
  const client = new McpClient({ name: provider.name, version: '1.0.0' });
  let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  try {
    await client.connect(transport);
    return { client, provider, transport };
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
  }
  assert.ok(provider.authorizationUrl, 'the client was sent to authorize');
  const back = await consent(person, provider.authorizationUrl);
  const code = back.searchParams.get('code');
  assert.ok(code, `redirect carries a code: ${back}`);
  await transport.finishAuth(code);
  transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  const connected = new McpClient({ name: provider.name, version: '1.0.0' });
  await connected.connect(transport);
  return { client: connected, provider, transport, redirect: back };
}
