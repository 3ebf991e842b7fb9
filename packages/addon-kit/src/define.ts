import type { ArgMap, ArgsOf, ArgumentKind } from './arguments';
import { createHandler, type HandlerOptions, type WebHandler } from './handler';

/** MCP content blocks, as an add-on may return them. */
export type ContentBlock = { type: string; [key: string]: unknown };

/** What `run` may return: a string (sent as text), `{ json }`, `{ content }`, or `{ text }`. */
export type ToolAnswer = string | { text: string } | { json: unknown } | { content: ContentBlock[] };

/**
 * An icon (MCP's Icon): an https URL of a PNG, JPEG, WebP or GIF of at most 64 KB and 1024x1024, or
 * a data URI of one. Toolport fetches it once when the manifest is pushed and serves it itself.
 */
export interface Icon {
  src: string;
  mimeType?: string;
  /** `WxH`; leave it out and Toolport reads the size from the image. */
  sizes?: string[];
  /** The background the icon is drawn for. */
  theme?: 'light' | 'dark';
}

/** A JSON Schema (2020-12), as written in the manifest. */
export type JsonSchema = Record<string, unknown>;

/** What a `confirm` handler returns; `null` tells Toolport this call needs no approval. */
export interface ConfirmDescriptor {
  message: string;
  /** A line without a value is not shown (as Raycast has it). */
  info?: Array<{ name: string; value?: string }>;
  style?: 'destructive' | 'default';
}

/** Who and what a delivery is about. Identity comes from here, never from the arguments. */
export interface CallContext {
  /** The person, pseudonymous and stable per add-on (`user.id`). Scope your data by it. */
  userId: string;
  /** The call's id; also the `webhook-id`, identical on every retry: the idempotency key. */
  callId: string;
  /** 1 on the first delivery, then 2, 3... on retries. */
  attempt: number;
  /** After this instant Toolport has stopped waiting for the answer. */
  deadline: Date;
  /** Aborts at the deadline; pass it to fetch and other slow work. */
  signal: AbortSignal;
  /** The AI app that made the call, as it registered itself (unverified). */
  app: { name: string; clientId: string };
  /** The raw `webhook-id` header. */
  webhookId: string;
  /**
   * The person's approval of this call, when they allowed it (destructive tools), checked against
   * the arguments this delivery carries; undefined when there is none or it does not match.
   */
  approval?: ApprovalReceipt;
}

/** Proof, inside the signed body, that a person allowed this exact call. */
export interface ApprovalReceipt {
  /** `apr_...` */
  id: string;
  decidedAt: Date;
  /** Where the person decided: `dashboard` or `push`. */
  channel: string;
  /** `sha256:<hex>` of the arguments' JSON text the person was shown. */
  argumentsHash: string;
}

export interface ToolDefinition<A extends ArgMap> {
  /** Up to 60 characters. */
  title: string;
  /** Up to 300 characters; say what the tool returns. */
  summary: string;
  /** Toolport asks the person before every call. */
  destructive?: boolean;
  readOnly?: boolean;
  /** Calling it twice with the same arguments does no more than once (MCP `idempotentHint`). */
  idempotent?: boolean;
  /** `false`: it touches only the add-on's own data, not the outside world (MCP `openWorldHint`). */
  openWorld?: boolean;
  icons?: Icon[];
  /**
   * What the tool returns (`structuredContent`): `run` then returns `{ json: {...} }` matching it.
   * Toolport checks each answer against it and gives the app a tool error instead of one that does not.
   */
  outputSchema?: JsonSchema;
  /**
   * Refuse any call that does not carry the person's approval of these exact arguments
   * (`ctx.approval`), before `run` is called. For destructive tools whose `confirm` never skips.
   */
  requireApproval?: boolean;
  /** Seconds a call may take here, 1 to 30 (the default); Toolport stops waiting after it. */
  timeoutSeconds?: number;
  arguments?: A;
  run: (args: ArgsOf<A>, ctx: CallContext) => ToolAnswer | Promise<ToolAnswer>;
  /**
   * Describes a destructive call for the approval prompt (manifest `confirm: true`). Return `null`
   * when the call will change nothing: Toolport then skips the approval for this call.
   */
  confirm?: (args: ArgsOf<A>, ctx: CallContext) => ConfirmDescriptor | null | Promise<ConfirmDescriptor | null>;
}

