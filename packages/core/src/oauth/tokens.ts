import { createHash } from 'node:crypto';
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { jwtVerify, type JWTHeaderParameters } from 'jose';
import { safeEqual, sha256 } from '../crypto';
import { oauthCodes, oauthGrants, oauthRefreshTokens } from '../db/schema/index';
import { newToken } from '../ids';
import type { Services } from '../services';
import { authenticateClient, findClient } from './clients';
import type { OAuthClient } from './client-metadata';
import { oauthError } from './errors';
import { revokeGrant } from './grants';
import { keyStore, signAccessToken } from './keys';
import { issuerOf } from './metadata';

const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600 * 1000;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface TokenRequest {
  form: URLSearchParams;
  /** The Authorization header, for client_secret_basic. */
  authorization?: string;
}

const tokenResponse = (access: { token: string; expiresIn: number }, refresh: string, scope: string): TokenResponse => ({
  access_token: access.token,
  token_type: 'Bearer',
  expires_in: access.expiresIn,
  refresh_token: refresh,
  scope,
});

/** RFC 6749 §3.2: no parameter may appear twice. */
function single(form: URLSearchParams) {
  for (const key of new Set(form.keys())) {
    if (form.getAll(key).length > 1) throw oauthError('invalid_request', `The ${key} parameter is repeated.`);
  }
}

const pkceOk = (verifier: string, challenge: string) =>
  /^[A-Za-z0-9\-._~]{43,128}$/.test(verifier) &&
  safeEqual(createHash('sha256').update(verifier, 'ascii').digest('base64url'), challenge);

async function liveGrant(svc: Services, grantId: string) {
  const [grant] = await svc.db
    .select({ id: oauthGrants.id, userId: oauthGrants.userId })
    .from(oauthGrants)
    .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)));
  if (!grant) throw oauthError('invalid_grant', 'This connection was revoked.');
  return grant;
}

async function issueTokens(
  svc: Services,
  grant: { id: string; userId: string },
  client: OAuthClient,
  scope: string,
  resource: string,
): Promise<TokenResponse> {
  const { token, expiresIn } = await signAccessToken(svc, {
    userId: grant.userId,
    clientId: client.id,
    grantId: grant.id,
    scope,
    audience: resource,
  });
  const refresh = newToken('tprt_');
  await svc.db.insert(oauthRefreshTokens).values({
    tokenHash: sha256(refresh),
    grantId: grant.id,
    clientId: client.id,
    scope,
    resource,
    createdAt: svc.clock.now(),
    expiresAt: new Date(svc.clock.now().getTime() + REFRESH_TOKEN_TTL_MS),
  });
  return tokenResponse({ token, expiresIn }, refresh, scope);
}

async function redeemCode(svc: Services, client: OAuthClient, form: URLSearchParams): Promise<TokenResponse> {
  const code = form.get('code');
  if (!code) throw oauthError('invalid_request', 'Send the code.');
  const codeHash = sha256(code);
  const now = svc.clock.now();
  // One conditional update: of two concurrent redemptions exactly one gets the row.
  const [row] = await svc.db
    .update(oauthCodes)
    .set({ usedAt: now })
    .where(and(eq(oauthCodes.codeHash, codeHash), isNull(oauthCodes.usedAt)))
    .returning();
  if (!row) {
    const [used] = await svc.db.select({ grantId: oauthCodes.grantId }).from(oauthCodes).where(eq(oauthCodes.codeHash, codeHash));
    // A code redeemed twice was intercepted (RFC 9700 §4.5): end everything the first redemption gave.
    if (used) {
      await revokeGrant(svc, used.grantId, 'replay');
      throw oauthError('invalid_grant', 'This code was already used; the connection it made has been revoked.');
    }
    throw oauthError('invalid_grant', 'The code is wrong or expired.');
  }
  if (row.expiresAt <= now) throw oauthError('invalid_grant', 'The code has expired.');
  if (row.clientId !== client.id) throw oauthError('invalid_grant', 'The code was issued to another client.');
  const redirectUri = form.get('redirect_uri');
  if (redirectUri === null ? !(client.redirectUris.length === 1 && client.redirectUris[0] === row.redirectUri) : redirectUri !== row.redirectUri) {
    throw oauthError('invalid_grant', 'redirect_uri does not match the authorization request.');
  }
  const verifier = form.get('code_verifier');
  if (!verifier) throw oauthError('invalid_request', 'Send code_verifier (PKCE).');
  if (!pkceOk(verifier, row.codeChallenge)) throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge.');
  const resource = form.get('resource');
  if (resource !== null && resource !== row.resource) throw oauthError('invalid_target', 'resource differs from the authorization request.');
  const grant = await liveGrant(svc, row.grantId);
  return issueTokens(svc, grant, client, row.scope, row.resource);
}

