import { eq, sql } from 'drizzle-orm';
import { errors as joseErrors, jwtVerify, type JWTHeaderParameters } from 'jose';
import { mcpUrlFor } from '../accounts/accounts';
import { oauthClients, oauthGrants, users } from '../db/schema/index';
import { cacheKind, type BoundedMap, type CacheScope } from '../caches';
import { ToolportError } from '../errors';
import type { Services } from '../services';
import { ACCESS_TOKEN_TTL_S, keyStore } from './keys';
import { issuerOf } from './metadata';

/** How long a grant's gate lookup is reused; a bus message on 'gates' drops it at once. */
export const GATE_CACHE_MS = 5000;
/** lastUsedAt is written at most this often per grant. */
const LAST_USED_WRITE_MS = 60_000;
const CLOCK_TOLERANCE_S = 5;
const GATES_MAX = 10_000;
const MAX_TOKEN_LENGTH = 4096;

/** The app a token speaks for, on a person's behalf: the actor of its calls. */
export interface AppIdentity {
  userId: string;
  grantId: string;
  clientId: string;
  appName: string;
}

export interface VerifiedAccess {
  identity: AppIdentity;
  scope: string;
  /** False: the token is still good, but tools/list is empty and every call is refused. */
  aiAppsOn: boolean;
}

/** What an app is told while the person has AI apps turned off. */
export const AI_APPS_OFF = {
  /** The text of every tool call's error result. */
  callResult: 'AI apps are turned off for this Toolport account. Ask the person to turn them on in the Toolport dashboard.',
  /** The MCP server's instructions (initialize). */
  instructions: 'AI apps are turned off for this Toolport account. The person can turn them on in the Toolport dashboard.',
} as const;

/** Equal choices have equal `key`s, so the tool set for a choice is built once. */
export interface ToolChoice {
  key: string;
  names: ReadonlySet<string>;
}

const NO_CHOICE: ToolChoice = { key: '', names: new Set() };

function toolChoiceOf(stored: unknown): ToolChoice {
  const names = Array.isArray(stored) ? stored.filter((n): n is string => typeof n === 'string') : [];
  if (!names.length) return NO_CHOICE;
  const sorted = [...new Set(names)].sort();
  return { key: sorted.join(' '), names: new Set(sorted) };
}

interface Gate {
  userId: string;
  clientId: string;
  appName: string;
  revoked: boolean;
  aiApps: boolean;
  userKey: string;
  tools: ToolChoice;
  askEveryTool: boolean;
}

class GateCache {
  /** Each grant's gate, 5 s at most (a revocation whose bus message was missed ends within that). */
  readonly entries: BoundedMap<string, Gate | null>;
  /** The grants whose lastUsedAt was written within the last minute. */
  readonly lastUsedWrites: BoundedMap<string, true>;
  /** Bumped on every invalidation, so a lookup that raced with one does not store stale data. */
  epoch = 0;
  readonly subscribed: Promise<unknown>;

  constructor(scope: CacheScope) {
    this.entries = scope.map(GATES_MAX, GATE_CACHE_MS);
    this.lastUsedWrites = scope.map(GATES_MAX, LAST_USED_WRITE_MS);
    this.subscribed = scope.follow('gate', (m) => this.drop(m as Record<string, unknown>));
    // A revocation broadcast while the bus was down was missed: forget every lookup.
    scope.afterReconnect(() => this.drop({}));
  }

  drop(message: { userId?: unknown; grantId?: unknown }) {
    this.epoch++;
    if (typeof message.grantId === 'string') this.entries.delete(message.grantId);
    if (typeof message.userId === 'string') this.entries.deleteWhere((gate) => !gate || gate.userId === message.userId);
    if (message.grantId === undefined && message.userId === undefined) this.entries.clear();
  }
}

const GATES = cacheKind('gate lookups', (_svc, scope) => new GateCache(scope), ['gate']);

