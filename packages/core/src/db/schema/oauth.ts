import { boolean, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Registered AI apps: dynamic registrations (RFC 7591) and client ID metadata documents. */
export const oauthClients = pgTable('oauth_clients', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  redirectUris: jsonb('redirect_uris').$type<string[]>().notNull(),
  /** Everything else the app registered, as registered (echoed back by RFC 7591). */
  metadata: jsonb('metadata').notNull(),
  kind: text('kind', { enum: ['dcr', 'cimd'] }).notNull().default('dcr'),
  secretHash: text('secret_hash'),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** When a client ID metadata document was last fetched; refetched after about an hour. */
  fetchedAt: ts('fetched_at'),
  /** When a person first let it in; a registration nobody used within a day is removed (oauth/clients.ts). */
  firstGrantAt: ts('first_grant_at'),
});

/** A person letting an app in: the "connection" shown in the dashboard. Revoking it ends every token. */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull().references(() => oauthClients.id, { onDelete: 'cascade' }),
    scope: text('scope').notNull(),
    resource: text('resource').notNull(),
    /** The redirect URI the person consented to; its host is shown in the dashboard. */
    redirectUri: text('redirect_uri'),
    /** Digest of the consent form's token that made this grant: a replayed form makes no second one. */
    consentKey: text('consent_key').unique(),
    /** `{addonId}__{toolName}`; only while switched on. */
    tools: jsonb('tools').$type<string[]>().notNull().default([]),
    /** Switching a tool on adds it to `tools`. On for grants made before per-app choices. */
    newTools: boolean('new_tools').notNull().default(false),
    /** The person asked to approve every tool call of this app, whatever the tool (issue #41). */
    askEveryTool: boolean('ask_every_tool').notNull().default(false),
    /** MCP 2025-11-25 URL-mode elicitation; remembered per grant since the endpoint is stateless. */
    urlElicitation: boolean('url_elicitation').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [index('oauth_grants_user_idx').on(t.userId)],
);

export const oauthCodes = pgTable(
  'oauth_codes',
  {
  codeHash: text('code_hash').primaryKey(),
  grantId: text('grant_id').notNull().references(() => oauthGrants.id, { onDelete: 'cascade' }),
  clientId: text('client_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  resource: text('resource').notNull(),
  scope: text('scope').notNull(),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
  },
  // A challenge is refused once it got a code (oauth/authorize.ts).
  (t) => [index('oauth_codes_challenge_idx').on(t.codeChallenge)],
);

/** Refresh tokens, rotated on use; a reused one revokes its whole family (the grant). */
export const oauthRefreshTokens = pgTable(
  'oauth_refresh_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    grantId: text('grant_id').notNull().references(() => oauthGrants.id, { onDelete: 'cascade' }),
    clientId: text('client_id').notNull(),
    scope: text('scope').notNull(),
    resource: text('resource').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
  },
  (t) => [index('oauth_refresh_grant_idx').on(t.grantId)],
);

/** Access-token signing keys; the private half is encrypted with the master secret. */
export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  publicJwk: jsonb('public_jwk').notNull(),
  privateJwkEnc: text('private_jwk_enc').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** Still published in the JWKS (to verify tokens it signed) but no longer signing. */
  retiredAt: ts('retired_at'),
});

/** Fixed-window counters (dynamic registrations per client address), shared by every API process. */
export const oauthRateLimits = pgTable('oauth_rate_limits', {
  key: text('key').primaryKey(),
  count: integer('count').notNull().default(0),
  windowStart: ts('window_start').notNull().defaultNow(),
});
