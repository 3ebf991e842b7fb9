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
  /** MCP `idempotentHint`, when declared. */
  idempotent?: boolean;
  /** MCP `openWorldHint`, when declared. */
  openWorld?: boolean;
  /** What `structuredContent` must match: the inputSchema's rules, a few bounds relaxed (docs/addons.md). */
  outputSchema?: Record<string, unknown>;
  icons?: ManifestIcon[];
  /** Seconds one call may take at the add-on, 1 to 30 (the default); see docs/addons.md "Time". */
  timeoutSeconds?: number;
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
  tools: ManifestTool[];
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
  timeoutSeconds?: number;
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
