import { and, desc, eq, isNull, or, sql } from 'drizzle-orm';
import type { Services } from '../services';
import { addonSecrets } from '../db/schema/index';

/** Live signing secrets of an add-on, newest first, in clear (for signing only). */
export async function liveSecrets(svc: Services, addonId: string): Promise<string[]> {
  const rows = await svc.db
    .select({ secretEnc: addonSecrets.secretEnc })
    .from(addonSecrets)
    .where(
      and(
        eq(addonSecrets.addonId, addonId),
        or(isNull(addonSecrets.expiresAt), sql`${addonSecrets.expiresAt} > ${svc.clock.now().toISOString()}::timestamptz`),
      ),
    )
    .orderBy(desc(addonSecrets.createdAt));
  return rows.map((r) => svc.secrets.webhookBox.open(r.secretEnc));
}
