import { eq } from 'drizzle-orm';
import { cacheKind } from '../caches';
import { oauthClients } from '../db/schema/index';
import type { Services } from '../services';
import { readClientMetadata, toClient, type OAuthClient } from './client-metadata';

/** Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, MCP 2025-11-25). */
const CIMD_MAX_BYTES = 5 * 1024;
const CIMD_TIMEOUT_MS = 5000;
/** A cached document is fetched again after this long. */
const CIMD_REFRESH_MS = 3600 * 1000;
/** If a refetch fails, a cached document still serves this long after its last good fetch. */
const CIMD_STALE_MS = 24 * 3600 * 1000;
/** A URL that failed is not fetched again this soon (the authorize page is public: no fetch amplifier). */
const CIMD_FAILURE_MS = 60 * 1000;

/** The document URLs that failed within CIMD_FAILURE_MS, by the services' clock (tests steer it). */
const FAILURES = cacheKind('metadata document failures', (_svc, scope) => scope.map<string, true>(10_000, CIMD_FAILURE_MS));

/** An https URL with a path, and nothing that could make two spellings of one id (RFC 3986 §6). */
export function isMetadataDocumentId(clientId: string): boolean {
  return /^https:\/\//i.test(clientId);
}

function validDocumentUrl(clientId: string): boolean {
  if (clientId.length > 2000 || /[#\s\\]/.test(clientId)) return false;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  return (
    url.protocol === 'https:' &&
    url.href === clientId &&
    !url.username &&
    !url.password &&
    !url.search &&
    url.pathname.length > 1 &&
    !/\/\.\.?(\/|$)/.test(url.pathname)
  );
}

async function fetchDocument(svc: Services, clientId: string) {
  const res = await svc.outbound.request({
    url: clientId,
    method: 'GET',
    headers: { accept: 'application/json' },
    deadline: svc.clock.now().getTime() + CIMD_TIMEOUT_MS,
    maxBytes: CIMD_MAX_BYTES,
  });
  if (res.status !== 200) throw new Error(`the document answered ${res.status}`);
  const doc = JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('the document is not a JSON object');
  if (doc.client_id !== clientId) throw new Error('the document names another client_id');
  if (doc.client_secret !== undefined || doc.client_secret_expires_at !== undefined) throw new Error('the document carries a secret');
  return readClientMetadata(doc, { allowSecret: false });
}

/** Fetched through the SSRF-checked outbound client; cached in oauth_clients (kind 'cimd'). */
export async function resolveMetadataDocumentClient(svc: Services, clientId: string): Promise<OAuthClient | undefined> {
  if (!validDocumentUrl(clientId)) return undefined;
  const [cached] = await svc.db.select().from(oauthClients).where(eq(oauthClients.id, clientId));
  if (cached && cached.kind !== 'cimd') return undefined;
  const now = svc.clock.now().getTime();
  const fetchedAt = cached?.fetchedAt?.getTime() ?? 0;
  if (cached && now - fetchedAt < CIMD_REFRESH_MS) return toClient(cached);

  const recent = svc.caches.get(FAILURES);
  const stale = cached && now - fetchedAt < CIMD_STALE_MS ? toClient(cached) : undefined;
  if (recent.has(clientId)) return stale;

  let meta;
  try {
    meta = await fetchDocument(svc, clientId);
  } catch (err) {
    recent.set(clientId, true, now);
    svc.log.warn('client metadata document refused', { clientId, reason: err instanceof Error ? err.message : String(err) });
    return stale;
  }
  recent.delete(clientId);
  const row = { id: clientId, name: meta.client_name, redirectUris: meta.redirect_uris, metadata: meta, kind: 'cimd' as const, secretHash: null };
  const [saved] = await svc.db
    .insert(oauthClients)
    .values({ ...row, fetchedAt: new Date(now) })
    .onConflictDoUpdate({ target: oauthClients.id, set: { name: row.name, redirectUris: row.redirectUris, metadata: meta, fetchedAt: new Date(now) } })
    .returning();
  return toClient(saved!);
}
