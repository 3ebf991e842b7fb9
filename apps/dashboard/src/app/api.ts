/** The dashboard's one way to talk to the API: same origin, cookie session, JSON in and out. */

export interface FieldError { path: string; message: string }

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, any> = {},
  ) {
    super(message);
  }
  /**
   * The API instance that answered has no such route (it runs an older release than this page).
   * Any other 404 means the object itself does not exist, and its sentence says so.
   */
  get routeMissing() { return this.status === 404 && this.body.detail === 'No such API route.'; }
  get fieldErrors(): FieldError[] {
    return Array.isArray(this.body.errors) ? (this.body.errors as FieldError[]) : [];
  }
}

type Listener = () => void;
const signedOutListeners = new Set<Listener>();
/** Called when any request answers 401: the session ended elsewhere. */
export function onSignedOut(fn: Listener) {
  signedOutListeners.add(fn);
  return () => signedOutListeners.delete(fn);
}

async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'Toolport could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const detail = parsed && typeof parsed.detail === 'string' ? parsed.detail : `The request failed (${res.status}).`;
    if (res.status === 401 && !path.startsWith('/api/session/')) signedOutListeners.forEach((fn) => fn());
    throw new ApiError(res.status, detail, parsed && typeof parsed === 'object' ? parsed : {});
  }
  return parsed as T;
}

export const get = <T = any>(path: string) => api<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => api<T>('POST', path, body);
export const put = <T = any>(path: string, body?: unknown) => api<T>('PUT', path, body);
export const patch = <T = any>(path: string, body?: unknown) => api<T>('PATCH', path, body);
export const del = <T = any>(path: string, body?: unknown) => api<T>('DELETE', path, body);

/** Builds a query string from the non-empty values. */
export function query(params: Record<string, string | undefined>) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

// Shapes the dashboard relies on (DESIGN.md, "Request shapes").
export interface Me { id: string; email: string; mcpUrl: string; aiApps: boolean; operator?: boolean }
export interface Tool { name: string; title?: string; summary?: string; destructive?: boolean; readOnly?: boolean; alwaysAsk?: boolean; enabled: boolean; updatePending?: boolean; icon?: string }
export interface ArgumentChange { name: string; change: 'added' | 'removed' | 'changed'; before?: unknown; after?: unknown }
export interface ToolChange {
  name: string;
  change: 'changed' | 'removed' | 'added';
  fields: Array<{ field: string; before: unknown; after: unknown }>;
  arguments: ArgumentChange[];
  lessSafe: string[];
  before?: { title: string; summary: string };
  after?: { title: string; summary: string };
}
export interface PendingUpdate { from: number; to: number; notes: string | null; publishedAt: string; tools: ToolChange[] }
export interface Install { addon: { id: string; name: string; description?: string; version?: number; icon?: string }; tools: Tool[]; update?: PendingUpdate | null; heldOff?: 'delisted' | 'unlisted' }
export interface CatalogEntry { id: string; name: string; description?: string; icon?: string; version?: number | string; visibility?: string; installed?: boolean; mine?: boolean; listing?: string | null; publisher?: { name: string | null; webhookHost: string }; release?: { version: number; publishedAt: string }; tools?: Array<{ name: string; title?: string; destructive?: boolean }> }
/** `GET /api/catalog/:id`: a catalog entry with each tool's safety flags and arguments, before installing. */
export interface CatalogTool { name: string; title?: string; summary?: string; destructive?: boolean; readOnly?: boolean; alwaysAsk?: boolean; confirm?: boolean; idempotent?: boolean | null; openWorld?: boolean | null; icon?: string; arguments: Array<{ name: string; summary: string; required: boolean }> }
export type SettingValue = string | number | boolean;
/** One per-install setting an add-on declares (manifest `settings`), as the catalog and the install form show it. */
export interface SettingDecl {
  name: string;
  title: string;
  summary?: string;
  kind: 'text' | 'number' | 'boolean' | 'choice' | 'secret';
  required: boolean;
  choices?: string[];
  default?: SettingValue;
}
export type CatalogDetail = Omit<CatalogEntry, 'tools'> & { tools: CatalogTool[]; settings?: SettingDecl[] };
export interface Connection { id: string; appName: string; unverified?: boolean; redirectHost?: string; createdAt?: string; lastUsedAt?: string | null }
export interface Confirm { message?: string; info?: Array<{ name: string; value: string }>; infoOmitted?: number; style?: string }
/**
 * `addon` and `tool` are ids; `addonName` and `toolTitle` what the person knows them by (missing
 * from a live event only when the server could not look the names up, and then the ids stand in).
 */
export interface Approval { id: string; app: string; addon: string; tool: string; addonName?: string; toolTitle?: string; arguments: unknown; confirm: Confirm | null; expiresAt: string }
export interface Call { id: string; app: string; addon: string; tool: string; decision?: string | null; decidedBy?: string | null; outcome: string; latencyMs?: number | null; createdAt: string }
export interface Page<T> { items: T[]; nextCursor: string | null }
export interface Key { id: string; name: string; hint?: string; createdAt?: string; lastUsedAt?: string | null }
export interface Addon { id: string; name: string; version: number; visibility: string; webhook: string; warnings: FieldError[]; description?: string; tools: Array<{ name: string; destructive?: boolean }>; createdAt?: string; updatedAt?: string }
export interface Delivery { id: string; callId: string; type: string; attempt: number; status: number | null; latencyMs: number | null; errorClass: string | null; detail: string | null; createdAt: string }
export interface CheckReport { tools: Array<{ tool: string; result: unknown } | { tool: string; refused: string }> }
/**
 * `GET /api/installs/:addonId/accounts`: each OAuth provider the add-on's release declares, and the
 * person's account there. `ready`: its developer stored an OAuth client. `status` null: not connected.
 */
export interface InstallAccount { provider: string; title: string; scopes: string[]; ready: boolean; connected: boolean; status: 'connected' | 'failed' | null; failure: string | null; connectedAt: string | null; refreshedAt: string | null }
/** `GET /api/accounts`: every account the person connected, across add-ons. `scope`: what the provider granted. */
export interface ConnectedAccount { addonId: string; addonName: string; provider: string; title: string; status: 'connected' | 'failed'; failure: string | null; scope: string | null; connectedAt: string; refreshedAt: string | null }
/** `DELETE /api/installs/:addonId/accounts/:provider`: null when the provider has no revocation endpoint. */
export interface Disconnected { revoked: boolean | null }
