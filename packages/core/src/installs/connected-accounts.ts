import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, gt, isNull, lt, notInArray, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { personId } from '../context';
import { sha256 } from '../crypto';
import { notFound, ToolportError } from '../errors';
import { newId, newToken } from '../ids';
import type { Services } from '../services';
import { quotedName } from '../input';
import type { Json } from '../json';
import { accountLinkStates, addonOauthClients, addons, addonVersions, connectedAccounts, installs } from '../db/schema/index';
import type { ManifestAccount } from '../addons/types';
import { OutboundError } from '../outbound/http-client';
import { cleanSentence } from '../text/sentence';
import { accountRedirectUri } from '../addons/oauth-clients';
import { currentManifest, isCurrentRelease } from '../addons/current-release';

/*
 * - A link's `state` is stored by its SHA-256 only, with the PKCE verifier sealed; it names the
 *   person, so the callback refuses it in anyone else's session.
 * - Tokens are sealed, never logged or in an error, span or API answer.
 * - Provider calls go through svc.outbound, for the webhook's SSRF rules.
 */

const ACCOUNT_LINK_LIMITS = {
  /** How long a Connect stays good, start to callback. */
  stateTtlMs: 10 * 60_000,
  /** Links open at once per person; starting another drops the oldest. */
  openStates: 10,
  /** One request to a provider endpoint (token, revocation), body included. */
  providerDeadlineMs: 10_000,
  /** Largest token-endpoint answer read. */
  tokenAnswerBytes: 64 * 1024,
  /** Characters of an access or refresh token accepted. */
  tokenLength: 8 * 1024,
  /** Characters of a granted `scope` kept. */
  scopeLength: 4 * 1024,
  /** Characters of a provider's error and its description repeated to the person. */
  providerMessage: 200,
} as const;

const STATE_PREFIX = 'tpls_';
/** What a state looks like: the prefix and 32 random bytes, base64url. */
const STATE_SHAPE = /^tpls_[A-Za-z0-9_-]{43}$/;
/** An access token that expires later than this is taken to say nothing about when (kept null). */
const MAX_EXPIRES_IN = 10 * 365 * 24 * 3600;

type ConnectedRow = typeof connectedAccounts.$inferSelect;

/** The developer's client for one provider, the secret opened. */
export interface ProviderClient {
  clientId: string;
  clientSecret: string | null;
}


// ---------------------------------------------------------------------------------------------
// Sealing, for this file and account-tokens.ts.

export interface AccountTokens {
  accessToken: string;
  refreshToken: string | null;
}

/** The two tokens as `connected_accounts` stores them: each sealed, the refresh token null when there is none. */
export function sealAccountTokens(svc: Services, t: AccountTokens): { accessTokenEnc: string; refreshTokenEnc: string | null } {
  const box = svc.secrets.connectedAccountBox;
  return { accessTokenEnc: box.seal(t.accessToken), refreshTokenEnc: t.refreshToken === null ? null : box.seal(t.refreshToken) };
}

/** The tokens of a `connected_accounts` row, opened. */
export function openAccountTokens(svc: Services, row: { accessTokenEnc: string; refreshTokenEnc: string | null }): AccountTokens {
  const box = svc.secrets.connectedAccountBox;
  return { accessToken: box.open(row.accessTokenEnc), refreshToken: row.refreshTokenEnc === null ? null : box.open(row.refreshTokenEnc) };
}

// ---------------------------------------------------------------------------------------------
// The token endpoint, for the code exchange here and the refresh in account-tokens.ts.

/** What a token endpoint answered, checked. */
export interface TokenAnswer {
  accessToken: string;
  /** Null: the provider sent none (a refresh then keeps the one it had). */
  refreshToken: string | null;
  /** Seconds, as the provider said; null when it did not. */
  expiresIn: number | null;
  /** The granted scope, space-separated; null when the provider did not say. */
  scope: string | null;
}

/**
 * Why a token request failed, in `details.reason` of the ToolportError it throws:
 * `refused`: the provider answered an OAuth error (invalid_grant: the code or refresh token is no good);
 * `unavailable`: it could not be reached in time or answered 5xx (worth trying again later);
 * `invalid`: what it answered is no token, or the endpoint cannot be called (private, redirects).
 */
