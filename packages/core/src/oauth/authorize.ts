import { createHmac } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import { mcpUrlFor } from '../accounts/accounts';
import { safeEqual, sha256 } from '../crypto';
import { oauthClients, oauthCodes, oauthGrants, users } from '../db/schema/index';
import { newId, newToken } from '../ids';
import type { Services } from '../services';
import { switchedOnTools, type EnabledTool } from '../calls/enabled-tools';
import { findClient } from './clients';
import type { OAuthClient } from './client-metadata';
import { issuerOf, TOOLS_SCOPE } from './metadata';
import { matchRedirectUri, withParams } from './redirect-uris';
import { choosableAddons, readConsentChoice, type ChoosableAddon } from './tool-choices';

const CODE_TTL_MS = 60_000;
/** How long a consent page may stay open before its form is refused. */
const CONSENT_TTL_MS = 10 * 60_000;
const MAX_STATE = 2000;
const MAX_PARAM = 4000;

/** The parameters of an authorization request that reach the consent form and the decision. */
const AUTHORIZE_PARAMS = [
  'client_id', 'redirect_uri', 'response_type', 'code_challenge', 'code_challenge_method', 'resource', 'scope', 'state',
] as const;

export interface AuthorizeRequest {
  client: OAuthClient;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scope: string;
  state?: string;
}

export interface ConsentView {
  appName: string;
  clientId: string;
  /** Shown next to the name for apps identified by a metadata document URL. */
  clientHost: string | null;
  redirectUri: string;
  redirectHost: string;
  email: string;
  mcpUrl: string;
  aiApps: boolean;
  scope: string;
  /** The person's switched-on tools by add-on: each a checkbox (`tool`), the app gets the ticked ones. */
  addons: ChoosableAddon[];
  /** Which are ticked: every one on a fresh page, the person's own ticks on a page shown again. */
  ticked: ReadonlySet<string> | 'all';
  /** "Also let it use tools I switch on later" (`new_tools=yes`): ticked at first only when no tool is switched on. */
  newTools: boolean;
  /** "Ask me before every tool call it makes" (`ask_every_tool=yes`): unticked at first. */
  askEveryTool: boolean;
  /** Why the last Allow was refused (nothing was made). */
  error?: string;
  /** Hidden fields of the consent form: the request itself and its CSRF token. */
  fields: Record<string, string>;
}

export type AuthorizeOutcome =
  | { kind: 'error-page'; status: 400 | 401 | 403 | 409; message: string }
  | { kind: 'redirect'; location: string }
  | { kind: 'login' }
  | { kind: 'consent'; view: ConsentView; status: 200 | 400 };

export interface PersonSession {
  userId: string;
  csrfToken: string;
}

const page = (message: string, status: 400 | 401 | 403 | 409 = 400): AuthorizeOutcome => ({ kind: 'error-page', status, message });

/** A refusal goes back to the app only once someone is signed in; `description` is what it says. */
type Checked = { ok: true; request: AuthorizeRequest } | { ok: false; outcome: AuthorizeOutcome; description?: string };

/**
 * RFC 6749 §4.1.2.1: the client and redirect URI are checked first, and a failure there is shown to
 * the person, never redirected; after that, errors go back to the app with `state` and `iss`.
 */
