import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { safeEqual, sha256 } from '../crypto';
import { oauthClients } from '../db/schema/index';
import { newId, newToken } from '../ids';
import type { Services } from '../services';
import { oauthError } from './errors';
import { TOKEN_AUTH_METHODS, TOOLS_SCOPE, type TokenAuthMethod } from './metadata';
import { redirectUriProblem } from './redirect-uris';
import { isMetadataDocumentId, resolveMetadataDocumentClient } from './cimd';

const MAX_REDIRECT_URIS = 10;
const MAX_CLIENT_NAME = 100;
const DEFAULT_CLIENT_NAME = 'Unnamed app';
/** Dynamic registrations allowed per client address per window. */
const REGISTRATION_LIMIT = { max: 20, windowMs: 3600 * 1000 };

const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

/** A registered app, as the OAuth server needs it. */
export interface OAuthClient {
  id: string;
  name: string;
  kind: 'dcr' | 'cimd';
  redirectUris: string[];
  authMethod: TokenAuthMethod;
  grantTypes: string[];
  secretHash: string | null;
}

export interface ClientMetadata {
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: TokenAuthMethod;
  scope: string;
  [key: string]: unknown;
}

/** Removes what could spoof a name on the consent page: controls, bidi overrides, zero-width characters. */
function sanitizeClientName(raw: string): string {
  return raw
    .normalize('NFC')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

const URIS = `redirect_uris must be a list of 1 to ${MAX_REDIRECT_URIS} URIs.`;
const GRANTS = 'grant_types may only contain authorization_code and refresh_token.';
const ONLY_CODE = { errorMap: () => ({ message: 'response_types may only be ["code"].' }) };
/** Optional fields are kept when well-formed and dropped, not refused, when not. */
const optionalUrl = z.unknown().transform((v) => (typeof v === 'string' && v.length <= 2000 && /^https:\/\//i.test(v) ? v : undefined));
const optionalText = z.unknown().transform((v) => (typeof v === 'string' && v.length <= 200 ? sanitizeClientName(v) : undefined));

/** RFC 7591 §2 metadata, in the order its problems are reported (the first one is answered). */
const clientMetadataSchema = (allowSecret: boolean) =>
  z.object(
    {
      redirect_uris: z
        .array(z.unknown(), { message: URIS })
        .min(1, URIS)
        .max(MAX_REDIRECT_URIS, URIS)
        .transform((uris, ctx) => {
          for (const [i, uri] of uris.entries()) {
            const problem = typeof uri === 'string' ? redirectUriProblem(uri) : 'must be a string';
            if (problem) ctx.addIssue({ code: 'custom', path: [i], message: `redirect_uris[${i}] ${problem}.` });
          }
          return uris as string[];
        }),
      client_name: z
        .string({ message: 'client_name must be a string.' })
        .nullish()
        .transform((raw, ctx) => {
          const clean = sanitizeClientName(raw ?? '');
          if (clean.length > MAX_CLIENT_NAME) ctx.addIssue({ code: 'custom', message: `client_name must be at most ${MAX_CLIENT_NAME} characters.` });
          return clean || DEFAULT_CLIENT_NAME;
        }),
      token_endpoint_auth_method: z
        .enum(TOKEN_AUTH_METHODS, { message: `token_endpoint_auth_method must be one of ${TOKEN_AUTH_METHODS.join(', ')}.` })
        .nullish()
        .transform((method) => method ?? 'none')
        .refine((method) => allowSecret || method === 'none', 'A client ID metadata document describes a public client: use token_endpoint_auth_method none.'),
      // Refresh tokens are part of every grant here, so the default lists both (RFC 7591 §3.2.1 lets the server say so).
      grant_types: z
        .array(z.enum(GRANT_TYPES, { message: GRANTS }), { message: GRANTS })
        .min(1, GRANTS)
        .refine((grants) => grants.includes('authorization_code'), 'grant_types must include authorization_code.')
        .nullish(),
      response_types: z.tuple([z.literal('code', ONLY_CODE)], ONLY_CODE).nullish(),
      scope: z.string({ message: 'scope must be a string.' }).optional(),
      client_uri: optionalUrl,
      logo_uri: optionalUrl,
      tos_uri: optionalUrl,
      policy_uri: optionalUrl,
      software_id: optionalText,
      software_version: optionalText,
    },
    { message: 'Send the client metadata as a JSON object.' },
  );
const metadataSchemas = { registered: clientMetadataSchema(true), document: clientMetadataSchema(false) };
const OPTIONAL = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'software_id', 'software_version'] as const;

/**
 * Checks client metadata (RFC 7591 §2) and returns what is stored and echoed. Unknown fields are
 * dropped; unknown grant or response types, bad redirect URIs and bad auth methods are refused.
 */
export function readClientMetadata(input: unknown, opts: { allowSecret: boolean }): ClientMetadata {
  const parsed = metadataSchemas[opts.allowSecret ? 'registered' : 'document'].safeParse(input);
  if (!parsed.success) {
    const [first] = parsed.error.issues;
    throw oauthError(first?.path[0] === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata', first?.message ?? 'The client metadata is not valid.');
  }
  const body = parsed.data;
  const meta: ClientMetadata = {
    client_name: body.client_name,
    redirect_uris: body.redirect_uris,
    grant_types: [...new Set(body.grant_types ?? GRANT_TYPES)],
    response_types: ['code'],
    token_endpoint_auth_method: body.token_endpoint_auth_method,
    scope: TOOLS_SCOPE,
  };
  for (const key of OPTIONAL) if (body[key] !== undefined) meta[key] = body[key];
  return meta;
}

/** One fixed window per key, counted in Postgres so every API process shares it. */
async function countAttempt(svc: Services, key: string, windowMs: number) {
  const now = svc.clock.now();
  const at = now.toISOString();
  const windowStart = new Date(now.getTime() - windowMs).toISOString();
  const result = await svc.db.execute(sql`
    insert into oauth_rate_limits (key, count, window_start) values (${key}, 1, ${at}::timestamptz)
    on conflict (key) do update set
      count = case when oauth_rate_limits.window_start < ${windowStart}::timestamptz then 1 else oauth_rate_limits.count + 1 end,
      window_start = case when oauth_rate_limits.window_start < ${windowStart}::timestamptz then ${at}::timestamptz else oauth_rate_limits.window_start end
    returning count, window_start`);
  const rows = ((result as { rows?: unknown[] }).rows ?? (result as unknown as unknown[])) as Array<{ count: number; window_start: string | Date }>;
  const row = rows[0]!;
  return { count: Number(row.count), windowStart: new Date(row.window_start), now };
}

/** Dynamic client registration (RFC 7591 §3), limited per client address. */
export async function registerClient(svc: Services, { input, clientAddress }: { input: unknown; clientAddress?: string }) {
  if (clientAddress) {
    const { count, windowStart, now } = await countAttempt(svc, `register:${clientAddress}`, REGISTRATION_LIMIT.windowMs);
    if (count > REGISTRATION_LIMIT.max) {
      const retryAfterSeconds = Math.max(1, Math.ceil((windowStart.getTime() + REGISTRATION_LIMIT.windowMs - now.getTime()) / 1000));
      throw oauthError('too_many_requests', 'Too many client registrations from this address. Try again later.', { retryAfterSeconds });
    }
  }
  const meta = readClientMetadata(input, { allowSecret: true });
  const id = newId('cli');
  const secret = meta.token_endpoint_auth_method === 'none' ? undefined : newToken('tpcs_');
  const now = svc.clock.now();
  await svc.db.insert(oauthClients).values({
    id,
    name: meta.client_name,
    redirectUris: meta.redirect_uris,
    metadata: meta,
    kind: 'dcr',
    secretHash: secret ? sha256(secret) : null,
    createdAt: now,
  });
  return {
    client_id: id,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    ...meta,
  };
}

export function toClient(row: typeof oauthClients.$inferSelect): OAuthClient {
  const meta = (row.metadata ?? {}) as Partial<ClientMetadata>;
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    redirectUris: row.redirectUris,
    authMethod: meta.token_endpoint_auth_method ?? 'none',
    grantTypes: meta.grant_types ?? [...GRANT_TYPES],
    secretHash: row.secretHash,
  };
}

async function findRegisteredClient(svc: Services, clientId: string): Promise<OAuthClient | undefined> {
  if (clientId.length > 2000) return undefined;
  const [row] = await svc.db.select().from(oauthClients).where(eq(oauthClients.id, clientId));
  return row ? toClient(row) : undefined;
}

function decodeBasicPart(part: string): string {
  // RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined and base64-encoded.
  return decodeURIComponent(part.replace(/\+/g, ' '));
}

/** RFC 6749 §2.3: the method the client registered, and only that one. */
export async function authenticateClient(
  svc: Services,
  form: URLSearchParams,
  authorization: string | undefined,
  lookup: (svc: Services, clientId: string) => Promise<OAuthClient | undefined>,
): Promise<OAuthClient> {
  let clientId = form.get('client_id') ?? undefined;
  let secret = form.get('client_secret') ?? undefined;
  let used: TokenAuthMethod = secret !== undefined ? 'client_secret_post' : 'none';
  const basic = authorization ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization) : null;
  if (authorization && /^Basic\b/i.test(authorization)) {
    const decoded = basic ? Buffer.from(basic[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon < 0) throw oauthError('invalid_client', 'The Basic credentials are malformed.', { basic: true });
    if (secret !== undefined) throw oauthError('invalid_request', 'Authenticate the client one way only.');
    let basicId: string;
    try {
      basicId = decodeBasicPart(decoded.slice(0, colon));
      secret = decodeBasicPart(decoded.slice(colon + 1));
    } catch {
      throw oauthError('invalid_client', 'The Basic credentials are malformed.', { basic: true });
    }
    if (clientId !== undefined && clientId !== basicId) throw oauthError('invalid_request', 'client_id differs from the Basic credentials.');
    clientId = basicId;
    used = 'client_secret_basic';
  }
  if (!clientId) throw oauthError('invalid_client', 'Send client_id.', { basic: used === 'client_secret_basic' });
  const client = await lookup(svc, clientId);
  if (!client) throw oauthError('invalid_client', 'This client is not registered.', { basic: used === 'client_secret_basic' });
  if (client.authMethod === 'none') {
    if (used !== 'none') throw oauthError('invalid_client', 'This client is public: it has no secret to send.');
    return client;
  }
  if (used !== client.authMethod) {
    throw oauthError('invalid_client', `This client must authenticate with ${client.authMethod}.`, { basic: client.authMethod === 'client_secret_basic' });
  }
  if (!secret || !client.secretHash || !safeEqual(sha256(secret), client.secretHash)) {
    throw oauthError('invalid_client', 'The client secret is wrong.', { basic: used === 'client_secret_basic' });
  }
  return client;
}

/** A registered client, or a client ID metadata document fetched (and cached) when the id is an https URL. */
export async function findClient(svc: Services, clientId: string): Promise<OAuthClient | undefined> {
  if (isMetadataDocumentId(clientId)) return resolveMetadataDocumentClient(svc, clientId);
  return findRegisteredClient(svc, clientId);
}