export type TokenFailure = 'refused' | 'unavailable' | 'invalid';

const tokenError = (message: string, reason: TokenFailure, oauthError?: string) =>
  new ToolportError('UNAVAILABLE', message, oauthError ? { reason, oauthError } : { reason });

/** A provider's words, repeated to the person: one line, no hidden characters, bounded, and none of what was sent. */
function providerWords(raw: unknown, secrets: string[]): string {
  if (typeof raw !== 'string') return '';
  let text = raw.slice(0, ACCOUNT_LINK_LIMITS.providerMessage * 4);
  for (const s of secrets) if (s.length >= 8) text = text.split(s).join('…');
  return cleanSentence(text, ACCOUNT_LINK_LIMITS.providerMessage);
}

/** `application/json` or `application/x-www-form-urlencoded` (GitHub's default), as an object of strings and numbers. */
function parseTokenBody(body: Buffer, contentType: string): Record<string, unknown> | undefined {
  const text = body.toString('utf8');
  if (/json/i.test(contentType) || /^\s*\{/.test(text)) {
    try {
      const v = JSON.parse(text) as unknown;
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
  if (/x-www-form-urlencoded|text\/plain/i.test(contentType) && /^[\x21-\x7e]*$/.test(text.trim()) && text.includes('=')) {
    return Object.fromEntries(new URLSearchParams(text.trim()));
  }
  return undefined;
}

function outboundSentence(title: string, err: OutboundError): { message: string; reason: TokenFailure } {
  switch (err.errorClass) {
    case 'blocked_address':
      return { message: `Toolport does not call ${title}'s token endpoint: it leads to a private network address. The add-on's developer must give a public token URL.`, reason: 'invalid' };
    case 'bad_url':
      return { message: `${title}'s token URL cannot be called. The add-on's developer must fix it.`, reason: 'invalid' };
    case 'timeout':
      return { message: `${title} did not answer within ${ACCOUNT_LINK_LIMITS.providerDeadlineMs / 1000} seconds. Try again in a while.`, reason: 'unavailable' };
    case 'too_large':
      return { message: `${title} answered with more than ${ACCOUNT_LINK_LIMITS.tokenAnswerBytes / 1024} KB, which is no token answer. Try again later, or tell the add-on's developer.`, reason: 'invalid' };
    case 'dns':
      return { message: `Toolport could not find ${title}'s token endpoint (its host name did not resolve). Try again later.`, reason: 'unavailable' };
    case 'tls':
      return { message: `Toolport could not open a secure connection to ${title}'s token endpoint. Try again later.`, reason: 'unavailable' };
    default:
      return { message: `Toolport could not reach ${title}'s token endpoint. Try again later.`, reason: 'unavailable' };
  }
}

/**
 * RFC 6749 §4.1.3 and §6. A failure's sentence names the provider and never repeats a token, the
 * code, the verifier or the secret.
 */
export async function requestToken(
  svc: Services,
  provider: Pick<ManifestAccount, 'title' | 'tokenUrl'>,
  client: ProviderClient,
  params: Record<string, string>,
): Promise<TokenAnswer> {
  const { title } = provider;
  const form = new URLSearchParams(params);
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
    'user-agent': 'Toolport',
  };
  if (client.clientSecret !== null) headers.authorization = basicAuth(client);
  else form.set('client_id', client.clientId);
  const sent = [...Object.values(params), client.clientSecret ?? ''];
  let res;
  try {
    res = await svc.outbound.request({
      url: provider.tokenUrl,
      method: 'POST',
      headers,
      body: form.toString(),
      deadline: svc.clock.now().getTime() + ACCOUNT_LINK_LIMITS.providerDeadlineMs,
      maxBytes: ACCOUNT_LINK_LIMITS.tokenAnswerBytes,
    });
  } catch (err) {
    if (err instanceof OutboundError) {
      const { message, reason } = outboundSentence(title, err);
      throw tokenError(message, reason);
    }
    throw err;
  }
  if (res.status >= 300 && res.status < 400) {
    throw tokenError(`${title}'s token endpoint answered with a redirect (HTTP ${res.status}), which Toolport does not follow. The add-on's developer must give the token endpoint itself.`, 'invalid');
  }
  const contentType = String(res.headers['content-type'] ?? '');
  const body = parseTokenBody(res.body, contentType);
  // An OAuth error, on a 400 as RFC 6749 §5.2 says or on a 200 as GitHub sends it.
  if (body && typeof body.error === 'string' && body.error) {
    const code = providerWords(body.error, sent);
    const description = providerWords(body.error_description, sent);
    throw tokenError(`${title} refused: ${code}${description ? ` (${description})` : ''}.`, res.status >= 500 ? 'unavailable' : 'refused', code);
  }
  if (res.status >= 500) throw tokenError(`${title} failed to answer (HTTP ${res.status}). Try again later.`, 'unavailable');
  if (res.status !== 200) throw tokenError(`${title} refused the token request (HTTP ${res.status}).`, 'refused');
  if (!body) throw tokenError(`${title} answered with something that is not a token answer (neither JSON nor a form). Tell the add-on's developer.`, 'invalid');
  return checkTokenAnswer(title, body);
}

function checkTokenAnswer(title: string, body: Record<string, unknown>): TokenAnswer {
  const bad = (what: string) => tokenError(`${title} answered without a usable token: ${what}. Tell the add-on's developer.`, 'invalid');
  const { access_token: access, refresh_token: refresh, token_type: type, expires_in: expires, scope } = body;
  if (typeof access !== 'string' || access === '') throw bad('there is no access_token');
  if (access.length > ACCOUNT_LINK_LIMITS.tokenLength || !/^[\x21-\x7e]+$/.test(access)) throw bad(`the access token is not up to ${ACCOUNT_LINK_LIMITS.tokenLength} printable characters`);
  if (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer')) throw bad('the token type is not Bearer');
  if (refresh !== undefined && refresh !== null && (typeof refresh !== 'string' || refresh.length > ACCOUNT_LINK_LIMITS.tokenLength || !/^[\x21-\x7e]*$/.test(refresh))) {
    throw bad('the refresh token is not a string of printable characters');
  }
  let expiresIn: number | null = null;
  if (expires !== undefined && expires !== null && expires !== '') {
    const n = typeof expires === 'string' && /^\d+$/.test(expires) ? Number(expires) : expires;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw bad('expires_in is not a number of seconds');
    expiresIn = n > MAX_EXPIRES_IN ? null : Math.floor(n);
  }
  if (scope !== undefined && scope !== null && typeof scope !== 'string') throw bad('scope is not a string');
  return {
    accessToken: access,
    refreshToken: typeof refresh === 'string' && refresh !== '' ? refresh : null,
    expiresIn,
    scope: typeof scope === 'string' ? scope.slice(0, ACCOUNT_LINK_LIMITS.scopeLength) : null,
  };
}

/** RFC 6749 §2.3.1: the id and secret form-encoded, then joined by a colon. */
const basicAuth = (c: ProviderClient) => {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(c.clientId)}:${enc(c.clientSecret ?? '')}`).toString('base64')}`;
};

// ---------------------------------------------------------------------------------------------
// What the person has installed, and what the add-on declares.

interface InstalledAddon {
  name: string;
  accounts: ManifestAccount[];
}

/** The add-on the person has installed (current release); not installed or deleted is not found alike. */
async function installedAddon(svc: Services, userId: string, addonId: string): Promise<InstalledAddon> {
  const installed = sql`exists (select 1 from ${installs} where ${installs.userId} = ${userId} and ${installs.addonId} = ${addons.id})`;
  const found = await currentManifest(svc.db, and(eq(addons.id, addonId), isNull(addons.deletedAt), installed));
  if (!found) throw notFound('That install');
  return { name: found.name, accounts: found.manifest.accounts ?? [] };
}


function declared(addon: InstalledAddon, provider: string): ManifestAccount {
  const account = addon.accounts.find((a) => a.provider === provider);
  if (!account) throw new ToolportError('NOT_FOUND', `${addon.name} does not use an account at ${quotedName(provider)}.`);
  return account;
}

/** The developer's client for the provider, the secret opened; undefined when none is stored (also for refreshing, account-tokens.ts). */
export async function providerClient(svc: Services, addonId: string, provider: string): Promise<ProviderClient | undefined> {
  const [row] = await svc.db
    .select()
    .from(addonOauthClients)
    .where(and(eq(addonOauthClients.addonId, addonId), eq(addonOauthClients.provider, provider)));
  if (!row) return undefined;
  return { clientId: row.clientId, clientSecret: row.clientSecretEnc === null ? null : svc.secrets.addonOauthClientBox.open(row.clientSecretEnc) };
}

const notReady = (addonName: string, title: string) =>
  new ToolportError('CONFLICT', `The developer of ${addonName} has not set up ${title} yet, so no ${title} account can be connected. Try again later.`);

// ---------------------------------------------------------------------------------------------
// The person's verbs.

const accountView = (a: ManifestAccount, ready: boolean, row: ConnectedRow | undefined) => ({
  provider: a.provider,
  title: a.title,
  scopes: a.scopes,
  ready,
  connected: row !== undefined,
  status: row?.status ?? null,
  failure: row?.failure ?? null,
  connectedAt: row?.createdAt ?? null,
  refreshedAt: row?.refreshedAt ?? null,
});

/** `GET /api/installs/{addonId}/accounts` (each): `ready`, its developer stored an OAuth client; `status` null, not connected. */
export type InstallAccount = Json<ReturnType<typeof accountView>>;

/** `GET /api/installs/{addonId}/accounts`: each provider the current release declares, and the person's account there. No token, ever. */
export async function listInstallAccounts({ ctx, addonId }: { ctx: Ctx; addonId: string }) {
  const userId = personId(ctx);
  const addon = await installedAddon(ctx.svc, userId, addonId);
  if (!addon.accounts.length) return [];
  const [clients, rows] = await Promise.all([
    ctx.svc.db.select({ provider: addonOauthClients.provider }).from(addonOauthClients).where(eq(addonOauthClients.addonId, addonId)),
    ctx.svc.db
      .select()
      .from(connectedAccounts)
      .where(and(eq(connectedAccounts.userId, userId), eq(connectedAccounts.addonId, addonId))),
  ]);
  const ready = new Set(clients.map((c) => c.provider));
  return addon.accounts.map((a) => accountView(a, ready.has(a.provider), rows.find((r) => r.provider === a.provider)));
}

/** `GET /api/accounts` (each): `scope` is what the provider granted. */
export type ConnectedAccount = Json<Awaited<ReturnType<typeof listConnectedAccounts>>[number]>;

/** `GET /api/accounts`: every account the person connected, for any add-on. No token, ever. */
export async function listConnectedAccounts({ ctx }: { ctx: Ctx }) {
  const userId = personId(ctx);
  const rows = await ctx.svc.db
    .select({ account: connectedAccounts, addonName: addons.name, manifest: addonVersions.manifest })
    .from(connectedAccounts)
    .innerJoin(addons, eq(addons.id, connectedAccounts.addonId))
    .leftJoin(addonVersions, isCurrentRelease)
    .where(eq(connectedAccounts.userId, userId))
    .orderBy(addons.name, connectedAccounts.provider);
  return rows.map(({ account, addonName, manifest }) => {
    const declaredNow = ((manifest as { accounts?: ManifestAccount[] } | null)?.accounts ?? []).find((a) => a.provider === account.provider);
    return {
      addonId: account.addonId,
      addonName,
      provider: account.provider,
      title: declaredNow?.title ?? account.provider,
      status: account.status,
      failure: account.failure,
      scope: account.scope,
      connectedAt: account.createdAt,
      refreshedAt: account.refreshedAt,
    };
  });
}

const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export type AccountLink = Awaited<ReturnType<typeof startAccountLink>>;

/** CONFLICT unless installed, declared by the current release, and with a stored client. */
export async function startAccountLink({ ctx, addonId, provider }: { ctx: Ctx; addonId: string; provider: string }) {
  const userId = personId(ctx);
  const { svc } = ctx;
  const addon = await installedAddon(svc, userId, addonId);
  const account = declared(addon, provider);
  const [client] = await svc.db
    .select({ clientId: addonOauthClients.clientId })
    .from(addonOauthClients)
    .where(and(eq(addonOauthClients.addonId, addonId), eq(addonOauthClients.provider, provider)));
  if (!client) throw notReady(addon.name, account.title);

  const state = newToken(STATE_PREFIX);
  const verifier = randomBytes(32).toString('base64url');
  const now = svc.clock.now();
  await svc.db.insert(accountLinkStates).values({
    stateHash: sha256(state),
    userId,
    addonId,
    provider,
    codeVerifierEnc: svc.secrets.accountLinkBox.seal(verifier),
    expiresAt: new Date(now.getTime() + ACCOUNT_LINK_LIMITS.stateTtlMs),
  });
  await pruneStates(svc, userId, now);

  const url = new URL(account.authorizationUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.clientId);
  url.searchParams.set('redirect_uri', accountRedirectUri(svc, addonId, provider));
  if (account.scopes.length) url.searchParams.set('scope', account.scopes.join(' '));
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', challengeOf(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return { authorizationUrl: url.toString() };
}

/**
 * The person's expired links go; of the open ones the newest ten stay. A used link is kept until
 * it expires, so a replay is told apart from a made-up state.
 */
async function pruneStates(svc: Services, userId: string, now: Date) {
  await svc.db.delete(accountLinkStates).where(and(eq(accountLinkStates.userId, userId), lt(accountLinkStates.expiresAt, now)));
  const keep = svc.db
    .select({ h: accountLinkStates.stateHash })
    .from(accountLinkStates)
    .where(and(eq(accountLinkStates.userId, userId), isNull(accountLinkStates.usedAt)))
    .orderBy(desc(accountLinkStates.expiresAt))
    .limit(ACCOUNT_LINK_LIMITS.openStates);
  await svc.db
    .delete(accountLinkStates)
    .where(and(eq(accountLinkStates.userId, userId), isNull(accountLinkStates.usedAt), notInArray(accountLinkStates.stateHash, keep)));
}

/** Where the callback's failure page links back to: the add-on's page, when the state named one the person may see. */
export interface AccountLinkTarget {
  addonId: string;
  provider: string;
}

/** A refusal of the callback: its sentence, and the add-on to link back to when the person may be told it. */
const linkError = (code: 'BAD_REQUEST' | 'UNAUTHORIZED' | 'FORBIDDEN' | 'GONE' | 'NOT_FOUND' | 'CONFLICT' | 'UNAVAILABLE', message: string, back?: AccountLinkTarget) =>
  new ToolportError(code, message, back ? { back } : {});

const AGAIN = "Open the add-on's page in Toolport and press Connect again.";

/**
 * Someone else's session is refused without using up the state, so the person can still sign in
 * and finish: the code is good only with the verifier, which never leaves Toolport.
 */
export async function finishAccountLink({
  svc,
  userId,
  at,
  query,
}: {
  svc: Services;
  userId: string | null;
  /** The add-on and provider the callback's address names (each has its own, accountRedirectUri). */
  at: AccountLinkTarget;
  query: Record<string, string | undefined>;
}): Promise<AccountLinkTarget> {
  const state = query.state;
  if (typeof state !== 'string' || !STATE_SHAPE.test(state)) {
    throw linkError('BAD_REQUEST', `This link does not come from a Connect button of Toolport (its state is missing or not Toolport's). ${AGAIN}`);
  }
  const stateHash = sha256(state);
  const [link] = await svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.stateHash, stateHash));
  if (!link) throw linkError('BAD_REQUEST', `This link to connect an account is unknown or has expired. ${AGAIN}`);
  if (link.addonId !== at.addonId || link.provider !== at.provider) {
    // A code sent back to another flow's address (the mix-up attack, see accountRedirectUri): used
    // up, so it cannot be tried again, and nothing is sent to any token endpoint.
    await svc.db.update(accountLinkStates).set({ usedAt: svc.clock.now() }).where(eq(accountLinkStates.stateHash, stateHash));
    throw linkError('BAD_REQUEST', `This sign-in came back to the address of another add-on's account than the one whose Connect started it, so Toolport did not use it. ${AGAIN}`);
  }
  if (userId === null) {
    throw linkError('UNAUTHORIZED', 'Sign in to Toolport with the account that pressed Connect, then press Connect again.', { addonId: link.addonId, provider: link.provider });
  }
  if (link.userId !== userId) {
    // Someone else's link (a forwarded URL, or a trick to connect another person's account to yours).
    throw linkError('FORBIDDEN', 'This link to connect an account was started by another Toolport account, not the one signed in here. Sign in with the account that pressed Connect, or press Connect again yourself.');
  }
  const back = { addonId: link.addonId, provider: link.provider };
  const now = svc.clock.now();
  // Used once: of two requests with the same state only one gets the row back.
  const [taken] = await svc.db
    .update(accountLinkStates)
    .set({ usedAt: now })
    .where(and(eq(accountLinkStates.stateHash, stateHash), eq(accountLinkStates.userId, userId), isNull(accountLinkStates.usedAt), gt(accountLinkStates.expiresAt, now)))
    .returning();
  if (!taken) {
    throw link.usedAt !== null
      ? linkError('CONFLICT', `This link to connect an account was already used. ${AGAIN}`, back)
      : linkError('GONE', `This link to connect an account expired (it lasts ${ACCOUNT_LINK_LIMITS.stateTtlMs / 60_000} minutes). ${AGAIN}`, back);
  }

  const addon = await installedAddon(svc, userId, link.addonId).catch((err: unknown) => {
    if (err instanceof ToolportError && err.code === 'NOT_FOUND') throw linkError('NOT_FOUND', 'The add-on this account was for is no longer installed. Install it again, then press Connect.');
    throw err;
  });
  const account = addon.accounts.find((a) => a.provider === link.provider);
  if (!account) throw linkError('NOT_FOUND', `${addon.name} no longer uses this account (its new release dropped it).`, undefined);
  const { title } = account;

  if (query.error !== undefined) {
    const code = providerWords(query.error, []);
    const description = providerWords(query.error_description, []);
    if (code === 'access_denied') throw linkError('FORBIDDEN', `${title} was not connected: you did not allow access there (${title} answered access_denied). Press Connect again to retry.`, back);
    throw linkError('BAD_REQUEST', `${title} did not connect the account: it answered ${code || 'an error'}${description ? ` (${description})` : ''}. Press Connect again, or tell the add-on's developer if it keeps happening.`, back);
  }
  const code = query.code;
  if (typeof code !== 'string' || code === '' || code.length > ACCOUNT_LINK_LIMITS.tokenLength) {
    throw linkError('BAD_REQUEST', `${title} sent no authorization code back. Press Connect again.`, back);
  }

  const client = await providerClient(svc, link.addonId, link.provider);
  if (!client) throw linkError('CONFLICT', notReady(addon.name, title).message, back);
  const verifier = svc.secrets.accountLinkBox.open(taken.codeVerifierEnc);
  let answer: TokenAnswer;
  try {
    answer = await requestToken(svc, account, client, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: accountRedirectUri(svc, link.addonId, link.provider),
      code_verifier: verifier,
    });
  } catch (err) {
    if (!(err instanceof ToolportError)) throw err;
    svc.log.warn('account link failed', { addonId: link.addonId, provider: link.provider, reason: err.details.reason, oauthError: err.details.oauthError });
    throw linkError('UNAVAILABLE', `${title} was not connected. ${err.message}`, back);
  }
  await storeTokens(svc, { userId, addonId: link.addonId, provider: link.provider }, answer, account, now);
  return back;
}

