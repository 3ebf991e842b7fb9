/**
 * Connected accounts (manifest `accounts`, docs/addons.md "Connected accounts"): the add-on
 * declares the OAuth providers it needs, each tool lists the ones it uses, and Toolport sends a
 * fresh access token for each of those in the signed delivery (`accounts`), and only those.
 */

/** `^[a-z][a-z0-9_]{0,31}$`, as Toolport checks a provider name. */
const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/;
/** A tool lists at most this many providers, as the add-on declares at most this many. */
const MAX_TOOL_ACCOUNTS = 5;
/** Characters of an access token the kit accepts: room for a long JWT, not for a file. */
const ACCESS_TOKEN_MAX = 16_384;
/** RFC 6749 A.12: an access token is 1*VSCHAR, printable ASCII and space (no line break, so no header injection). */
const VSCHAR = /^[\x20-\x7e]+$/;

/** The person's account at one provider, as one delivery carries it. Never log it. */
export interface ConnectedAccount {
  /** A fresh access token: send it as `authorization: Bearer <accessToken>` to the provider's API. */
  readonly accessToken: string;
}

/** `ctx.accounts` of a tool that lists providers `P`: each one always there. */
export type AccountsOf<P extends string> = { readonly [K in P]: ConnectedAccount };

/**
 * One OAuth provider the add-on declares (manifest `accounts`): where Toolport sends the person to
 * connect their account and where it gets tokens. The OAuth client (id and secret) is stored
 * through the developer API, never here.
 */
export interface AccountDeclaration<P extends string = string> {
  /** `^[a-z][a-z0-9_]{0,31}$`, once per add-on: what tools list in `accounts`, the key in `ctx.accounts`. */
  provider: P;
  /** The service's name as the person knows it, up to 60 characters. */
  title: string;
  /** https (http only on a loopback host), no credentials, no fragment. */
  authorizationUrl: string;
  tokenUrl: string;
  /** RFC 7009 revocation endpoint, if the provider has one: disconnecting then revokes the token. */
  revocationUrl?: string;
  /** Up to 20 scope tokens, each without spaces; an empty list asks for none. */
  scopes: readonly string[];
}

/** What stops a tool from running when its accounts are not in the delivery. */
export type AccountsProblem = { provider: string; reason: 'missing' | 'malformed' };

/**
 * The accounts a tool listed, from the delivery's `accounts` object: each a frozen
 * `{ accessToken }` when well formed (a non-empty string of at most ACCESS_TOKEN_MAX printable
 * ASCII characters, RFC 6749's VSCHAR), undeclared or unlisted providers left out. `problem`
 * names the first listed provider that is missing or malformed.
 */
export function accountsFrom(listed: readonly string[], sent: unknown): { accounts: Readonly<Record<string, ConnectedAccount>>; problem?: AccountsProblem } {
  const given = sent && typeof sent === 'object' && !Array.isArray(sent) ? (sent as Record<string, unknown>) : {};
  const out: Record<string, ConnectedAccount> = {};
  let problem: AccountsProblem | undefined;
  for (const provider of listed) {
    const entry = Object.hasOwn(given, provider) ? given[provider] : undefined;
    if (entry === undefined || entry === null) {
      problem ??= { provider, reason: 'missing' };
      continue;
    }
    const token = typeof entry === 'object' && !Array.isArray(entry) ? (entry as Record<string, unknown>).accessToken : undefined;
    if (typeof token !== 'string' || token.length > ACCESS_TOKEN_MAX || !VSCHAR.test(token)) {
      problem ??= { provider, reason: 'malformed' };
      continue;
    }
    out[provider] = Object.freeze({ accessToken: token });
  }
  return { accounts: Object.freeze(out), ...(problem ? { problem } : {}) };
}

/**
 * The sentence a call answers when the delivery lacks an account the tool lists. Toolport never
 * sends such a call (it answers the person with a link to connect the account instead), so this
 * means the code and the registered manifest disagree: the tool's `accounts` is not in the
 * release Toolport has. Names the provider, never a token.
 */
export function accountsProblemSentence(p: AccountsProblem, title: string): string {
  if (p.reason === 'malformed') {
    return `The ${title} account ("${p.provider}") this call carries is not a usable access token, so the tool did not run.`;
  }
  return `This tool needs the person's ${title} account ("${p.provider}") and the call carries none, so it did not run. ` +
    `Toolport sends it when the add-on's registered manifest lists "${p.provider}" in this tool's accounts: push the current addon.json.`;
}

/** The TypeError of a tool whose `accounts` list is not one the add-on can keep. */
export function toolAccountsProblem(tool: string, listed: unknown, declared: ReadonlySet<string>): string | undefined {
  if (listed === undefined) return undefined;
  if (!Array.isArray(listed)) return `tools.${tool}.accounts must be a list of provider names, for example ["github"].`;
  if (listed.length > MAX_TOOL_ACCOUNTS) return `tools.${tool}.accounts lists ${listed.length} providers; a tool needs at most ${MAX_TOOL_ACCOUNTS}.`;
  const seen = new Set<string>();
  for (const p of listed) {
    if (typeof p !== 'string' || !PROVIDER_NAME.test(p)) return `tools.${tool}.accounts: each entry is a provider name such as "github".`;
    if (seen.has(p)) return `tools.${tool}.accounts lists "${p}" twice.`;
    seen.add(p);
    if (!declared.has(p)) return `tools.${tool}.accounts lists "${p}", which the add-on does not declare: add it to defineAddon({ accounts: [...] }).`;
  }
  return undefined;
}