/**
 * The SDK clients refresh once per failed request without coordinating, so one refresh token
 * arrives several times at once. RFC 9700 §4.14.2 says reuse revokes the family; within this window
 * it gets the family's current token instead, however often it rotated meanwhile (no new branch, so
 * a thief's next rotation is still a replay).
 */
export const REFRESH_GRACE_MS = 10_000;

const replayed = () => oauthError('invalid_grant', 'This refresh token was already used; the connection has been revoked.');

async function rotateRefreshToken(svc: Services, client: OAuthClient, form: URLSearchParams): Promise<TokenResponse> {
  const token = form.get('refresh_token');
  if (!token) throw oauthError('invalid_request', 'Send the refresh_token.');
  const tokenHash = sha256(token);
  const now = svc.clock.now();
  const [held] = await svc.db
    .select({ token: oauthRefreshTokens, userId: oauthGrants.userId, revokedAt: oauthGrants.revokedAt })
    .from(oauthRefreshTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
    .where(eq(oauthRefreshTokens.tokenHash, tokenHash));
  if (!held || held.token.expiresAt <= now) throw oauthError('invalid_grant', 'The refresh token is wrong or expired.');
  const row = held.token;
  if (row.clientId !== client.id) {
    // A spent token from another client: two parties hold it. A live one is refused, nothing ends.
    if (row.usedAt && !held.revokedAt) {
      await revokeGrant(svc, row.grantId, 'replay');
      throw replayed();
    }
    throw oauthError('invalid_grant', 'The refresh token is wrong or expired.');
  }
  // Every refusal from here to the rotation changes nothing: the token stays as it was, and the
  // app's next request hears the same sentence, not "already used".
  if (held.revokedAt) throw oauthError('invalid_grant', 'This connection was revoked.');
  const scope = form.get('scope');
  if (scope !== null && scope.split(' ').filter(Boolean).some((s) => !row.scope.split(' ').includes(s))) {
    throw oauthError('invalid_scope', 'The scope asked for is more than was granted.');
  }
  const resource = form.get('resource');
  if (resource !== null && resource !== row.resource) throw oauthError('invalid_target', 'resource differs from the one granted.');

  const grant = { id: row.grantId, userId: held.userId };
  if (row.usedAt) return answerRace(svc, client, grant, token, row.usedAt, now);
  const [successor] = svc.secrets.refreshSuccessors(token);
  const access = await signAccessToken(svc, { userId: grant.userId, clientId: client.id, grantId: grant.id, scope: row.scope, audience: row.resource });
  // Spent and replaced in one transaction: a refusal or a failure inside rolls back and burns
  // nothing; of concurrent requests one spends it, the others wait for its commit and then race.
  const spent = await svc.db.transaction(async (tx) => {
    const [won] = await tx
      .update(oauthRefreshTokens)
      .set({ usedAt: now })
      .where(and(eq(oauthRefreshTokens.tokenHash, tokenHash), isNull(oauthRefreshTokens.usedAt)))
      .returning({ usedAt: oauthRefreshTokens.usedAt });
    if (!won) return false;
    const [live] = await tx
      .select({ id: oauthGrants.id })
      .from(oauthGrants)
      .where(and(eq(oauthGrants.id, grant.id), isNull(oauthGrants.revokedAt)));
    if (!live) throw oauthError('invalid_grant', 'This connection was revoked.');
    await tx.insert(oauthRefreshTokens).values({
      tokenHash: sha256(successor!),
      grantId: grant.id,
      clientId: client.id,
      scope: row.scope,
      resource: row.resource,
      createdAt: now,
      expiresAt: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS),
    });
    return true;
  });
  if (!spent) {
    const [after] = await svc.db.select({ usedAt: oauthRefreshTokens.usedAt }).from(oauthRefreshTokens).where(eq(oauthRefreshTokens.tokenHash, tokenHash));
    return answerRace(svc, client, grant, token, after?.usedAt ?? now, svc.clock.now());
  }
  return tokenResponse(access, successor!, row.scope);
}

