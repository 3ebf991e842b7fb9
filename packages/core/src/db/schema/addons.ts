import { boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { FieldError } from '../../errors';
import { apiKeys, users } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Raw bytes: PGlite reads bytea as a Uint8Array, postgres.js as a Buffer. */
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (v) => Buffer.from(v),
});

/** One row per add-on id, kept after deletion so an id is never reused. */
export const addons = pgTable(
  'addons',
  {
    id: text('id').primaryKey(),
    ownerId: text('owner_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    visibility: text('visibility', { enum: ['private', 'public'] }).notNull().default('private'),
    webhookUrl: text('webhook_url').notNull(),
    /** Set when the webhook answered 410 Gone; calls are refused until the developer pushes again. */
    webhookDisabledAt: ts('webhook_disabled_at'),
    version: integer('version').notNull().default(1),
    /** Until approved only the developer can install it. Null: private. */
    listing: text('listing', { enum: ['pending', 'approved', 'rejected', 'delisted'] }),
    listingReason: text('listing_reason'),
    listingChangedAt: ts('listing_changed_at'),
    /** The current release's icons (StoredIcon[]), served from `/icons/{hash}`; null: none. */
    icons: jsonb('icons'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    deletedAt: ts('deleted_at'),
  },
  (t) => [index('addons_owner_idx').on(t.ownerId)],
);

export const addonVersions = pgTable(
  'addon_versions',
  {
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    manifest: jsonb('manifest').notNull(),
    warnings: jsonb('warnings').$type<FieldError[]>().notNull().default([]),
    /** What a person who accepted this release keeps seeing until they review a later one. */
    tools: jsonb('tools'),
    /** The developer's release notes, shown with the update. */
    notes: text('notes'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.addonId, t.version] })],
);

/** The tools of an add-on's current version, with their compiled input schema. */
export const tools = pgTable(
  'tools',
  {
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    title: text('title').notNull(),
    summary: text('summary').notNull(),
    destructive: boolean('destructive').notNull().default(false),
    readOnly: boolean('read_only').notNull().default(false),
    confirm: boolean('confirm').notNull().default(false),
    /** The add-on asks that every call be approved: no rule of the person's may allow it without asking. */
    alwaysAsk: boolean('always_ask').notNull().default(false),
    /** With the add-on's other exclusive tools, one call at a time per person. */
    exclusive: boolean('exclusive').notNull().default(false),
    /** The tool's own delivery timeout, shorter than the 30 s a call may take; null: 30 s. */
    timeoutSeconds: integer('timeout_seconds'),
    inputSchema: jsonb('input_schema').notNull(),
    /** What structuredContent must match; null: the tool declares none. */
    outputSchema: jsonb('output_schema'),
    /** MCP's idempotentHint and openWorldHint, as declared; null: not declared (MCP's defaults). */
    idempotent: boolean('idempotent'),
    openWorld: boolean('open_world'),
    /** The tool's own icons (StoredIcon[]); null: the add-on's stand for it. */
    icons: jsonb('icons'),
    position: integer('position').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.addonId, t.name] })],
);

/** Webhook signing secrets, encrypted at rest; a rotated one keeps signing until `expiresAt`. */
export const addonSecrets = pgTable(
  'addon_secrets',
  {
    id: text('id').primaryKey(),
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    secretEnc: text('secret_enc').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at'),
  },
  (t) => [index('addon_secrets_addon_idx').on(t.addonId)],
);

export const installs = pgTable(
  'installs',
  {
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    /** Sealed (secrets among them): opened only to sign a delivery or to show the non-secret ones. */
    settingsEnc: text('settings_enc'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.addonId] }), index('installs_addon_idx').on(t.addonId)],
);

/**
 * A `toolport dev` running for an add-on (addons/dev-sessions.ts): while one has not expired, its
 * developer's own install follows each release they push. Renewed by the CLI; ended by it on stop.
 */
