import { setTimeout as sleep } from 'node:timers/promises';
import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import { cacheKind } from '../caches';
import type { ToolAccount } from '../calls/enabled-tools';
import { addonOauthClients, connectedAccounts } from '../db/schema/index';
import { ToolportError } from '../errors';
import type { Services } from '../services';
import { openAccountTokens, providerClient, requestToken, type TokenAnswer } from './connected-accounts';

/*
 * One refresh at a time per account across processes (a row lease, `refresh_lease_until`), since a
 * rotating provider treats a resent refresh token as a replay. invalid_grant marks the account
 * `failed`; an unreachable provider only fails the call. No token reaches a log, error, span or call log.
 */

const ACCOUNT_TOKEN_LIMITS = {
  /** A token expiring sooner than this (or than half its life, if shorter) is refreshed before it is sent. */
  refreshMarginMs: 60_000,
  /**
   * How long a process holds an account's refresh: three times the token request's 10 s, so a holder
   * slowed by a busy machine is not overtaken by a second process sending the same refresh token
   * (a rotating provider takes that as a replay and revokes the grant).
   */
  leaseSeconds: 30,
  /** Between two looks at a row another process is refreshing. */
  pollMs: 50,
  /** In-flight refreshes kept per process (one per account being refreshed). */
  inFlight: 10_000,
} as const;

/** A failed account's sentence when none was stored. */
const REFUSED_BEFORE = 'The last renewal of its access was refused.';

/** What the call path reads of a connected account. */
const ROW = {
  id: connectedAccounts.id,
  provider: connectedAccounts.provider,
  status: connectedAccounts.status,
  failure: connectedAccounts.failure,
  accessTokenEnc: connectedAccounts.accessTokenEnc,
  refreshTokenEnc: connectedAccounts.refreshTokenEnc,
  expiresAt: connectedAccounts.expiresAt,
  createdAt: connectedAccounts.createdAt,
  refreshedAt: connectedAccounts.refreshedAt,
  tokenUrl: connectedAccounts.tokenUrl,
};

export interface AccountRow {
  id: string;
  provider: string;
  status: 'connected' | 'failed';
  failure: string | null;
  accessTokenEnc: string;
  refreshTokenEnc: string | null;
  expiresAt: Date | null;
  createdAt: Date;
  refreshedAt: Date | null;
  /** The token endpoint the person connected through; null on rows from before it was kept. */
  tokenUrl: string | null;
}

/** Why a tool's call cannot carry an account: not connected, or connected but refused since (`failure`). */
export interface MissingAccount {
  account: ToolAccount;
  /** The sentence of the last refused refresh; null: the account is not connected. */
  failure: string | null;
}

/** The dashboard link that connects (or reconnects) the account: the add-on's page, its Accounts section. */
export const connectLink = (svc: Services, addonId: string, provider: string) =>
  `${svc.config.publicUrl.replace(/\/+$/, '')}/addons/${addonId}?connect=${provider}`;

/** What a call answers while an account it needs is missing or failed (nothing is delivered). */
export function needsAccountSentence(svc: Services, addonId: string, addonName: string, missing: MissingAccount): string {
  const { account, failure } = missing;
  const link = connectLink(svc, addonId, account.provider);
  if (failure === null) {
    return `The add-on "${addonName}" needs a ${account.title} account before it can run, and none is connected. Connect one in Toolport: ${link}`;
  }
  return `The add-on "${addonName}" can no longer use the ${account.title} account: ${failure} Connect it again in Toolport: ${link}`;
}

/** What a call answers while the developer has stored no OAuth client for the provider: no account can be connected yet. */
export const notSetUpSentence = (addonName: string, missing: MissingAccount) =>
  `The add-on "${addonName}" needs a ${missing.account.title} account, and its developer has not set up connecting one yet, so the call did not run. Try again later.`;

/** Whether the add-on's developer stored an OAuth client for the provider (one primary-key lookup, on the missing-account path only). */
export async function providerReady(svc: Services, addonId: string, provider: string): Promise<boolean> {
  const [row] = await svc.db
    .select({ provider: addonOauthClients.provider })
    .from(addonOauthClients)
    .where(and(eq(addonOauthClients.addonId, addonId), eq(addonOauthClients.provider, provider)));
  return row !== undefined;
}

/** The message of the URL elicitation that offers the connect link (MCP `elicitation/create`). */
export const connectElicitationMessage = (addonName: string, missing: MissingAccount) =>
  missing.failure === null
    ? `${addonName} needs your ${missing.account.title} account: connect it in Toolport, then ask again.`
    : `${addonName} can no longer use your ${missing.account.title} account: connect it again in Toolport, then ask again.`;

