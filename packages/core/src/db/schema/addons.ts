import { boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './accounts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Raw bytes: PGlite reads bytea as a Uint8Array, postgres.js as a Buffer. */
const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
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
    /**
     * The public listing, decided by an operator: `pending` from the developer's request (a public
     * push) until `approved` or `rejected`; `delisted` when an operator took it down. Until
     * approved only the developer can install it. Null: private.
     */
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
    warnings: jsonb('warnings').notNull().default([]),
    /**
     * The release's compiled tools (as the `tools` table holds the current one's): what a person
     * who accepted this release keeps seeing until they review a later one. Null before releases.
     */
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
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.addonId] }), index('installs_addon_idx').on(t.addonId)],
);

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

/**
 * Icon images, by the SHA-256 of their bytes: fetched (or decoded) once when a manifest is pushed,
 * checked to be a small PNG, JPEG, WebP or GIF, and served from Toolport's own origin, so an app
 * never fetches an add-on's URL. Shared by every release and add-on that uses the same image.
 */
export const icons = pgTable('icons', {
  hash: text('hash').primaryKey(),
  mimeType: text('mime_type').notNull(),
  width: integer('width').notNull(),
  height: integer('height').notNull(),
  bytes: bytea('bytes').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});