/** Connects (or reconnects) the account: fresh tokens, status connected, no failure. */
async function storeTokens(svc: Services, key: { userId: string; addonId: string; provider: string }, answer: TokenAnswer, account: ManifestAccount, now: Date) {
  const values = {
    ...sealAccountTokens(svc, answer),
    // RFC 6749 §5.1: no `scope` in the answer means the scope asked for.
    scope: answer.scope ?? account.scopes.join(' '),
    expiresAt: answer.expiresIn === null ? null : new Date(now.getTime() + answer.expiresIn * 1000),
    status: 'connected' as const,
    failure: null,
    createdAt: now,
    refreshedAt: null,
    refreshLeaseUntil: null,
    tokenUrl: account.tokenUrl,
    revocationUrl: account.revocationUrl ?? null,
  };
  await svc.db
    .insert(connectedAccounts)
    .values({ id: newId('acct'), ...key, ...values })
    .onConflictDoUpdate({ target: [connectedAccounts.userId, connectedAccounts.addonId, connectedAccounts.provider], set: values });
}

// ---------------------------------------------------------------------------------------------
// Disconnecting.

/**
 * RFC 7009: both tokens, since not every provider revokes the grant with the refresh token.
 * null: no endpoint.
 */
async function revokeAtProvider(svc: Services, revocationUrl: string | null, client: ProviderClient | undefined, tokens: AccountTokens, provider: string): Promise<boolean | null> {
  if (!revocationUrl) return null;
  if (!client) return false;
  const one = async (token: string, hint: string) => {
    const form = new URLSearchParams({ token, token_type_hint: hint });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': 'Toolport' };
    if (client.clientSecret !== null) headers.authorization = basicAuth(client);
    else form.set('client_id', client.clientId);
    try {
      const res = await svc.outbound.request({
        url: revocationUrl,
        method: 'POST',
        headers,
        body: form.toString(),
        deadline: svc.clock.now().getTime() + ACCOUNT_LINK_LIMITS.providerDeadlineMs,
        maxBytes: ACCOUNT_LINK_LIMITS.tokenAnswerBytes,
      });
      return res.status === 200;
    } catch (err) {
      if (err instanceof OutboundError) return false;
      throw err;
    }
  };
  const results = [];
  if (tokens.refreshToken !== null) results.push(await one(tokens.refreshToken, 'refresh_token'));
  results.push(await one(tokens.accessToken, 'access_token'));
  const revoked = results.every(Boolean);
  if (!revoked) svc.log.warn('account revocation failed', { provider });
  return revoked;
}