async function checkRequest(svc: Services, params: URLSearchParams, opts: { fresh?: boolean } = {}): Promise<Checked> {
  const clientIds = params.getAll('client_id');
  if (clientIds.length !== 1 || !clientIds[0]) return { ok: false, outcome: page('This sign-in link is broken: it does not name the app (client_id).') };
  const client = await findClient(svc, clientIds[0]);
  if (!client) return { ok: false, outcome: page('This app is not registered with Toolport. Go back to the app and connect again.') };

  const redirects = params.getAll('redirect_uri');
  if (redirects.length > 1) return { ok: false, outcome: page('This sign-in link is broken: it names more than one redirect URI.') };
  let redirectUri = redirects[0];
  if (redirectUri === undefined) {
    if (client.redirectUris.length !== 1) return { ok: false, outcome: page('This sign-in link is broken: it does not say where to return (redirect_uri).') };
    redirectUri = client.redirectUris[0]!;
  }
  if (!matchRedirectUri(client.redirectUris, redirectUri)) {
    return { ok: false, outcome: page('The address this link would send you back to is not one the app registered, so Toolport will not go there.') };
  }

  const states = params.getAll('state');
  const state = states.length === 1 && states[0]!.length <= MAX_STATE ? states[0] : undefined;
  const fail = (error: string, description: string): Checked => ({
    ok: false,
    outcome: { kind: 'redirect', location: withParams(redirectUri, { error, error_description: description, state, iss: issuerOf(svc) }) },
    description,
  });

  for (const name of AUTHORIZE_PARAMS) {
    const values = params.getAll(name);
    if (values.length > 1) return fail('invalid_request', `The ${name} parameter is repeated.`);
    if ((values[0]?.length ?? 0) > MAX_PARAM) return fail('invalid_request', `The ${name} parameter is too long.`);
  }
  if (states.length === 1 && state === undefined) return fail('invalid_request', 'The state parameter is too long.');
  const responseType = params.get('response_type');
  if (!responseType) return fail('invalid_request', 'Send response_type=code.');
  if (responseType !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported.');
  const challenge = params.get('code_challenge');
  const method = params.get('code_challenge_method');
  if (!challenge) return fail('invalid_request', 'PKCE is required: send code_challenge with code_challenge_method=S256.');
  if (method !== 'S256') return fail('invalid_request', 'Only code_challenge_method=S256 is supported.');
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return fail('invalid_request', 'code_challenge must be a base64url SHA-256 digest (43 characters).');
  // A verifier is made for one authorization (RFC 7636 §4.1): a challenge that got a code before is
  // a client that stopped making them, or someone replaying its request. Asked where an
  // authorization starts; a replayed consent form is answered by its own rule.
  const [seen] = !opts.fresh ? [] : await svc.db.select({ codeHash: oauthCodes.codeHash }).from(oauthCodes).where(eq(oauthCodes.codeChallenge, challenge)).limit(1);
  if (seen) return fail('invalid_request', 'This code_challenge was used for an earlier authorization: make a new code_verifier, and its code_challenge, for every authorization (RFC 7636 §4.1).');
  const scopes = (params.get('scope') ?? '').split(' ').filter(Boolean);
  if (scopes.some((s) => s !== TOOLS_SCOPE)) return fail('invalid_scope', `The only scope is "${TOOLS_SCOPE}".`);
  const resource = params.get('resource');
  if (!resource) return fail('invalid_target', 'Send resource: the MCP URL the app will use.');
  if (!isMcpUrlShape(svc, resource)) return fail('invalid_target', 'resource must be a Toolport MCP URL.');
  return { ok: true, request: { client, redirectUri, codeChallenge: challenge, resource, scope: TOOLS_SCOPE, state } };
}

function isMcpUrlShape(svc: Services, resource: string): boolean {
  const prefix = `${svc.config.publicUrl}/u/`;
  return resource.startsWith(prefix) && /^[A-Za-z0-9_-]{1,64}\/mcp$/.test(resource.slice(prefix.length));
}

function redirectTo(svc: Services, req: AuthorizeRequest, params: Record<string, string>): AuthorizeOutcome {
  return { kind: 'redirect', location: withParams(req.redirectUri, { ...params, state: req.state, iss: issuerOf(svc) }) };
}

/** The resource must be the signed-in person's own MCP URL (RFC 8707). */
async function checkPerson(svc: Services, req: AuthorizeRequest, userId: string) {
  const [person] = await svc.db
    .select({ email: users.email, userKey: users.userKey, aiApps: users.aiApps })
    .from(users)
    .where(eq(users.id, userId));
  if (!person) return { ok: false as const, outcome: page('Your session has ended. Sign in again.', 401) };
  const mcpUrl = mcpUrlFor(svc, person.userKey);
  if (req.resource !== mcpUrl) {
    return {
      ok: false as const,
      outcome: redirectTo(svc, req, { error: 'invalid_target', error_description: 'resource is not the MCP URL of the signed-in person.' }),
    };
  }
  return { ok: true as const, person: { ...person, mcpUrl } };
}

/** The consent form's CSRF token: bound to the session's secret, the person, the exact request and a time. */
function consentToken(session: PersonSession, req: AuthorizeRequest, issuedAt: number): string {
  const message = JSON.stringify([
    'consent', issuedAt, session.userId, req.client.id, req.redirectUri, req.state ?? null, req.codeChallenge, req.resource, req.scope,
  ]);
  return `${issuedAt}.${createHmac('sha256', session.csrfToken).update(message).digest('base64url')}`;
}

function consentTokenValid(svc: Services, session: PersonSession, req: AuthorizeRequest, token: string | null): boolean {
  const issuedAt = Number(token?.split('.')[0]);
  if (!token || !Number.isSafeInteger(issuedAt)) return false;
  const age = svc.clock.now().getTime() - issuedAt;
  if (age < -60_000 || age > CONSENT_TTL_MS) return false;
  return safeEqual(token, consentToken(session, req, issuedAt));
}

function hostOf(uri: string): string {
  const url = new URL(uri);
  return url.host || url.protocol.replace(/:$/, '');
}

/** GET /oauth/authorize: an error page, an error redirect, the sign-in form, or the consent page. */
export async function prepareAuthorization(svc: Services, params: URLSearchParams, session?: PersonSession): Promise<AuthorizeOutcome> {
  const checked = await checkRequest(svc, params, { fresh: true });
  // Signed out, nobody has vouched for the redirect URI of a client anyone can register: an error
  // sent there would make Toolport an open redirector (RFC 9700 §4.11.2). Show it here instead.
  if (!checked.ok && !session && checked.description) {
    return page(`The app's sign-in link cannot be used: ${checked.description} Go back to the app and try again; if it keeps happening, tell the app's makers.`);
  }
  if (!checked.ok) return checked.outcome;
  const req = checked.request;
  if (!session) return { kind: 'login' };
  const who = await checkPerson(svc, req, session.userId);
  if (!who.ok) return who.outcome;

  return consentPage(svc, { req, params, session, person: who.person, switchedOn: await switchedOnTools(svc, session.userId) });
}

/** The consent page for this request, with a fresh CSRF token; `again` when an Allow was refused. */
function consentPage(
  svc: Services,
  { req, params, session, person, switchedOn, again }: {
    req: AuthorizeRequest;
    params: URLSearchParams;
    session: PersonSession;
    person: { email: string; mcpUrl: string; aiApps: boolean };
    switchedOn: EnabledTool[];
    again?: { error: string; ticked: ReadonlySet<string>; newTools: boolean; askEveryTool: boolean };
  },
): AuthorizeOutcome {
  const fields: Record<string, string> = {};
  for (const name of AUTHORIZE_PARAMS) {
    const value = name === 'redirect_uri' ? req.redirectUri : params.get(name);
    if (value !== null) fields[name] = value;
  }
  fields.csrf_token = consentToken(session, req, svc.clock.now().getTime());
  return {
    kind: 'consent',
    status: again ? 400 : 200,
    view: {
      appName: req.client.name,
      clientId: req.client.id,
      clientHost: req.client.kind === 'cimd' ? hostOf(req.client.id) : null,
      redirectUri: req.redirectUri,
      redirectHost: hostOf(req.redirectUri),
      email: person.email,
      mcpUrl: person.mcpUrl,
      aiApps: person.aiApps,
      scope: req.scope,
      addons: choosableAddons(switchedOn),
      ticked: again?.ticked ?? 'all',
      // With nothing to tick, letting the app in means meaning to give it tools later: the box starts ticked.
      newTools: again?.newTools ?? switchedOn.length === 0,
      askEveryTool: again?.askEveryTool ?? false,
      ...(again ? { error: again.error } : {}),
      fields,
    },
  };
}

/** The request is checked again; the CSRF token is bound to this session and this exact request. */
export async function decideAuthorization(
  svc: Services,
  { form, session }: { form: URLSearchParams; session: PersonSession },
): Promise<AuthorizeOutcome> {
  const checked = await checkRequest(svc, form);
  if (!checked.ok) return checked.outcome;
  const req = checked.request;
  if (!consentTokenValid(svc, session, req, form.get('csrf_token'))) {
    return page('This consent form has expired or did not come from Toolport. Go back to the app and connect again.', 403);
  }
  const who = await checkPerson(svc, req, session.userId);
  if (!who.ok) return who.outcome;
  const decision = form.get('decision');
  if (decision === 'deny') return redirectTo(svc, req, { error: 'access_denied', error_description: 'The person did not let the app in.' });
  if (decision !== 'allow') return page('Choose Allow or Deny.');
  // The tools ticked must be ones the person has switched on now: a forged or stale form makes nothing.
  const switchedOn = await switchedOnTools(svc, session.userId);
  const choice = readConsentChoice(form, switchedOn);
  if (!choice.ok) {
    return consentPage(svc, { req, params: form, session, person: who.person, switchedOn, again: { error: choice.message, ticked: choice.ticked, newTools: choice.newTools, askEveryTool: choice.askEveryTool } });
  }

  const code = newToken('tpc_');
  const now = svc.clock.now();
  const grantId = newId('grt');
  // One form, one connection: a replayed form (a second click, the back button) finds its grant made.
  const made = await svc.db.transaction(async (tx) => {
    const [grant] = await tx
      .insert(oauthGrants)
      .values({
        id: grantId,
        userId: session.userId,
        clientId: req.client.id,
        scope: req.scope,
        resource: req.resource,
        redirectUri: req.redirectUri,
        consentKey: sha256(form.get('csrf_token')!),
        tools: choice.tools,
        newTools: choice.newTools,
        askEveryTool: choice.askEveryTool,
        createdAt: now,
      })
      .onConflictDoNothing({ target: oauthGrants.consentKey })
      .returning({ id: oauthGrants.id });
    if (!grant) return false;
    await tx
      .update(oauthClients)
      .set({ firstGrantAt: now })
      .where(and(eq(oauthClients.id, req.client.id), isNull(oauthClients.firstGrantAt)));
    await tx.insert(oauthCodes).values({
      codeHash: sha256(code),
      grantId,
      clientId: req.client.id,
      redirectUri: req.redirectUri,
      codeChallenge: req.codeChallenge,
      resource: req.resource,
      scope: req.scope,
      expiresAt: new Date(now.getTime() + CODE_TTL_MS),
    });
    return true;
  });
  if (made) {
    svc.audit.record(session.userId, 'app.let_in', {
      grant: grantId,
      client: req.client.id,
      app: req.client.name,
      redirectUri: req.redirectUri,
      scope: req.scope,
      tools: choice.tools,
      newTools: choice.newTools,
      askEveryTool: choice.askEveryTool,
    });
  } else {
    return page('You already answered this request, so nothing more was done. Go back to the app; if it is not connected, connect it again from there.', 409);
  }
  return redirectTo(svc, req, { code });
}