async function lookupGate(svc: Services, grantId: string): Promise<Gate | null> {
  const cache = svc.caches.get(GATES);
  await cache.subscribed;
  const now = svc.clock.now().getTime();
  const hit = cache.entries.get(grantId);
  if (hit !== undefined) return hit;
  const epoch = cache.epoch;
  const [row] = await svc.db
    .select({
      userId: oauthGrants.userId,
      clientId: oauthGrants.clientId,
      revokedAt: oauthGrants.revokedAt,
      appName: oauthClients.name,
      aiApps: users.aiApps,
      userKey: users.userKey,
      tools: oauthGrants.tools,
      askEveryTool: oauthGrants.askEveryTool,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .where(eq(oauthGrants.id, grantId));
  const gate = row
    ? {
        userId: row.userId,
        clientId: row.clientId,
        appName: row.appName,
        revoked: !!row.revokedAt,
        aiApps: row.aiApps,
        userKey: row.userKey,
        tools: toolChoiceOf(row.tools),
        askEveryTool: row.askEveryTool,
      }
    : null;
  // Aged from before the lookup: a gate is never served more than GATE_CACHE_MS after it was read.
  if (cache.epoch === epoch) cache.entries.set(grantId, gate, now);
  return gate;
}

/** A map hit on the call path (`verifyAccessToken` has just looked it up). */
export async function grantToolChoice(svc: Services, grantId: string): Promise<ToolChoice> {
  const gate = await lookupGate(svc, grantId);
  return gate && !gate.revoked ? gate.tools : NO_CHOICE;
}

/** Whether the person asked to approve every call of this app: read from the gate the token check just read. */
export function grantAsksEveryTool(svc: Services, grantId: string): boolean | Promise<boolean> {
  const gate = svc.caches.peek(GATES)?.entries.get(grantId);
  if (gate !== undefined) return !!gate?.askEveryTool;
  return lookupGate(svc, grantId).then((g) => !!g?.askEveryTool);
}

/** The choice from a gate this process holds now (the call path's case), without a promise; undefined on a miss. */
export function cachedToolChoice(svc: Services, grantId: string): ToolChoice | undefined {
  const gate = svc.caches.peek(GATES)?.entries.get(grantId);
  if (gate === undefined) return undefined;
  return gate && !gate.revoked ? gate.tools : NO_CHOICE;
}

function touchGrant(svc: Services, grantId: string) {
  const { lastUsedWrites } = svc.caches.get(GATES);
  if (lastUsedWrites.has(grantId)) return;
  lastUsedWrites.set(grantId, true);
  const at = svc.clock.now();
  const since = new Date(at.getTime() - LAST_USED_WRITE_MS).toISOString();
  // The condition keeps it to one write a minute across processes too; nobody waits for it.
  svc.db
    .update(oauthGrants)
    .set({ lastUsedAt: at })
    .where(sql`${oauthGrants.id} = ${grantId} and (${oauthGrants.lastUsedAt} is null or ${oauthGrants.lastUsedAt} < ${since}::timestamptz)`)
    .then(
      () => {},
      (err: unknown) => svc.log.warn('could not record a connection as used', { err, grantId }),
    );
}

const invalid = (reason: string) => new ToolportError('UNAUTHORIZED', reason);

interface VerifiedClaims {
  sub: string;
  aud: string;
  gid: string;
  clientId: string;
  scope: string;
  /** Expiry in ms. */
  exp: number;
  kid: string;
  key: CryptoKey;
}

/**
 * An app sends the same token for every call, and ES256 costs more than the rest of the check. A
 * hit still needs its key listed (a removed key ends its tokens at once) and passes the gates.
 */
const VERIFIED_MAX = 10_000;
const VERIFIED_TOKENS = cacheKind('verified tokens', (_svc, scope) =>
  scope.map<string, VerifiedClaims>(VERIFIED_MAX, (ACCESS_TOKEN_TTL_S + CLOCK_TOLERANCE_S) * 1000),
);

async function checkSignatureAndClaims(svc: Services, token: string, mcpUrl: string): Promise<VerifiedClaims> {
  const cache = svc.caches.get(VERIFIED_TOKENS);
  const keys = keyStore(svc);
  const hit = cache.get(token);
  if (hit) {
    if (hit.aud === mcpUrl && svc.clock.now().getTime() < hit.exp && (await keys.verifyKey(hit.kid)) === hit.key) return hit;
    cache.delete(token);
  }
  let payload;
  let kid = '';
  let key: CryptoKey | undefined;
  try {
    ({ payload } = await jwtVerify(
      token,
      async (header: JWTHeaderParameters) => {
        key = await keys.verifyKey(header.kid);
        if (!key) throw invalid('The access token was signed by an unknown key.');
        kid = header.kid!;
        return key;
      },
      {
        algorithms: ['ES256'],
        typ: 'at+jwt',
        issuer: issuerOf(svc),
        audience: mcpUrl,
        clockTolerance: CLOCK_TOLERANCE_S,
        currentDate: svc.clock.now(),
        // Also refuses an iat in the future (jose checks iat only with a maximum age) and a token
        // claiming a longer life than we ever issue.
        maxTokenAge: ACCESS_TOKEN_TTL_S,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'gid'],
      },
    ));
  } catch (err) {
    if (err instanceof ToolportError) throw err;
    if (err instanceof joseErrors.JWTExpired) throw invalid('The access token has expired.');
    if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud') throw invalid('The access token is for another MCP URL.');
    if (err instanceof joseErrors.JOSEError) throw invalid('The access token is not valid.');
    throw err;
  }
  const { sub, aud, gid, client_id: clientId, scope, exp } = payload as Record<string, unknown>;
  if (aud !== mcpUrl || typeof sub !== 'string' || typeof gid !== 'string' || typeof clientId !== 'string' || typeof scope !== 'string' || typeof exp !== 'number') {
    throw invalid('The access token is not valid.');
  }
  const claims: VerifiedClaims = { sub, aud, gid, clientId, scope, exp: exp * 1000, kid, key: key! };
  cache.set(token, claims);
  return claims;
}

/** ES256 only; audience exactly `mcpUrl`. A database failure throws: never "allowed", never 401. */
export async function verifyAccessToken(svc: Services, token: string, mcpUrl: string): Promise<VerifiedAccess> {
  if (!token || token.length > MAX_TOKEN_LENGTH) throw invalid('The access token is malformed.');
  const { sub, gid, clientId, scope } = await checkSignatureAndClaims(svc, token, mcpUrl);

  const gate = await lookupGate(svc, gid);
  if (!gate || gate.userId !== sub || gate.clientId !== clientId) throw invalid('The access token is not valid.');
  if (gate.revoked) throw invalid('This app was disconnected. Connect it again.');
  if (mcpUrlFor(svc, gate.userKey) !== mcpUrl) throw invalid('This MCP URL is no longer in use.');
  const identity = { userId: sub, grantId: gid, clientId, appName: gate.appName };
  // A connection is "used" when it can act: not while AI apps are off.
  if (gate.aiApps) touchGrant(svc, gid);
  return { identity, scope, aiAppsOn: gate.aiApps };
}