/** Forgets the rows (first: no call uses them from then on), then revokes each at its provider. */
async function forget(svc: Services, rows: ConnectedRow[], accounts: ManifestAccount[], addonId: string) {
  return Promise.all(
    rows.map(async (row) => {
      // A later release cannot move where its tokens go; older rows without it use the current release's.
      const revocationUrl = row.tokenUrl !== null ? row.revocationUrl : (accounts.find((a) => a.provider === row.provider)?.revocationUrl ?? null);
      const client = revocationUrl ? await providerClient(svc, addonId, row.provider) : undefined;
      let tokens: AccountTokens;
      try {
        tokens = openAccountTokens(svc, row);
      } catch {
        return false; // sealed under a key no longer held: nothing to send
      }
      return revokeAtProvider(svc, revocationUrl, client, tokens, row.provider);
    }),
  );
}

/** The declared providers of the add-on's current release, installed or not (for disconnecting after an uninstall). */
async function currentAccounts(svc: Services, addonId: string): Promise<ManifestAccount[]> {
  return (await currentManifest(svc.db, eq(addons.id, addonId)))?.manifest.accounts ?? [];
}

export type Disconnected = Awaited<ReturnType<typeof disconnectAccount>>;

/** Forgotten even if the provider refuses revocation (`revoked` false) or has no endpoint (null). */
export async function disconnectAccount({ ctx, addonId, provider }: { ctx: Ctx; addonId: string; provider: string }) {
  const userId = personId(ctx);
  const addon = await installedAddon(ctx.svc, userId, addonId);
  const gone = await ctx.svc.db
    .delete(connectedAccounts)
    .where(and(eq(connectedAccounts.userId, userId), eq(connectedAccounts.addonId, addonId), eq(connectedAccounts.provider, provider)))
    .returning();
  if (!gone.length) {
    const title = addon.accounts.find((a) => a.provider === provider)?.title ?? quotedName(provider);
    throw new ToolportError('NOT_FOUND', `No ${title} account is connected for ${addon.name}.`);
  }
  const [revoked] = await forget(ctx.svc, gone, addon.accounts, addonId);
  return { revoked: revoked ?? null };
}

/** Revocation failures do not stop the uninstall. */
export async function forgetInstallAccounts(svc: Services, userId: string, addonId: string) {
  await svc.db.delete(accountLinkStates).where(and(eq(accountLinkStates.userId, userId), eq(accountLinkStates.addonId, addonId)));
  const gone = await svc.db
    .delete(connectedAccounts)
    .where(and(eq(connectedAccounts.userId, userId), eq(connectedAccounts.addonId, addonId)))
    .returning();
  if (!gone.length) return;
  await forget(svc, gone, await currentAccounts(svc, addonId), addonId);
}
