import { ToolportError } from '../errors';

/** Error codes of RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1 and RFC 8707 §2. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'unsupported_token_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'too_many_requests'
  | 'server_error';

/**
 * An OAuth error the adapter answers as `{error, error_description}`. Its status is its code's
 * (HTTP_STATUS): 401 for client authentication, 429 for a flood, 400 for the rest (RFC 6749 §5.2).
 */
export function oauthError(error: OAuthErrorCode, description: string, extra: Record<string, unknown> = {}): ToolportError {
  const code = error === 'invalid_client' ? 'UNAUTHORIZED' : error === 'too_many_requests' ? 'LIMIT_EXCEEDED' : 'BAD_REQUEST';
  return new ToolportError(code, description, { ...extra, oauth: error });
}

/** Reads the OAuth error code of an error made by `oauthError`, if it is one. */
export function oauthCodeOf(err: ToolportError): OAuthErrorCode | undefined {
  const code = err.details.oauth;
  return typeof code === 'string' ? (code as OAuthErrorCode) : undefined;
}