/**
 * How many rotations a racing request may be behind: an SDK whose parallel requests each refresh
 * once can rotate several times within the window, while a straggler still holds the first token.
 */
const RACE_GENERATIONS = 8;

/**
 * A token spent within the window gets the family's live head, following its successors through
 * rotations each also spent within the window; otherwise it is a replay, and the family is revoked.
 */
async function answerRace(
  svc: Services,
  client: OAuthClient,
  grant: { id: string; userId: string },
  token: string,
  usedAt: Date,
  now: Date,
): Promise<TokenResponse> {
  const recent = (at: Date) => now.getTime() - at.getTime() <= REFRESH_GRACE_MS;
  let from = recent(usedAt) ? [token] : [];
  for (let generation = 0; from.length && generation < RACE_GENERATIONS; generation++) {
    const successors = from.flatMap((t) => svc.secrets.refreshSuccessors(t));
    const rows = await svc.db
      .select({ tokenHash: oauthRefreshTokens.tokenHash, usedAt: oauthRefreshTokens.usedAt, scope: oauthRefreshTokens.scope, resource: oauthRefreshTokens.resource })
      .from(oauthRefreshTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthRefreshTokens.grantId))
      .where(and(inArray(oauthRefreshTokens.tokenHash, successors.map(sha256)), eq(oauthRefreshTokens.grantId, grant.id), isNull(oauthGrants.revokedAt)));
    const head = rows.find((r) => r.usedAt === null);
    if (head) {
      const successor = successors.find((s) => sha256(s) === head.tokenHash)!;
      const access = await signAccessToken(svc, { userId: grant.userId, clientId: client.id, grantId: grant.id, scope: head.scope, audience: head.resource });
      return tokenResponse(access, successor, head.scope);
    }
    const spent = new Set(rows.filter((r) => r.usedAt && recent(r.usedAt)).map((r) => r.tokenHash));
    from = successors.filter((s) => spent.has(sha256(s)));
  }
  await revokeGrant(svc, grant.id, 'replay');
  throw replayed();
}

/** POST /oauth/token: the authorization_code and refresh_token grants (RFC 6749 §4.1.3, §6). */
export async function exchangeToken(svc: Services, { form, authorization }: TokenRequest): Promise<TokenResponse> {
  single(form);
  const grantType = form.get('grant_type');
  if (!grantType) throw oauthError('invalid_request', 'Send grant_type.');
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    throw oauthError('unsupported_grant_type', 'Use authorization_code or refresh_token.');
  }
  const client = await authenticateClient(svc, form, authorization, findClient);
  if (!client.grantTypes.includes(grantType)) throw oauthError('unauthorized_client', `This client did not register the ${grantType} grant.`);
  return grantType === 'authorization_code' ? redeemCode(svc, client, form) : rotateRefreshToken(svc, client, form);
}

/** The grant of one of our access tokens issued to `clientId`, whatever its audience or expiry. */
async function grantOfAccessToken(svc: Services, token: string, clientId: string): Promise<string | undefined> {
  if (token.length > 4096 || token.split('.').length !== 3) return undefined;
  try {
    const { payload } = await jwtVerify(
      token,
      async (header: JWTHeaderParameters) => {
        const key = await keyStore(svc).verifyKey(header.kid);
        if (!key) throw new Error('unknown key');
        return key;
      },
      { algorithms: ['ES256'], typ: 'at+jwt', issuer: issuerOf(svc), currentDate: new Date(0) },
    );
    return payload.client_id === clientId && typeof payload.gid === 'string' ? payload.gid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * RFC 7009. Either kind ends its whole grant: no per-token deny-list is needed, since a revoked
 * grant stops every access token at the next gate check.
 */
export async function revokeToken(svc: Services, { form, authorization }: TokenRequest): Promise<void> {
  single(form);
  const client = await authenticateClient(svc, form, authorization, findClient);
  const token = form.get('token');
  if (!token) throw oauthError('invalid_request', 'Send the token to revoke.');
  const [refresh] = await svc.db
    .select({ grantId: oauthRefreshTokens.grantId, clientId: oauthRefreshTokens.clientId })
    .from(oauthRefreshTokens)
    .where(eq(oauthRefreshTokens.tokenHash, sha256(token)));
  if (refresh) {
    if (refresh.clientId === client.id) await revokeGrant(svc, refresh.grantId, 'app');
    return;
  }
  const grantId = await grantOfAccessToken(svc, token, client.id);
  if (grantId) await revokeGrant(svc, grantId, 'app');
}
