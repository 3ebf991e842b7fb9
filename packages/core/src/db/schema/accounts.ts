import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  email: text('email').notNull().unique(),
  passwordHash: text('password_hash').notNull(),
  /** Opaque and rotatable: the only identifier in the person's MCP URL. */
  userKey: text('user_key').notNull().unique(),
  aiApps: boolean('ai_apps').notNull().default(false),
  /** The name the catalog shows as the publisher of this person's public add-ons. */
  displayName: text('display_name'),
  /** When the person opened a verification (or reset) link sent to `email`; null: not yet. */
  emailVerifiedAt: ts('email_verified_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/**
 * One-time links sent by mail: verifying an email, resetting a password. Only the hash of the token
 * is stored; a link is void once used, past `expires_at`, or once the account's email is no longer `email`.
 */
export const emailLinks = pgTable(
  'email_links',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    purpose: text('purpose', { enum: ['verify', 'reset'] }).notNull(),
    email: text('email').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
  },
  (t) => [index('email_links_user_idx').on(t.userId, t.purpose)],
);

export const sessions = pgTable(
  'sessions',
  {
    /** sha256 of the cookie value; the value itself is never stored. */
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    csrfToken: text('csrf_token').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
    /** What the person sees in their list of sessions: the browser's User-Agent and client address at sign-in. */
    userAgent: text('user_agent'),
    address: text('address'),
    /** Updated at most every few minutes (sessions.ts). */
    lastSeenAt: ts('last_seen_at'),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
);

/** Failed sign-ins per key (an email, or a client address); shared by every API process. */
export const loginThrottle = pgTable('login_throttle', {
  key: text('key').primaryKey(),
  failures: integer('failures').notNull().default(0),
  windowStart: ts('window_start').notNull().default(sql`now()`),
  lockedUntil: ts('locked_until'),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    /** First characters of the key, to recognise it in a list. */
    hint: text('hint').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [index('api_keys_user_idx').on(t.userId)],
);

export const pushSubscriptions = pgTable(
  'push_subscriptions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    endpoint: text('endpoint').notNull().unique(),
    p256dh: text('p256dh').notNull(),
    auth: text('auth').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('push_subscriptions_user_idx').on(t.userId)],
);

/** Service-wide secrets generated on first start (the Web Push VAPID key pair), sealed with the master secret. */
export const serviceSecrets = pgTable('service_secrets', {
  name: text('name').primaryKey(),
  valueEnc: text('value_enc').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/** Passkeys (WebAuthn credentials): the public key only; the private key never leaves the authenticator. */
export const passkeys = pgTable(
  'passkeys',
  {
    /** The credential id, base64url: one authenticator's credential belongs to one account. */
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    /** The COSE public key, base64url. */
    publicKey: text('public_key').notNull(),
    /** The authenticator's signature counter: one that goes backwards means a cloned authenticator. */
    counter: bigint('counter', { mode: 'number' }).notNull().default(0),
    transports: jsonb('transports').$type<string[]>().notNull().default([]),
    name: text('name').notNull(),
    /** Synced by its provider (a multi-device passkey), as the authenticator said. */
    backedUp: boolean('backed_up').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
  },
  (t) => [index('passkeys_user_idx').on(t.userId)],
);

/** A WebAuthn challenge issued and not yet answered: each is used once, within minutes. */
export const passkeyChallenges = pgTable(
  'passkey_challenges',
  {
    challenge: text('challenge').primaryKey(),
    purpose: text('purpose', { enum: ['register', 'signin'] }).notNull(),
    /** The account adding a passkey; null for a sign-in, where the passkey names the account. */
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('passkey_challenges_expires_idx').on(t.expiresAt), index('passkey_challenges_user_idx').on(t.userId)],
);