async function readRows(svc: Services, userId: string, addonId: string, accounts: ToolAccount[]): Promise<Map<string, AccountRow>> {
  const rows = await svc.db
    .select(ROW)
    .from(connectedAccounts)
    .where(and(eq(connectedAccounts.userId, userId), eq(connectedAccounts.addonId, addonId), inArray(connectedAccounts.provider, accounts.map((a) => a.provider))));
  return new Map(rows.map((r) => [r.provider, r]));
}

/** The first of the tool's accounts that cannot be used, in the tool's order. */
function firstMissing(accounts: ToolAccount[], rows: Map<string, AccountRow>): MissingAccount | undefined {
  for (const account of accounts) {
    const row = rows.get(account.provider);
    if (!row) return { account, failure: null };
    if (row.status === 'failed') return { account, failure: row.failure ?? REFUSED_BEFORE };
  }
  return undefined;
}

/** Before approval. The rows read are reused by a call that goes straight to dispatch. */
export async function checkToolAccounts(
  svc: Services,
  userId: string,
  addonId: string,
  accounts: ToolAccount[],
): Promise<{ missing: MissingAccount } | { rows: Map<string, AccountRow> }> {
  const rows = await readRows(svc, userId, addonId, accounts);
  const missing = firstMissing(accounts, rows);
  return missing ? { missing } : { rows };
}

/** Whether the row's access token should be renewed before it is sent (never when the provider gave no expiry). */
function due(svc: Services, row: AccountRow): boolean {
  if (!row.expiresAt) return false;
  const issued = (row.refreshedAt ?? row.createdAt).getTime();
  const life = row.expiresAt.getTime() - issued;
  const margin = Math.min(ACCOUNT_TOKEN_LIMITS.refreshMarginMs, Math.max(0, life / 2));
  return row.expiresAt.getTime() - svc.clock.now().getTime() <= margin;
}

const expired = (svc: Services, row: AccountRow) => !!row.expiresAt && row.expiresAt.getTime() <= svc.clock.now().getTime();
const sameTime = (a: Date | null, b: Date | null) => (a?.getTime() ?? null) === (b?.getTime() ?? null);

/** How one account's token was had: its access token, the reconnect answer, or a sentence saying why not now. */
type Fetched =
  | { kind: 'token'; accessToken: string }
  | { kind: 'missing'; missing: MissingAccount }
  | { kind: 'unavailable'; message: string; reason: string };

/** The result for a call: every token, sealed for the job, or the first reason there is none. */
export type AccountTokensResult =
  | { kind: 'ok'; sealed: string }
  | { kind: 'missing'; missing: MissingAccount }
  | { kind: 'unavailable'; account: ToolAccount; message: string; reason: string };

/** Each process's refreshes in flight, by account id: every call that needs one waits for the same. */
const REFRESHES = cacheKind('account refreshes', (_svc, scope) => scope.map<string, Promise<Fetched>>(ACCOUNT_TOKEN_LIMITS.inFlight, 60_000));

/**
 * Sealed together as the job carries them (opened only by the worker). `rows` are the check's,
 * only when no approval wait came between.
 */
export async function accountTokensFor(
  svc: Services,
  call: { userId: string; addonId: string; addonName: string; accounts: ToolAccount[]; rows?: Map<string, AccountRow>; deadline: number },
): Promise<AccountTokensResult> {
  const rows = call.rows ?? (await readRows(svc, call.userId, call.addonId, call.accounts));
  const missing = firstMissing(call.accounts, rows);
  if (missing) return { kind: 'missing', missing };
  const fetched = await Promise.all(call.accounts.map((account) => tokenOf(svc, call, account, rows.get(account.provider)!)));
  const tokens: Record<string, { accessToken: string }> = {};
  for (const [i, f] of fetched.entries()) {
    const account = call.accounts[i]!;
    if (f.kind === 'missing') return f;
    if (f.kind === 'unavailable') return { kind: 'unavailable', account, message: f.message, reason: f.reason };
    tokens[account.provider] = { accessToken: f.accessToken };
  }
  // The tokens' own box: what the job carries is the same secret the row holds, for as long as a delivery.
  return { kind: 'ok', sealed: svc.secrets.connectedAccountBox.seal(JSON.stringify(tokens)) };
}

/** The delivery's `accounts` object as JSON text: opened in the worker, put only in the signed body. */
export function accountsJson(svc: Services, sealed: string): string {
  return svc.secrets.connectedAccountBox.open(sealed);
}

type CallOf = Parameters<typeof accountTokensFor>[1];

