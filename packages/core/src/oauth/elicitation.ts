import { and, eq, ne } from 'drizzle-orm';
import { oauthGrants } from '../db/schema/index';
import type { Services } from '../services';

/** Whether an initialize's client capabilities declare URL-mode elicitation (MCP 2025-11-25: `elicitation: { url: {} }`). */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: unknown } | null | undefined)?.elicitation;
  const url = (elicitation as { url?: unknown } | null | undefined)?.url;
  return typeof url === 'object' && url !== null && !Array.isArray(url);
}

/**
 * Remembers on the grant whether its app's last initialize declared URL-mode elicitation: the MCP
 * endpoint is stateless, so the process that answers a later tools/call learns it from here (the
 * statement that records a held call reads it). Writes only when it changed. True if it did.
 */
export async function recordUrlElicitation(svc: Services, grantId: string, declared: boolean): Promise<boolean> {
  const changed = await svc.db
    .update(oauthGrants)
    .set({ urlElicitation: declared })
    .where(and(eq(oauthGrants.id, grantId), ne(oauthGrants.urlElicitation, declared)))
    .returning({ id: oauthGrants.id });
  return changed.length > 0;
}

/**
 * Whether the grant's app declared URL-mode elicitation at its last initialize. Read only where a
 * call that does not wait for approval offers a link (an account to connect, installs/account-tokens.ts).
 */
export async function grantDeclaresUrlElicitation(svc: Services, grantId: string): Promise<boolean> {
  const [row] = await svc.db.select({ urlElicitation: oauthGrants.urlElicitation }).from(oauthGrants).where(eq(oauthGrants.id, grantId));
  return row?.urlElicitation ?? false;
}