export const devSessions = pgTable(
  'dev_sessions',
  {
    id: text('id').primaryKey(),
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    /** The key it was last renewed with: revoked, the session no longer counts. Null: a dashboard session. */
    keyId: text('key_id').references(() => apiKeys.id, { onDelete: 'cascade' }),
    expiresAt: ts('expires_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('dev_sessions_addon_idx').on(t.addonId)],
);

/** The OAuth client an add-on's developer registered with a provider its manifest declares (`accounts`). */
export const addonOauthClients = pgTable(
  'addon_oauth_clients',
  {
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    /** The provider's id in the manifest. */
    provider: text('provider').notNull(),
    clientId: text('client_id').notNull(),
    /** Sealed; null for a public client (PKCE only). */
    clientSecretEnc: text('client_secret_enc'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.addonId, t.provider] })],
);

/** A person's account at another service, connected for one add-on: its tokens, sealed. */
export const connectedAccounts = pgTable(
  'connected_accounts',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    provider: text('provider').notNull(),
    accessTokenEnc: text('access_token_enc').notNull(),
    refreshTokenEnc: text('refresh_token_enc'),
    scope: text('scope'),
    /** When the access token expires, as the provider said; null: it did not say. */
    expiresAt: ts('expires_at'),
    /** `failed`: the last refresh was refused; calls answer with the link to connect again. */
    status: text('status', { enum: ['connected', 'failed'] }).notNull().default('connected'),
    failure: text('failure'),
    createdAt: ts('created_at').notNull().defaultNow(),
    refreshedAt: ts('refreshed_at'),
    /** A lease across processes: the others wait for `refreshedAt` to move. Expired: anyone may take it. */
    refreshLeaseUntil: ts('refresh_lease_until'),
    /** A refresh token is only ever sent where the person connected; a moved endpoint needs reconnecting. */
    tokenUrl: text('token_url'),
    revocationUrl: text('revocation_url'),
  },
  (t) => [uniqueIndex('connected_accounts_one_per_provider').on(t.userId, t.addonId, t.provider)],
);

/** The `state` by digest and the PKCE verifier sealed. Used once; short-lived. */
export const accountLinkStates = pgTable('account_link_states', {
  stateHash: text('state_hash').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  addonId: text('addon_id').notNull(),
  provider: text('provider').notNull(),
  codeVerifierEnc: text('code_verifier_enc').notNull(),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
});

/** A switch per installed tool; no row means off. Rows for tools a new version dropped are ignored. */
export const toolSwitches = pgTable(
  'tool_switches',
  {
    userId: text('user_id').notNull(),
    addonId: text('addon_id').notNull(),
    toolName: text('tool_name').notNull(),
    enabled: boolean('enabled').notNull().default(false),
    /** The release whose definition of this tool the person accepted; apps see that one until they review. */
    acceptedVersion: integer('accepted_version'),
  },
  (t) => [primaryKey({ columns: [t.userId, t.addonId, t.toolName] })],
);

/** An image kept by the SHA-256 of its bytes: icons, confirmation pictures. */
const imageColumns = () => ({
  hash: text('hash').primaryKey(),
  mimeType: text('mime_type').notNull(),
  width: integer('width').notNull(),
  height: integer('height').notNull(),
  bytes: bytea('bytes').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/** Served from Toolport's own origin so an app never fetches an add-on's URL. */
export const icons = pgTable('icons', imageColumns());

/** Images an add-on's confirm showed the person (approvals' `confirm.image`), by SHA-256, kept 30 days. */
export const confirmImages = pgTable('confirm_images', imageColumns(), (t) => [index('confirm_images_created_idx').on(t.createdAt)]);

/**
 * An add-on with `toolsPerPerson`: which of its tools it offers one person, as it last said
 * (installs/tool-lists.ts), asked again when `expiresAt` passes or the install's settings or
 * accounts change (`basis`).
 */
export const personToolLists = pgTable(
  'person_tool_lists',
  {
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    addonId: text('addon_id').notNull().references(() => addons.id, { onDelete: 'cascade' }),
    /** The person's pseudonym at this add-on: how the add-on names them when it says their list changed. */
    subject: text('subject').notNull(),
    basis: text('basis').notNull(),
    tools: jsonb('tools').$type<string[]>().notNull(),
    expiresAt: ts('expires_at').notNull(),
    askedAt: ts('asked_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.addonId] }), index('person_tool_lists_subject_idx').on(t.addonId, t.subject)],
);
