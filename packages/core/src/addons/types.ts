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

export interface ManifestTool {
  name: string;
  title: string;
  summary: string;
  destructive?: boolean;
  readOnly?: boolean;
  confirm?: boolean;
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
}

export interface ManifestCheck {
  manifest: Manifest;
  tools: CompiledTool[];
  /** Lint: advice, never a refusal. Each with the JSON pointer of what it is about. */
  warnings: FieldError[];
}

/** Result of checking a call's arguments against a tool's compiled schema. */
export type ArgumentCheck =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; problems: string[] };
