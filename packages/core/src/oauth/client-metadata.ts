import { z } from 'zod';
import type { oauthClients } from '../db/schema/index';
import { oauthError } from './errors';
import { TOKEN_AUTH_METHODS, TOOLS_SCOPE, type TokenAuthMethod } from './metadata';
import { redirectUriProblem } from './redirect-uris';

const MAX_REDIRECT_URIS = 10;
const MAX_CLIENT_NAME = 100;
const DEFAULT_CLIENT_NAME = 'Unnamed app';
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

/** RFC 7591 §2: unknown fields are dropped; unknown grant or response types are refused. */
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