export interface Tool<A extends ArgMap = ArgMap> extends ToolDefinition<A> {
  readonly __tool: true;
}

/** Declares one tool; `args` in `run` and `confirm` are typed from `arguments`. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a tool without arguments
export function tool<A extends ArgMap = {}>(def: ToolDefinition<A>): Tool<A> {
  return { ...def, __tool: true };
}

export interface AddonDefinition {
  /** `^[a-z][a-z0-9-]{1,29}$`, unique across Toolport and never reused. */
  id: string;
  name: string;
  description: string;
  /** The public HTTPS URL Toolport POSTs deliveries to. */
  webhook: string;
  visibility?: 'private' | 'public';
  /** The add-on's icons; a tool without its own shows these. */
  icons?: Icon[];
  /** Keyed by tool name (`^[a-z][a-z0-9_]{0,31}$`); order is kept in the manifest. */
  tools: Record<string, Tool<any>>;
}

export interface ManifestArgument {
  name: string;
  summary: string;
  kind: ArgumentKind;
  required?: boolean;
}

export interface ManifestTool {
  name: string;
  title: string;
  summary: string;
  destructive?: boolean;
  readOnly?: boolean;
  idempotent?: boolean;
  openWorld?: boolean;
  confirm?: boolean;
  timeoutSeconds?: number;
  icons?: Icon[];
  arguments: ManifestArgument[];
  outputSchema?: JsonSchema;
}

/** addon.json, in DESIGN.md's format. */
export interface AddonManifest {
  id: string;
  name: string;
  description: string;
  webhook: string;
  visibility?: 'private' | 'public';
  icons?: Icon[];
  tools: ManifestTool[];
}

export interface Addon {
  readonly definition: AddonDefinition;
  /** The addon.json object; `overrides` replaces top-level fields (for example a tunnel's webhook URL). */
  manifest(overrides?: Partial<Pick<AddonManifest, 'webhook' | 'visibility'>>): AddonManifest;
  /** A web-standard handler (`Request` in, `Response` out) that verifies and answers deliveries. */
  handler(options: HandlerOptions): WebHandler;
}

function manifestTool(name: string, t: Tool<any>): ManifestTool {
  const out = { name, title: t.title, summary: t.summary } as ManifestTool;
  if (t.destructive) out.destructive = true;
  if (t.readOnly) out.readOnly = true;
  if (t.idempotent !== undefined) out.idempotent = t.idempotent;
  if (t.openWorld !== undefined) out.openWorld = t.openWorld;
  if (t.confirm) out.confirm = true;
  if (t.timeoutSeconds !== undefined) out.timeoutSeconds = t.timeoutSeconds;
  if (t.icons?.length) out.icons = t.icons;
  out.arguments = [];
  for (const [argName, arg] of Object.entries(t.arguments ?? {}) as Array<[string, ArgMap[string]]>) {
    const a: ManifestArgument = { name: argName, summary: arg.summary, kind: arg.kind };
    if (!arg.required) a.required = false;
    out.arguments.push(a);
  }
  if (t.outputSchema) out.outputSchema = t.outputSchema;
  return out;
}

export function defineAddon(def: AddonDefinition): Addon {
  for (const [name, t] of Object.entries(def.tools)) {
    if (!t || (t as Tool).__tool !== true) throw new TypeError(`tools.${name} must be made with tool({...}).`);
    if (typeof t.run !== 'function') throw new TypeError(`tools.${name} needs a run function.`);
    if (t.confirm !== undefined && typeof t.confirm !== 'function') throw new TypeError(`tools.${name}.confirm must be a function.`);
    if (t.requireApproval && !t.destructive) throw new TypeError(`tools.${name}: requireApproval needs destructive: true (only destructive calls are approved).`);
  }
  return {
    definition: def,
    manifest(overrides = {}) {
      const webhook = overrides.webhook ?? def.webhook;
      const visibility = overrides.visibility ?? def.visibility;
      return {
        id: def.id,
        name: def.name,
        description: def.description,
        webhook,
        ...(visibility ? { visibility } : {}),
        ...(def.icons?.length ? { icons: def.icons } : {}),
        tools: Object.entries(def.tools).map(([name, t]) => manifestTool(name, t)),
      };
    },
    handler: (options) => createHandler(def, options),
  };
}
