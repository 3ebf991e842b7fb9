import { createHash } from 'node:crypto';
import { and, eq, gt, isNull } from 'drizzle-orm';
import { jwtVerify, type JWTHeaderParameters } from 'jose';
import { safeEqual, sha256 } from '../crypto';
import { oauthCodes, oauthGrants, oauthRefreshTokens } from '../db/schema/index';
import { newToken } from '../ids';
import type { Services } from '../services';
import { authenticateClient, findClient, type OAuthClient } from './clients';
import { oauthError } from './errors';
import { revokeGrant } from './grants';
import { keyStore, signAccessToken } from './keys';
import { issuerOf } from './metadata';

export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600 * 1000;
/** Upper bound on a refresh request's life: presentations until its answer is ready are races, not replays. */
const REFRESH_CLAIM_MS = 30_000;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface TokenRequest {
  form: URLSearchParams;
  /** When the request arrived; a refresh token spent after this was spent by a concurrent request. */
  receivedAt?: Date;
  /** The Authorization header, for client_secret_basic. */
  authorization?: string;
}

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
  return { access_token: token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refresh, scope };
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
      await revokeGrant(svc, used.grantId);
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

async function rotateRefreshToken(svc: Services, client: OAuthClient, form: URLSearchParams, receivedAt: Date): Promise<TokenResponse> {
  const token = form.get('refresh_token');
  if (!token) throw oauthError('invalid_request', 'Send the refresh_token.');
  const tokenHash = sha256(token);
  const now = svc.clock.now();
  // A request refused for its scope or resource must change nothing: checked before the token is
  // spent, or the app's next (correct) refresh would look like a replay and end the connection.
  const scope = form.get('scope');
  const resource = form.get('resource');
  if (scope !== null || resource !== null) {
    const [held] = await svc.db
      .select({ scope: oauthRefreshTokens.scope, resource: oauthRefreshTokens.resource })
      .from(oauthRefreshTokens)
      .where(and(eq(oauthRefreshTokens.tokenHash, tokenHash), eq(oauthRefreshTokens.clientId, client.id)));
    if (held && scope !== null && scope.split(' ').filter(Boolean).some((s) => !held.scope.split(' ').includes(s))) {
      throw oauthError('invalid_scope', 'The scope asked for is more than was granted.');
    }
    if (held && resource !== null && resource !== held.resource) throw oauthError('invalid_target', 'resource differs from the one granted.');
  }
  // Rotation: the token is spent by one conditional update, so concurrent refreshes yield one winner.
  // The claim marks the token used "until the answer is ready" (at most CLAIM_MS), then the real time.
  const [row] = await svc.db
    .update(oauthRefreshTokens)
    .set({ usedAt: new Date(now.getTime() + REFRESH_CLAIM_MS) })
    .where(
      and(
        eq(oauthRefreshTokens.tokenHash, tokenHash),
        eq(oauthRefreshTokens.clientId, client.id),
        isNull(oauthRefreshTokens.usedAt),
        gt(oauthRefreshTokens.expiresAt, now),
      ),
    )
    .returning();
  if (!row) {
    const [old] = await svc.db.select().from(oauthRefreshTokens).where(eq(oauthRefreshTokens.tokenHash, tokenHash));
    // A spent refresh token presented again means two parties hold it: revoke the family (the grant).
    // Not so for a request that began before the winner had answered: that is the app racing itself.
    if (old && old.usedAt && old.clientId === client.id && old.usedAt.getTime() >= receivedAt.getTime()) {
      throw oauthError('invalid_grant', 'This refresh token was just used by another request.');
    }
    if (old && old.usedAt && old.clientId === client.id) {
      await revokeGrant(svc, old.grantId);
      throw oauthError('invalid_grant', 'This refresh token was already used; the connection has been revoked.');
    }
    throw oauthError('invalid_grant', 'The refresh token is wrong or expired.');
  }
  const grant = await liveGrant(svc, row.grantId);
  const tokens = await issueTokens(svc, grant, client, row.scope, row.resource);
  // usedAt becomes the moment the answer is ready: a presentation after it is a replay, before it a race.
  await svc.db.update(oauthRefreshTokens).set({ usedAt: svc.clock.now() }).where(eq(oauthRefreshTokens.tokenHash, tokenHash));
  return tokens;
}

/** POST /oauth/token: the authorization_code and refresh_token grants (RFC 6749 §4.1.3, §6). */
export async function exchangeToken(svc: Services, { form, authorization, receivedAt }: TokenRequest): Promise<TokenResponse> {
  const arrived = receivedAt ?? svc.clock.now();
  single(form);
  const grantType = form.get('grant_type');
  if (!grantType) throw oauthError('invalid_request', 'Send grant_type.');
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    throw oauthError('unsupported_grant_type', 'Use authorization_code or refresh_token.');
  }
  const client = await authenticateClient(svc, form, authorization, findClient);
  if (!client.grantTypes.includes(grantType)) throw oauthError('unauthorized_client', `This client did not register the ${grantType} grant.`);
  return grantType === 'authorization_code' ? redeemCode(svc, client, form) : rotateRefreshToken(svc, client, form, arrived);
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
 * POST /oauth/revoke (RFC 7009). Either kind of token ends its whole grant: a refresh token's family,
 * and an access token's connection (no per-token deny-list, since a revoked grant already stops every
 * access token at the next gate check). Unknown tokens and other clients' tokens are ignored.
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
    if (refresh.clientId === client.id) await revokeGrant(svc, refresh.grantId);
    return;
  }
  const grantId = await grantOfAccessToken(svc, token, client.id);
  if (grantId) await revokeGrant(svc, grantId);
}
