import { and, eq, ne } from 'drizzle-orm';
import { oauthGrants } from '../db/schema/index';
import type { Services } from '../services';

/** Whether an initialize's client capabilities declare URL-mode elicitation (MCP 2025-11-25: `elicitation: { url: {} }`). */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: unknown } | null | undefined)?.elicitation;
  const url = (elicitation as { url?: unknown } | null | undefined)?.url;
  return typeof url === 'object' && url !== null && !Array.isArray(url);
}

/** The MCP endpoint is stateless, so a later tools/call learns it from the grant. True if it changed. */
export async function recordUrlElicitation(svc: Services, grantId: string, declared: boolean): Promise<boolean> {
  const changed = await svc.db
    .update(oauthGrants)
    .set({ urlElicitation: declared })
    .where(and(eq(oauthGrants.id, grantId), ne(oauthGrants.urlElicitation, declared)))
    .returning({ id: oauthGrants.id });
  return changed.length > 0;
}

/** Read only where a call that does not wait for approval offers a link (an account to connect). */
export async function grantDeclaresUrlElicitation(svc: Services, grantId: string): Promise<boolean> {
  const [row] = await svc.db.select({ urlElicitation: oauthGrants.urlElicitation }).from(oauthGrants).where(eq(oauthGrants.id, grantId));
  return row?.urlElicitation ?? false;
}
