/** The dashboard's one way to talk to the API: same origin, cookie session, JSON in and out. */
import type {
  ApiKeyView,
  CallLife,
  AddonView,
  CallView,
  CatalogDetail,
  FieldError,
  InstallView,
  LiveApproval,
  ManifestSetting,
  RuleView,
  UserEvent,
} from '@toolport/core/api';

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

// The API's shapes come from the verbs that make them (`@toolport/core/api`): types only, so nothing
// of core is bundled. A local name below is only a shorter one for the page that reads it.
export type {
  AcceptUpdateInput,
  AccountLink,
  AccountSettings,
  AccountSettingsInput,
  Activity,
  AddonVersionView,
  ApiKeyInput,
  ArgumentChange,
  CallLife,
  CallPage,
  CatalogDetail,
  CatalogEntry,
  CheckReport,
  ConnectedAccount,
  Connection,
  ConnectionTools,
  ConnectionToolsInput,
  ConnectionAskInput,
  CreatedAddon,
  Credentials,
  DecisionInput,
  DeleteAccountInput,
  AddPasskeyInput,
  DeliveryPage,
  Disconnected,
  FieldError,
  InstallAccount,
  InstallInput,
  InstallSettingsView,
  ListingDecisionInput,
  ListingView,
  Me,
  NewApiKey,
  NewSigningSecret,
  OneApproval,
  PasskeyOptionsInput,
  PasskeySignInInput,
  PasskeyView,
  PasswordChange,
  PendingUpdate,
  PublicUser,
  PushKey,
  ResetInput,
  ResetRequest,
  RecordedDecision,
  RuleInput,
  RuleMode,
  RunningCall,
  SessionState,
  SessionView,
  SettingValue,
  ToolChange,
  ToolSwitchesInput,
  UpdatedAddon,
  VerifyEmailInput,
} from '@toolport/core/api';
export type Install = InstallView;
export type Tool = InstallView['tools'][number];
/** `GET /api/catalog/:id`: a catalog entry with each tool's safety flags and arguments, before installing. */
export type CatalogTool = CatalogDetail['tools'][number];
/** One per-install setting an add-on declares (manifest `settings`), as the catalog and the install form show it. */
export type SettingDecl = ManifestSetting;
/** The list's approvals and the live feed's (whose names may be missing, and then the ids stand in). */
export type Approval = LiveApproval;
/** The data of one kind of event of the live feed (`GET /api/events`). */
export type LiveEvent<E extends UserEvent['event']> = Extract<UserEvent, { event: E }>['data'];
export type Call = CallView;
/** One step of a call's life (`GET /api/calls/:id`). */
export type CallStep = CallLife['steps'][number];
export type Key = ApiKeyView;
export type Addon = AddonView;
export type Rule = RuleView;
