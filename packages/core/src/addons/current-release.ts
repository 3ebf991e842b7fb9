import { and, eq, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client';
import { addons, addonVersions } from '../db/schema/index';
import type { Manifest } from './types';

/** Joins an add-on to its current release (`addon_versions` at `addons.version`): what it declares now. */
export const isCurrentRelease = and(eq(addonVersions.addonId, addons.id), eq(addonVersions.version, addons.version));

/** `where` carries the verb's access rule (not deleted, its owner, or the person's install). */
export async function currentManifest(db: Db, where: SQL | undefined): Promise<{ name: string; manifest: Manifest } | undefined> {
  const [row] = await db.select({ name: addons.name, manifest: addonVersions.manifest }).from(addons).innerJoin(addonVersions, isCurrentRelease).where(where);
  return row ? { name: row.name, manifest: row.manifest as Manifest } : undefined;
}
