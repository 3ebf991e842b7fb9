import { toolAccountsProblem, type AccountDeclaration, type AccountsOf } from './accounts';
import type { ArgMap, ArgsOf, ArgumentKind } from './arguments';
import { createHandler, type HandlerOptions, type WebHandler } from './handler';
import { manifestSettings, type ManifestSetting, type SettingMap, type SettingsScope, type SettingValue } from './settings';

/** MCP content blocks, as an add-on may return them. */
export type ContentBlock = { type: string; [key: string]: unknown };

/**
 * A file returned with an answer (`files`): Toolport keeps it 24 hours for the app that made the
 * call, which reads it through the link in the result. `data` as bytes, or text sent as UTF-8.
 * Up to 5 files and 4 MB in all, of the types docs/addons.md "Files" lists.
 */
export interface AnswerFile {
  name: string;
  mediaType: string;
  data: Uint8Array | string;
}

/** What `run` may return: a string (sent as text), `{ json }`, `{ content }`, or `{ text }`; the objects may carry `files`. */
export type ToolAnswer =
  | string
  | { text: string; files?: AnswerFile[] }
  | { json: unknown; files?: AnswerFile[] }
  | { content: ContentBlock[]; files?: AnswerFile[] };

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
  /** An https URL of a picture of what the call will do (PNG, JPEG, WebP or GIF, up to 512 KB): Toolport shows its own copy. */
  image?: string;
}

/** Who and what a delivery is about. Identity comes from here, never from the arguments. */
export interface CallContext<S = { readonly [name: string]: SettingValue | undefined }, P extends string = never> {
  /**
   * The person's values for the add-on's settings (manifest `settings`), from the signed body: a
   * setting they left unset has its default, or is absent. Secrets included: never log them.
   * Typed from the declaration for tools made with `settings({...}).tool`.
   */
  settings: S;
  /**
   * The person's connected accounts this tool lists in `accounts`, each `{ accessToken }`, fresh
   * from Toolport in the signed body: `ctx.accounts.github.accessToken`. Only the tool's own
   * providers are here (and on the type); `run` is not called without every one of them. Never log them.
   */
  accounts: AccountsOf<P>;
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
  /**
   * The app's session or conversation, when the app names one: stable across its calls in that
   * session, different in another, and never the same value for two add-ons. Key per-conversation
   * state by it (with `userId`); undefined when the app sent none.
   */
  session?: string;
  /** The raw `webhook-id` header. */
  webhookId: string;
  /**
   * Tells the app how far a long call is: a short sentence, shown as the task's status. Only a tool
   * whose `timeoutSeconds` is over 30 runs as a task (taken at once, answered when `run` returns,
   * up to its deadline); for any other call this does nothing.
   */
  progress(message: string): Promise<void>;
  /**
   * The person's approval of this call, when they allowed it (destructive tools, or any tool the
   * person or the manifest's `alwaysAsk` makes ask) or a rule of theirs allowed it, checked against
   * the arguments this delivery carries; undefined when there is none or it does not match.
   */
  approval?: ApprovalReceipt;
}

/** Proof, inside the signed body, that a person allowed this exact call. */
export interface ApprovalReceipt {
  /** `apr_...` (an approval), or `rul_...` when the person's rule allowed it (channel `rule`). */
  id: string;
  decidedAt: Date;
  /** Where the person decided: `dashboard`, `push`, or `rule` (their allow rule for this app; `decidedAt` is when they set it). */
  channel: string;
  /** `sha256:<hex>` of the arguments' JSON text the person was shown. */
  argumentsHash: string;
}

/**
 * `ctx` of a `confirm` handler: as `run`'s, except that an account may be absent (describe the
 * call from your own data where you can; the call itself always carries its accounts).
 */
export type ConfirmContext<S = CallContext['settings'], P extends string = never> = Omit<CallContext<S, P>, 'accounts'> & {
  accounts: Partial<AccountsOf<P>>;
};

