import type { Services } from '../services';
import type { OAuthClient } from './clients';

/** Client ID metadata documents: a client_id that is an https URL. Filled in once the outbound client lands. */
export function isMetadataDocumentId(clientId: string): boolean {
  return /^https:\/\//i.test(clientId);
}

export async function resolveMetadataDocumentClient(_svc: Services, _clientId: string): Promise<OAuthClient | undefined> {
  return undefined;
}
