import { mcpUrlFor } from '../accounts/accounts';
import { notFound } from '../errors';
import type { Services } from '../services';

export const TOOLS_SCOPE = 'tools';
const SCOPES = [TOOLS_SCOPE] as const;
export const TOKEN_AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
export type TokenAuthMethod = (typeof TOKEN_AUTH_METHODS)[number];

/** The issuer is `publicUrl`, byte for byte, in the metadata, in tokens and in the `iss` redirect parameter. */
export const issuerOf = (svc: Services) => svc.config.publicUrl;

/** RFC 8414 authorization server metadata (also served as openid-configuration for clients that only look there). */
export function authorizationServerMetadata(svc: Services) {
  const issuer = issuerOf(svc);
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    jwks_uri: `${issuer}/oauth/jwks`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

/**
 * Stands for the key in an MCP URL that names every person's at once: the deployment's server card
 * and the registry entries, which no one person's key may appear in.
 */
const USER_KEY_VARIABLE = '{userKey}';
const USER_KEY_SHAPE = /^[A-Za-z0-9_-]{24}$/;

/** Where RFC 9728 §3.1 puts the metadata of a resource: the well-known segment before the resource's path. */
function resourceMetadataUrl(svc: Services, userKey: string): string {
  const mcp = new URL(mcpUrlFor(svc, userKey));
  return `${mcp.origin}/.well-known/oauth-protected-resource${mcp.pathname}`;
}

const resourceDocument = (svc: Services, userKey: string) => ({
  resource: mcpUrlFor(svc, userKey),
  authorization_servers: [issuerOf(svc)],
  scopes_supported: [...SCOPES],
  bearer_methods_supported: ['header'],
  resource_name: 'Toolport',
});

/**
 * RFC 9728 protected resource metadata for one person's MCP URL: the same for every well-formed MCP
 * URL, real or made up, as the MCP endpoint's 401 is: which URLs belong to someone is nobody's
 * business (a 404 for made-up ones answered exactly that). A malformed key is NOT_FOUND.
 */
export async function protectedResourceMetadata(svc: Services, userKey: string) {
  if (!USER_KEY_SHAPE.test(userKey)) throw notFound('That MCP URL');
  return resourceDocument(svc, userKey);
}

/**
 * How an app signs in to a person's MCP URL, as the server cards say it: the URL the 401 names as
 * `resource_metadata`, and the RFC 9728 document found there. Without a key: every person's at once,
 * USER_KEY_VARIABLE standing for the key.
 */
export function signInFor(svc: Services, userKey?: string) {
  if (userKey !== undefined && !USER_KEY_SHAPE.test(userKey)) throw notFound('That MCP URL');
  const key = userKey ?? USER_KEY_VARIABLE;
  // URL percent-encodes the variable's braces, as it does whatever a made-up key holds.
  const metadataUrl = resourceMetadataUrl(svc, key).replace(encodeURI(USER_KEY_VARIABLE), USER_KEY_VARIABLE);
  return { resource_metadata: metadataUrl, ...resourceDocument(svc, key) };
}

/**
 * The `WWW-Authenticate` value of the MCP endpoint's 401 (RFC 6750 §3, RFC 9728 §5.1): where to find
 * the resource metadata, the scope to ask for, and `error` when a token was sent but is not good.
 */
export function wwwAuthenticate(svc: Services, userKey: string, error?: 'invalid_token' | 'insufficient_scope'): string {
  const parts = [`resource_metadata="${resourceMetadataUrl(svc, userKey)}"`, `scope="${TOOLS_SCOPE}"`];
  if (error) parts.push(`error="${error}"`);
  return `Bearer ${parts.join(', ')}`;
}