export interface ToolDefinition<A extends ArgMap, S = CallContext['settings'], P extends string = never> {
  /** Up to 60 characters. */
  title: string;
  /** Up to 300 characters; say what the tool returns. */
  summary: string;
  /** Toolport asks the person before every call (unless the person allows it for one app with a rule). */
  destructive?: boolean;
  /** Every call asks the person, destructive or not, and no rule of theirs can let it run unasked. */
  alwaysAsk?: boolean;
  /**
   * One call at a time for each person, with this add-on's other exclusive tools: later calls wait
   * their turn, in order, within the call's time. For tools that change state that must not overlap.
   */
  exclusive?: boolean;
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
  /**
   * Seconds a call may take here, 1 to 3600 (30 by default); Toolport stops waiting after it. Over
   * 30 the tool runs as an MCP task: the kit takes the call at once and answers when `run` returns,
   * so apps that cannot poll a task are refused it.
   */
  timeoutSeconds?: number;
  arguments?: A;
  /**
   * The providers (of the add-on's `accounts`) whose account this tool acts on, at most 5:
   * `ctx.accounts.github.accessToken` is then typed. Toolport answers a call whose account the
   * person has not connected with a link to connect it, and sends each token only to the tools
   * that list its provider.
   */
  accounts?: readonly P[];
  run: (args: ArgsOf<A>, ctx: CallContext<S, P>) => ToolAnswer | Promise<ToolAnswer>;
  /**
   * Describes a destructive call for the approval prompt (manifest `confirm: true`). Return `null`
   * when the call will change nothing: Toolport then skips the approval for this call.
   */
  confirm?: (args: ArgsOf<A>, ctx: ConfirmContext<S, P>) => ConfirmDescriptor | null | Promise<ConfirmDescriptor | null>;
}

/** A declared tool; `P` are the providers it lists in `accounts`. */
export interface Tool<A extends ArgMap = ArgMap, P extends string = never> extends ToolDefinition<A, CallContext['settings'], P> {
  readonly __tool: true;
}

/**
 * Declares one tool; `args` in `run` and `confirm` are typed from `arguments`, and
 * `ctx.accounts` from `accounts`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a tool without arguments
export function tool<A extends ArgMap = {}, const P extends string = never>(def: ToolDefinition<A, CallContext['settings'], P>): Tool<A, P> {
  return { ...def, __tool: true };
}

/** `P`: the providers the add-on declares in `accounts`; its tools may list only those. */
export interface AddonDefinition<P extends string = string> {
  /** `^[a-z][a-z0-9-]{1,29}$`, unique across Toolport and never reused. */
  id: string;
  name: string;
  description: string;
  /** The public HTTPS URL Toolport POSTs deliveries to. */
  webhook: string;
  visibility?: 'private' | 'public';
  /** The add-on's icons; a tool without its own shows these. */
  icons?: Icon[];
  /**
   * Keyed by tool name (`^[a-z][a-z0-9_]{0,31}$`); order is kept in the manifest. A tool's
   * `accounts` may list only providers declared in `accounts` below.
   */
  tools: Record<string, Tool<any, NoInfer<P>>>;
  /**
   * Per-install settings the person fills in (`settings({...})`, whose `tool` types `ctx.settings`),
   * keyed by name (`^[a-z][a-z0-9_]{0,31}$`).
   */
  settings?: SettingsScope<SettingMap> | SettingMap;
  /**
   * The OAuth providers whose accounts the person connects for the add-on (up to 5), written to
   * the manifest as they are. Store each provider's OAuth client through the developer API.
   */
  accounts?: readonly AccountDeclaration<P>[];
  /**
   * Which of the tools this person is offered now (the manifest's `toolsPerPerson`): names among
   * `tools`, by their settings, connected accounts or your own records of them. Toolport asks
   * with a 3 s bound and keeps the answer 5 minutes; a tool left out is hidden from their apps.
   */
  toolsFor?: (who: ToolsForContext) => readonly string[] | Promise<readonly string[]>;
}

/** What `toolsFor` is told of the person. */
export interface ToolsForContext {
  /** Their pseudonymous id, as in their calls (`ctx.userId`). */
  userId: string;
  /** Their install's settings (absent ones left out). */
  settings: Record<string, unknown>;
  /** The providers whose account they have connected. */
  accounts: string[];
  /** Every tool of the manifest, in order: the names you may offer. */
  tools: string[];
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
  alwaysAsk?: boolean;
  exclusive?: boolean;
  timeoutSeconds?: number;
  icons?: Icon[];
  /** Providers of the manifest's `accounts` whose token this tool's deliveries carry. */
  accounts?: string[];
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
  toolsPerPerson?: true;
  tools: ManifestTool[];
  settings?: ManifestSetting[];
  accounts?: ManifestAccount[];
}

