import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Page } from 'playwright-core';
import { freePort } from './target';

/*
 * "The other service" of the connected-accounts tests (#26): a real OAuth 2 / OpenID provider,
 * oidc-provider 9 (an OpenID-certified implementation), on 127.0.0.1, with its own development
 * login and consent pages (any login name, any password) and one confidential client for Toolport.
 *
 * What it does, so tests can rely on it:
 * - PKCE (S256) is required of every authorization request.
 * - The client authenticates with client_secret_basic at the token, revocation and introspection
 *   endpoints (opts.authMethod: 'client_secret_post' for the other way).
 * - A refresh token is issued with every authorization code exchange for the Toolport client,
 *   without `offline_access` or a consent prompt (`issueRefreshToken` is always true).
 * - Refresh tokens ROTATE by default: each refresh answers a new refresh token and consumes the old
 *   one, and presenting a consumed refresh token again revokes the whole grant (oidc-provider's
 *   replay detection). That is what a careful provider does and what makes "one refresh at a time
 *   across processes" observable. opts.rotateRefreshTokens = false keeps one refresh token.
 * - Access tokens are opaque, live opts.accessTokenTtlSeconds (default 3600), and work at userinfo
 *   when `openid` was among the scopes (scopes offered: openid, profile, notes).
 * - RFC 7009 revocation and RFC 7662 introspection are on.
 * Its notices and warnings ("development-only feature", "you SHOULD change") are filtered out of
 * the console: they are about running it in production, which the tests do not.
 */

export interface OAuthProviderOptions {
  /**
   * Toolport's callback base, `{PUBLIC_URL}/accounts/callback`: the client accepts it and each
   * `{base}/{addon}/{provider}` under it, as a developer registers the one Toolport lists for their
   * add-on and provider (tests make add-ons after the provider starts). Any other address is refused.
   */
  redirectUri: string;
  accessTokenTtlSeconds?: number;
  /** Default true: see above. */
  rotateRefreshTokens?: boolean;
  /** How the client authenticates; default client_secret_basic. */
  authMethod?: 'client_secret_basic' | 'client_secret_post';
  /** The scopes it knows (default openid, profile, notes). */
  scopes?: string[];
}

export interface OAuthProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  authorizationUrl: string;
  tokenUrl: string;
  revocationUrl: string;
  introspectionUrl: string;
  userinfoUrl: string;
  /** The provider's userinfo endpoint asked with `accessToken`: 200 with `{sub, ...}` while it is good, 401 once it is not. */
  userinfo(accessToken: string): Promise<{ status: number; body: any }>;
  /** RFC 7662 introspection as the Toolport client: `{active: false}` for a revoked or unknown token. */
  introspect(token: string): Promise<{ active: boolean; [k: string]: unknown }>;
  /** Paths of every request the provider received, in order (e.g. to count calls to /token). */
  requests: Array<{ method: string; path: string }>;
  close(): Promise<void>;
}

let consoleFiltered = false;
/** oidc-provider says what to change before production on console.info / console.warn, once per process. */
function filterProviderNotices() {
  if (consoleFiltered) return;
  consoleFiltered = true;
  for (const level of ['info', 'warn'] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider ')) return;
      original(...args);
    };
  }
}

export async function startOAuthProvider(opts: OAuthProviderOptions): Promise<OAuthProvider> {
  filterProviderNotices();
  const { default: Provider } = await import('oidc-provider');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = `toolport-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const authMethod = opts.authMethod ?? 'client_secret_basic';
  const rotate = opts.rotateRefreshTokens ?? true;
  const signingKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ format: 'jwk' });

  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [opts.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: authMethod,
      id_token_signed_response_alg: 'ES256',
    }],
    jwks: { keys: [{ ...signingKey, use: 'sig', alg: 'ES256', kid: 'test' }] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    scopes: opts.scopes ?? ['openid', 'profile', 'notes'],
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id, name: id }) }),
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: rotate,
    expiresWithSession: () => false,
    ttl: {
      AccessToken: opts.accessTokenTtlSeconds ?? 3600,
      AuthorizationCode: 60,
      Grant: 14 * 24 * 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 14 * 24 * 3600,
      Session: 14 * 24 * 3600,
    },
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      userinfo: { enabled: true },
      // Opaque access tokens for userinfo, as for an app that names no API (resource).
      resourceIndicators: { enabled: false },
    },
  });
  // Exact match, widened only to the per-add-on addresses under Toolport's callback base.
  const base = opts.redirectUri;
  const perAddon = /^\/[^/?#]+\/[^/?#]+$/;
  (provider.Client.prototype as { redirectUriAllowed(value: string): boolean }).redirectUriAllowed = (value: string) =>
    value === base || (value.startsWith(`${base}/`) && perAddon.test(value.slice(base.length)));
  // A token request a test made fail on purpose is no error of the provider's.
  provider.on('server_error', (_ctx: unknown, err: Error) => console.error('the test OAuth provider failed:', err));

  const requests: Array<{ method: string; path: string }> = [];
  const handler = provider.callback();
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? 'GET', path: new URL(req.url ?? '/', issuer).pathname });
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });

  const clientAuth = (body: URLSearchParams): Record<string, string> => {
    if (authMethod === 'client_secret_post') {
      body.set('client_id', clientId);
      body.set('client_secret', clientSecret);
      return {};
    }
    const enc = (s: string) => encodeURIComponent(s);
    return { authorization: `Basic ${Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64')}` };
  };

  return {
    issuer,
    clientId,
    clientSecret,
    authorizationUrl: `${issuer}/auth`,
    tokenUrl: `${issuer}/token`,
    revocationUrl: `${issuer}/token/revocation`,
    introspectionUrl: `${issuer}/token/introspection`,
    userinfoUrl: `${issuer}/me`,
    requests,
    async userinfo(accessToken) {
      const res = await fetch(`${issuer}/me`, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: res.status, body };
    },
    async introspect(token) {
      const body = new URLSearchParams({ token });
      const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...clientAuth(body) };
      const res = await fetch(`${issuer}/token/introspection`, { method: 'POST', headers, body });
      if (res.status !== 200) throw new Error(`introspection answered ${res.status}: ${await res.text()}`);
      return (await res.json()) as { active: boolean };
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * The person's side at the provider, in Chromium: opens `authorizationUrl` (the one Toolport
 * answered to Connect), signs in on the provider's development login page as `login` (any name;
 * any password), presses Continue on its consent page, and waits until the browser is back on
 * `returnOrigin` (Toolport, default: the origin of the redirect_uri in the URL). Returns the URL it
 * landed on. The provider's page imports a Google font; that request is refused here, offline.
 */
