/** Schemes that must never receive a code: they run code, read files or go nowhere useful. */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:', 'filesystem:', 'view-source:',
  'ws:', 'wss:', 'ftp:', 'mailto:', 'tel:', 'sms:', 'intent:', 'jar:', 'chrome:', 'resource:',
]);
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const MAX_REDIRECT_URI_LENGTH = 2000;
/** Format characters (bidi controls, zero-width), private-use and unpaired surrogates, spaces other than U+0020. */
// eslint-disable-next-line no-misleading-character-class -- it lists lone combining and filler characters on purpose
const INVISIBLE = /[\p{Cf}\p{Co}\p{Cs}\p{Zl}\p{Zp}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u115f\u1160\u3164\uffa0\ufe00-\ufe0f]/u;

/** Why a redirect URI cannot be registered, or undefined when it can. */
export function redirectUriProblem(raw: string): string | undefined {
  if (raw.length === 0 || raw.length > MAX_REDIRECT_URI_LENGTH) return `must be 1 to ${MAX_REDIRECT_URI_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f\\]/.test(raw)) return 'must not contain spaces, control characters or backslashes';
  if (INVISIBLE.test(raw)) return 'must not contain invisible or direction-changing characters';
  if (raw.includes('#')) return 'must not contain a fragment';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URI';
  }
  const scheme = url.protocol.toLowerCase();
  if (FORBIDDEN_SCHEMES.has(scheme)) return `must not use the ${scheme} scheme`;
  if (scheme === 'https:' || scheme === 'http:') {
    if (url.username || url.password || /^[a-z]+:\/\/[^/?]*@/i.test(raw)) return 'must not contain credentials';
    // The URL parser reads `https:///cb` as host "cb": the host must be written where it belongs.
    if (!url.hostname || /^https?:\/\/[/?]/i.test(raw)) return 'must name a host';
    if (scheme === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return 'must use https, or http only on 127.0.0.1, [::1] or localhost';
    return undefined;
  }
  // A private-use scheme for native apps (RFC 8252 §7.1) is a reverse domain name the app owns,
  // such as com.example.app:/callback; a bare word may be an OS handler (ms-msdt:, search-ms:, shell:).
  if (!/^[a-z][a-z0-9+.-]*:$/.test(scheme)) return 'has an invalid scheme';
  if (!/^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+:$/.test(scheme)) return 'must use https, loopback http, or a private-use scheme that is a reverse domain name (com.example.app:/callback)';
  return undefined;
}

function loopbackWithoutPort(raw: string): string | undefined {
  if (!/^http:\/\//i.test(raw)) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.hostname !== '127.0.0.1' && url.hostname !== '[::1]' && url.hostname !== 'localhost') return undefined;
  if (url.username || url.password || url.hash || raw.includes('#')) return undefined;
  return `http://${url.hostname}${url.pathname}${url.search}`;
}

/**
 * Exact string match against the registered URIs, except that a loopback http URI may use any port
 * (RFC 8252 §7.3: native apps listen on an ephemeral port).
 */
export function matchRedirectUri(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  const wanted = loopbackWithoutPort(requested);
  // Port-free comparison only for URIs that are already in their normal form, so no two spellings match.
  if (!wanted || new URL(requested).href !== requested) return false;
  return registered.some((r) => loopbackWithoutPort(r) === wanted && new URL(r).href === r);
}

/** Appends response parameters to a redirect URI, keeping its own query as it is (RFC 6749 §3.1.2). */
export function withParams(redirectUri: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v);
  return `${redirectUri}${redirectUri.includes('?') ? '&' : '?'}${query.toString()}`;
}
