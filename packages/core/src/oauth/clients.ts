import { eq, sql } from 'drizzle-orm';
import { safeEqual, sha256 } from '../crypto';
import { oauthClients } from '../db/schema/index';
import { newId, newToken } from '../ids';
import type { Services } from '../services';
import { countedNetwork } from '../limits';
import { oauthError } from './errors';
import type { TokenAuthMethod } from './metadata';
import { isMetadataDocumentId, resolveMetadataDocumentClient } from './cimd';
import { readClientMetadata, toClient, type OAuthClient } from './client-metadata';
import { executedRows } from '../db/client';

/** Dynamic registrations allowed per client network per window. */
const REGISTRATION_LIMIT = { max: 20, windowMs: 3600 * 1000 };
/** A registration no person let in within this long is removed: an app registers just before it asks. */
const UNUSED_CLIENT_MS = 24 * 3600 * 1000;

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
  const rows = executedRows<{ count: number; window_start: string | Date }>(result);
  const row = rows[0]!;
  return { count: Number(row.count), windowStart: new Date(row.window_start), now };
}

/** Dynamic client registration (RFC 7591 §3), limited per client address. */
export async function registerClient(svc: Services, { input, clientAddress }: { input: unknown; clientAddress?: string }) {
  if (clientAddress) {
    const { count, windowStart, now } = await countAttempt(svc, `register:${countedNetwork(clientAddress)}`, REGISTRATION_LIMIT.windowMs);
    if (count > REGISTRATION_LIMIT.max) {
      const retryAfterSeconds = Math.max(1, Math.ceil((windowStart.getTime() + REGISTRATION_LIMIT.windowMs - now.getTime()) / 1000));
      throw oauthError('too_many_requests', 'Too many client registrations from this network. Try again later.', { retryAfterSeconds });
    }
  }
  await removeUnusedClients(svc);
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

/** Registrations that no person let in within a day; a few at a time, as registrations come. */
async function removeUnusedClients(svc: Services) {
  const before = new Date(svc.clock.now().getTime() - UNUSED_CLIENT_MS).toISOString();
  await svc.db.execute(sql`
    delete from oauth_clients where id in (
      select c.id from oauth_clients c
      where c.kind = 'dcr' and c.first_grant_at is null and c.created_at < ${before}::timestamptz
        and not exists (select 1 from oauth_grants g where g.client_id = c.id)
      limit 100)`);
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