function tokenOf(svc: Services, call: CallOf, account: ToolAccount, row: AccountRow): Fetched | Promise<Fetched> {
  if (!due(svc, row)) return { kind: 'token', accessToken: openAccountTokens(svc, row).accessToken };
  const flights = svc.caches.get(REFRESHES);
  let flight = flights.get(row.id);
  if (!flight) {
    flight = renew(svc, call, account, row).finally(() => flights.delete(row.id));
    flights.set(row.id, flight);
  }
  return flight;
}

/** Takes the account's refresh lease; the row as it is now, or undefined when another process holds it. */
async function takeLease(svc: Services, id: string): Promise<AccountRow | undefined> {
  const [row] = await svc.db
    .update(connectedAccounts)
    .set({ refreshLeaseUntil: sql.raw(`now() + interval '${ACCOUNT_TOKEN_LIMITS.leaseSeconds} seconds'`) })
    .where(and(eq(connectedAccounts.id, id), or(isNull(connectedAccounts.refreshLeaseUntil), lt(connectedAccounts.refreshLeaseUntil, sql`now()`))))
    .returning(ROW);
  return row;
}

const releaseLease = (svc: Services, id: string) =>
  svc.db.update(connectedAccounts).set({ refreshLeaseUntil: null }).where(eq(connectedAccounts.id, id));

/** The call fails, the account stays as it was: `why` is a whole sentence saying what to do. */
const noAnswer = (account: ToolAccount, why: string, reason: string): Fetched => ({
  kind: 'unavailable',
  message: `The call did not run: Toolport could not renew its access to the ${account.title} account. ${why}`,
  reason,
});


/**
 * Only the refresh token read under the lease is ever sent: with rotating refresh tokens, sending
 * a consumed one revokes the whole grant. Without the lease, watch `refreshed_at` until it moves.
 */
async function renew(svc: Services, call: CallOf, account: ToolAccount, seen: AccountRow): Promise<Fetched> {
  const moved = (row: AccountRow) => !sameTime(row.refreshedAt, seen.refreshedAt);
  for (let takeovers = 0; takeovers < 3; takeovers++) {
    const held = await takeLease(svc, seen.id);
    if (held) {
      if (held.status === 'failed') {
        await releaseLease(svc, held.id);
        return { kind: 'missing', missing: { account, failure: held.failure ?? REFUSED_BEFORE } };
      }
      if (moved(held) || !due(svc, held)) {
        await releaseLease(svc, held.id);
        return { kind: 'token', accessToken: openAccountTokens(svc, held).accessToken };
      }
      return refreshHolding(svc, call, account, held);
    }
    const watched = await watch(svc, seen.id, call.deadline, moved);
    if (watched.kind === 'gone') return { kind: 'missing', missing: { account, failure: null } };
    if (watched.kind === 'row') {
      if (watched.row.status === 'failed') return { kind: 'missing', missing: { account, failure: watched.row.failure ?? REFUSED_BEFORE } };
      return { kind: 'token', accessToken: openAccountTokens(svc, watched.row).accessToken };
    }
    if (watched.kind === 'timeout') return noAnswer(account, 'Its renewal by another Toolport server did not finish in time. Try again in a minute.', 'timeout');
    // Released or expired without a renewal: the holder failed or died. Take the lease in turn.
  }
  return noAnswer(account, `${account.title} did not answer in time. Try again in a minute.`, 'unavailable');
}

/** Watches a row another process is refreshing: renewed (or failed), gone, the lease let go without a renewal, or the deadline. */
async function watch(
  svc: Services,
  id: string,
  deadline: number,
  moved: (row: AccountRow) => boolean,
): Promise<{ kind: 'row'; row: AccountRow } | { kind: 'gone' } | { kind: 'free' } | { kind: 'timeout' }> {
  while (svc.clock.now().getTime() + ACCOUNT_TOKEN_LIMITS.pollMs < deadline) {
    await sleep(ACCOUNT_TOKEN_LIMITS.pollMs);
    const [row] = await svc.db
      .select({ ...ROW, free: sql<boolean>`(${connectedAccounts.refreshLeaseUntil} is null or ${connectedAccounts.refreshLeaseUntil} < now())` })
      .from(connectedAccounts)
      .where(eq(connectedAccounts.id, id));
    if (!row) return { kind: 'gone' };
    const { free, ...account } = row;
    if (account.status === 'failed' || moved(account)) return { kind: 'row', row: account };
    if (free) return { kind: 'free' };
  }
  return { kind: 'timeout' };
}