export async function connectInBrowser(
  page: Page,
  authorizationUrl: string,
  login = 'alice',
  opts: { returnOrigin?: string; timeoutMs?: number; /** Press the provider's "[ Cancel ]" instead: it sends back error=access_denied. */ cancel?: boolean } = {},
): Promise<URL> {
  const timeout = opts.timeoutMs ?? 20_000;
  const url = new URL(authorizationUrl);
  const providerOrigin = url.origin;
  const returnOrigin = opts.returnOrigin ?? new URL(url.searchParams.get('redirect_uri') ?? authorizationUrl).origin;
  await page.route(/^https:\/\/fonts\.(googleapis|gstatic)\.com\//, (route) => route.abort());
  const back = (u: URL) => u.origin === returnOrigin && !u.pathname.startsWith('/interaction/');
  await page.goto(authorizationUrl, { waitUntil: 'domcontentloaded' });
  // Login (skipped when the provider still has a session for this browser), then consent (skipped when already granted).
  for (let step = 0; step < 3; step++) {
    const here = new URL(page.url());
    if (here.origin !== providerOrigin || back(here)) break;
    const loginBox = page.locator('input[name=login]');
    const consent = page.locator('input[name=prompt][value=consent]');
    await loginBox.or(consent).first().waitFor({ state: 'attached', timeout });
    if (opts.cancel) {
      await Promise.all([page.waitForURL((u) => u.href !== here.href, { timeout, waitUntil: 'commit' }), page.getByRole('link', { name: '[ Cancel ]' }).click()]);
    } else if (await loginBox.count()) {
      await loginBox.fill(login);
      await page.locator('input[name=password]').fill('any password');
      await Promise.all([page.waitForURL((u) => u.href !== here.href, { timeout, waitUntil: 'commit' }), page.getByRole('button', { name: 'Sign-in' }).click()]);
    } else {
      await Promise.all([page.waitForURL((u) => u.href !== here.href, { timeout, waitUntil: 'commit' }), page.getByRole('button', { name: 'Continue' }).click()]);
    }
    await page.waitForLoadState('domcontentloaded');
  }
  await page.waitForURL((u) => back(u), { timeout, waitUntil: 'domcontentloaded' });
  return new URL(page.url());
}

/**
 * A provider entry for a manifest's `accounts`, pointed at `p`. Scopes default to openid, profile
 * and notes: `openid` makes the access token good at userinfo.
 */
export function accountOf(p: OAuthProvider, provider = 'notes_cloud', extra: { title?: string; scopes?: string[]; revocationUrl?: string | null } = {}) {
  const entry: Record<string, unknown> = {
    provider,
    title: extra.title ?? 'Notes Cloud',
    authorizationUrl: p.authorizationUrl,
    tokenUrl: p.tokenUrl,
    scopes: extra.scopes ?? ['openid', 'profile', 'notes'],
  };
  if (extra.revocationUrl !== null) entry.revocationUrl = extra.revocationUrl ?? p.revocationUrl;
  return entry;
}

/** The Toolport redirect URI of a deployment at `publicUrl`. */
export const accountsCallbackOf = (publicUrl: string) => `${publicUrl.replace(/\/+$/, '')}/accounts/callback`;

let made = 0;
/**
 * A developer registers a public Notes add-on on `hook` that declares `p` as the provider
 * `provider` (tools switched on as `tools`, each tool given `accounts: [provider]` when
 * `toolAccounts`), stores Toolport's client at `p`, and a new person installs it.
 */
export async function personWithAccount(
  baseUrl: string,
  hook: { url: string; setSecret(s: string): void },
  p: OAuthProvider,
  opts: { provider?: string; tools?: Record<string, boolean>; toolAccounts?: boolean; storeClient?: boolean; edit?: (account: Record<string, unknown>) => void } = {},
) {
  const { personWithNotes } = await import('./addon-server');
  const provider = opts.provider ?? 'notes_cloud';
  const account = accountOf(p, provider);
  opts.edit?.(account);
  const person = await personWithNotes(baseUrl, hook, opts.tools ?? { search_notes: true }, `acct${made++}`, (m) => {
    (m as Record<string, unknown>).accounts = [account];
    if (opts.toolAccounts) for (const t of m.tools) (t as Record<string, unknown>).accounts = [provider];
  });
  if (opts.storeClient ?? true) {
    const put = await person.dev.client.put(`/api/addons/${person.addonId}/accounts/${provider}/client`, { clientId: p.clientId, clientSecret: p.clientSecret });
    if (put.status !== 200) throw new Error(`storing the OAuth client failed: ${put.status} ${put.text}`);
  }
  return { ...person, provider };
}