/**
 * One OAuth provider in addon.json's `accounts`: the declaration (`AccountDeclaration`) as the
 * manifest writes it (docs/addons.md "Connected accounts"). The OAuth client is stored through the
 * developer API, never here.
 */
export type ManifestAccount = Omit<AccountDeclaration, 'scopes'> & { scopes: string[] };

export interface Addon {
  readonly definition: AddonDefinition<any>;
  /** The addon.json object; `overrides` replaces top-level fields (for example a tunnel's webhook URL). */
  manifest(overrides?: Partial<Pick<AddonManifest, 'webhook' | 'visibility'>>): AddonManifest;
  /** A web-standard handler (`Request` in, `Response` out) that verifies and answers deliveries. */
  handler(options: HandlerOptions): WebHandler;
}

function manifestTool(name: string, t: Tool<any, any>): ManifestTool {
  const out = { name, title: t.title, summary: t.summary } as ManifestTool;
  if (t.destructive) out.destructive = true;
  if (t.readOnly) out.readOnly = true;
  if (t.idempotent !== undefined) out.idempotent = t.idempotent;
  if (t.openWorld !== undefined) out.openWorld = t.openWorld;
  if (t.confirm) out.confirm = true;
  if (t.alwaysAsk) out.alwaysAsk = true;
  if (t.exclusive) out.exclusive = true;
  if (t.timeoutSeconds !== undefined) out.timeoutSeconds = t.timeoutSeconds;
  if (t.icons?.length) out.icons = t.icons;
  if (t.accounts?.length) out.accounts = [...t.accounts];
  out.arguments = [];
  for (const [argName, arg] of Object.entries(t.arguments ?? {}) as Array<[string, ArgMap[string]]>) {
    const a: ManifestArgument = { name: argName, summary: arg.summary, kind: arg.kind };
    if (!arg.required) a.required = false;
    out.arguments.push(a);
  }
  if (t.outputSchema) out.outputSchema = t.outputSchema;
  return out;
}

function manifestAccount(a: AccountDeclaration): ManifestAccount {
  return {
    provider: a.provider,
    title: a.title,
    authorizationUrl: a.authorizationUrl,
    tokenUrl: a.tokenUrl,
    ...(a.revocationUrl !== undefined ? { revocationUrl: a.revocationUrl } : {}),
    scopes: [...a.scopes],
  };
}

/** The add-on's settings map, given as `settings({...})` or as the map itself. */
export function settingMapOf(def: AddonDefinition<any>): SettingMap | undefined {
  const s = def.settings;
  if (!s) return undefined;
  return 'definition' in s && typeof (s as SettingsScope<SettingMap>).tool === 'function' ? (s as SettingsScope<SettingMap>).definition : (s as SettingMap);
}

/**
 * Declares the add-on. Its `accounts` type what its tools may list: a tool that lists a provider
 * the add-on does not declare is a type error here (and a TypeError in plain JavaScript).
 */
export function defineAddon<P extends string = never>(def: AddonDefinition<P>): Addon {
  const providers = new Set<string>((def.accounts ?? []).map((a) => a.provider));
  for (const [name, t] of Object.entries(def.tools) as Array<[string, Tool<any, any>]>) {
    if (!t || (t as Tool).__tool !== true) throw new TypeError(`tools.${name} must be made with tool({...}).`);
    if (typeof t.run !== 'function') throw new TypeError(`tools.${name} needs a run function.`);
    if (t.confirm !== undefined && typeof t.confirm !== 'function') throw new TypeError(`tools.${name}.confirm must be a function.`);
    if (t.requireApproval && !t.destructive && !t.alwaysAsk) {
      throw new TypeError(`tools.${name}: requireApproval needs destructive: true or alwaysAsk: true (only calls that ask are approved).`);
    }
    const accountsProblem = toolAccountsProblem(name, t.accounts, providers);
    if (accountsProblem) throw new TypeError(accountsProblem);
  }
  const declared = settingMapOf(def);
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
        ...(def.toolsFor ? { toolsPerPerson: true as const } : {}),
        tools: Object.entries(def.tools).map(([name, t]) => manifestTool(name, t)),
        ...(declared && Object.keys(declared).length ? { settings: manifestSettings(declared) } : {}),
        ...(def.accounts?.length ? { accounts: def.accounts.map(manifestAccount) } : {}),
      };
    },
    handler: (options) => createHandler(def, options),
  };
}