/** Marks the account failed with a sentence the person reads (dashboard) and the call repeats. */
async function markFailed(svc: Services, row: AccountRow, account: ToolAccount, failure: string): Promise<Fetched> {
  const marked = await svc.db
    .update(connectedAccounts)
    .set({ status: 'failed', failure, refreshLeaseUntil: null })
    .where(and(eq(connectedAccounts.id, row.id), row.refreshTokenEnc === null ? isNull(connectedAccounts.refreshTokenEnc) : eq(connectedAccounts.refreshTokenEnc, row.refreshTokenEnc)))
    .returning({ id: connectedAccounts.id });
  // Not the row the refusal was about (renewed by another process, reconnected, disconnected): it decides.
  return marked.length ? { kind: 'missing', missing: { account, failure } } : answerFromRow(svc, row.id, account);
}

/** What the account's row holds now, when a write of this process lost to another change. */
async function answerFromRow(svc: Services, id: string, account: ToolAccount): Promise<Fetched> {
  const [current] = await svc.db.select(ROW).from(connectedAccounts).where(eq(connectedAccounts.id, id));
  if (!current) return { kind: 'missing', missing: { account, failure: null } };
  if (current.status === 'failed') return { kind: 'missing', missing: { account, failure: current.failure ?? REFUSED_BEFORE } };
  return { kind: 'token', accessToken: openAccountTokens(svc, current).accessToken };
}

/** Under the lease: one token request with the refresh token read under it, then the new tokens stored sealed. */
async function refreshHolding(svc: Services, call: CallOf, account: ToolAccount, row: AccountRow): Promise<Fetched> {
  const where = { addonId: call.addonId, provider: account.provider };
  if (row.refreshTokenEnc === null) {
    // Nothing to renew with: usable until it expires, then only a new connection helps.
    if (!expired(svc, row)) {
      await releaseLease(svc, row.id);
      return { kind: 'token', accessToken: openAccountTokens(svc, row).accessToken };
    }
    return markFailed(svc, row, account, `The access expired, and ${account.title} gave Toolport no way to renew it.`);
  }
  if (row.tokenUrl !== null && row.tokenUrl !== account.tokenUrl) {
    // A release moved the token endpoint: the refresh token goes only where the person connected
    // through, so the person connects again (and so agrees to the new one).
    return markFailed(svc, row, account, `${call.addonName} now renews ${account.title} access at another address than when you connected it, so Toolport stopped using this connection.`);
  }
  let answer: TokenAnswer;
  try {
    const client = await providerClient(svc, call.addonId, account.provider);
    if (!client) {
      await releaseLease(svc, row.id);
      return noAnswer(account, `The developer of ${call.addonName} has not set up ${account.title} (no OAuth client is stored). Try again later.`, 'no_client');
    }
    const { refreshToken } = openAccountTokens(svc, row);
    answer = await requestToken(svc, account, client, { grant_type: 'refresh_token', refresh_token: refreshToken! });
  } catch (err) {
    if (!(err instanceof ToolportError)) {
      await releaseLease(svc, row.id).catch(() => {});
      throw err;
    }
    const { reason, oauthError } = err.details as { reason?: string; oauthError?: string };
    svc.log.warn('account refresh failed', { ...where, reason, oauthError });
    if (oauthError === 'invalid_grant') {
      return markFailed(svc, row, account, `${account.title} no longer accepts Toolport's access to this account (it answered invalid_grant when asked to renew it).`);
    }
    await releaseLease(svc, row.id);
    // The connect helper's sentence: names the provider, never quotes what was sent.
    return noAnswer(account, err.message, reason ?? 'unavailable');
  }
  const now = svc.clock.now();
  const stored = await svc.db
    .update(connectedAccounts)
    .set({
      accessTokenEnc: svc.secrets.connectedAccountBox.seal(answer.accessToken),
      // A provider that sends no new refresh token keeps the one it had (RFC 6749 §6).
      ...(answer.refreshToken !== null ? { refreshTokenEnc: svc.secrets.connectedAccountBox.seal(answer.refreshToken) } : {}),
      ...(answer.scope !== null ? { scope: answer.scope } : {}),
      expiresAt: answer.expiresIn === null ? null : new Date(now.getTime() + answer.expiresIn * 1000),
      refreshedAt: now,
      refreshLeaseUntil: null,
    })
    // Still the row this refresh started from: not disconnected or reconnected meanwhile.
    .where(and(eq(connectedAccounts.id, row.id), eq(connectedAccounts.refreshTokenEnc, row.refreshTokenEnc)))
    .returning({ id: connectedAccounts.id });
  // Disconnected or connected again while this refresh ran: what the row holds now decides.
  if (!stored.length) return answerFromRow(svc, row.id, account);
  return { kind: 'token', accessToken: answer.accessToken };
}
