import type { FieldError } from '../errors';

/** Argument kinds of the manifest (DESIGN.md). */
export type ArgumentKind =
  | { text: { maxLength: number } }
  | { number: { minimum?: number; maximum?: number; whole?: boolean } }
  | 'boolean'
  | { choice: string[] };

export interface ManifestArgument {
  name: string;
  summary: string;
  kind: ArgumentKind;
  /** Defaults to true. */
  required?: boolean;
}

/** An icon as a manifest gives it (MCP's Icon): an http(s) URL Toolport fetches once, or a data URI. */
export interface ManifestIcon {
  src: string;
  mimeType?: string;
  /** `WxH` strings; Toolport reads the size from the image and checks these against it. */
  sizes?: string[];
  theme?: 'light' | 'dark';
}

/** An icon as Toolport keeps and serves it: the image's SHA-256 (hex), at `/icons/{hash}`. */
export interface StoredIcon {
  hash: string;
  mimeType: string;
  sizes: string[];
  theme?: 'light' | 'dark';
}

export interface ManifestTool {
  name: string;
  title: string;
  summary: string;
  destructive?: boolean;
  readOnly?: boolean;
  confirm?: boolean;
  /** Every call asks the person, destructive or not, and no allow rule of theirs applies to it. */
  alwaysAsk?: boolean;
  /** With the add-on's other exclusive tools, runs one call at a time for each person, in order. */
  exclusive?: boolean;
  /** MCP `idempotentHint`, when declared. */
  idempotent?: boolean;
  /** MCP `openWorldHint`, when declared. */
  openWorld?: boolean;
  /** What `structuredContent` must match: the inputSchema's rules, a few bounds relaxed (docs/addons.md). */
  outputSchema?: Record<string, unknown>;
  icons?: ManifestIcon[];
  /** Seconds one call may take at the add-on, 1 to 30 (the default); see docs/addons.md "Time". */
  timeoutSeconds?: number;
  /** Providers of the manifest's `accounts` whose tokens this tool's deliveries carry (up to 5, each once). */
  accounts?: string[];
  arguments?: ManifestArgument[];
  /** Instead of `arguments`: a JSON Schema (2020-12) restricted to what can be enforced safely. */
  inputSchema?: Record<string, unknown>;
}

export interface Manifest {
  id: string;
  name: string;
  description: string;
  webhook: string;
  visibility?: 'private' | 'public';
  /** What changed in this release, for the people who review it (up to 1,000 characters). */
  releaseNotes?: string;
  icons?: ManifestIcon[];
  /** Each person's tools are the ones the add-on names for them (`tools.list`), among `tools`. */
  toolsPerPerson?: boolean;
  tools: ManifestTool[];
  /** What the person fills in per install (API keys, preferences), sent in every delivery. */
  settings?: ManifestSetting[];
  /** OAuth providers whose accounts the person connects for this add-on; the client is stored apart (oauth-clients.ts). */
  accounts?: ManifestAccount[];
}

/** The client id and secret are never in the manifest: they are stored through the developer API. */
export interface ManifestAccount {
  /** `^[a-z][a-z0-9_]{0,31}$`, once per manifest: the key in the delivery's `accounts`. */
  provider: string;
  /** The service's name as the person knows it, up to 60 characters. */
  title: string;
  /** The authorization endpoint (https; http only on a loopback host). */
  authorizationUrl: string;
  tokenUrl: string;
  /** The RFC 7009 revocation endpoint, if the provider has one: disconnecting revokes the token there. */
  revocationUrl?: string;
  /** Scopes asked for, up to 20, each without spaces. */
  scopes: string[];
}

/** Kinds of a per-install setting; a `secret` is never shown again once saved. */
export type SettingKind = 'text' | 'number' | 'boolean' | 'choice' | 'secret';

/** One per-install setting an add-on declares (manifest `settings`). */
export interface ManifestSetting {
  /** `^[a-z][a-z0-9_]{0,31}$`, the key in the delivery's `settings`. */
  name: string;
  /** What the person reads beside the field, up to 60 characters. */
  title: string;
  summary?: string;
  kind: SettingKind;
  /** Normalised to a boolean: a call answers with a sentence until a required setting is set. */
  required: boolean;
  /** `choice` only: 1 to 20 distinct strings. */
  choices?: string[];
  /** Filled in when installing; never for a secret. */
  default?: string | number | boolean;
}

export type JsonSchema = Record<string, unknown>;

/** A tool as stored and served: its arguments compiled to one JSON Schema. */
export interface CompiledTool {
  name: string;
  title: string;
  summary: string;
  destructive: boolean;
  readOnly: boolean;
  confirm: boolean;
  /** Only when true (releases stored before it have no such field). */
  alwaysAsk?: boolean;
  exclusive?: boolean;
  timeoutSeconds?: number;
  /** The providers whose accounts the tool needs; only when some (releases stored before it have none). */
  accounts?: string[];
  inputSchema: JsonSchema;
  idempotent?: boolean;
  openWorld?: boolean;
  outputSchema?: JsonSchema;
  /** Set once the icons are fetched and stored (registry.ts), never by checkManifest. */
  icons?: StoredIcon[];
}

export interface ManifestCheck {
  manifest: Manifest;
  tools: CompiledTool[];
  /** Lint: advice, never a refusal. Each with the JSON pointer of what it is about. */
  warnings: FieldError[];
  /** Every icon the manifest gives, checked in form (a data URI decoded and read), to fetch and store. */
  icons: IconSource[];
}

/** One icon of a checked manifest, where it stands and what is known of it before any fetch. */
export interface IconSource {
  /** The JSON pointer of the icon, e.g. `/tools/0/icons/1`. */
  path: string;
  /** The tool it belongs to; undefined: the add-on's own. */
  tool?: string;
  icon: ManifestIcon;
  /** A data URI's bytes; undefined: fetch `icon.src`. */
  bytes?: Buffer;
}

/** Result of checking a call's arguments against a tool's compiled schema. */
export type ArgumentCheck =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; problems: string[] };
