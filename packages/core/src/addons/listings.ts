import { and, asc, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Ctx } from '../context';
import { requireOperator } from '../context';
import { notFound, ToolportError } from '../errors';
import { inputObject, parseInput } from '../input';
import { addons, installs, users } from '../db/schema/index';
import type { Services } from '../services';
import { invisibleProblem } from './manifest';
import { OPERATOR_CHAIN } from '../audit/writer';

/**
 * Public listings (DESIGN.md catalog). Until approved, and once delisted, only the developer can
 * install; installs of a delisted add-on stay, with their tools off for apps.
 */
export type ListingStatus = 'pending' | 'approved' | 'rejected' | 'delisted';

/** The listing a push leaves: a public push asks for review unless the add-on is already listed. */
export function listingAfterPush(visibility: 'private' | 'public', current: ListingStatus | null): ListingStatus | null {
  if (visibility === 'private') return current === 'delisted' ? 'delisted' : null;
  return current === 'approved' ? 'approved' : 'pending';
}

/** Add-ons a person may see and install: listed ones, and their own. Not deleted. */
export const visibleTo = (userId: string) =>
  and(isNull(addons.deletedAt), or(and(eq(addons.visibility, 'public'), eq(addons.listing, 'approved')), eq(addons.ownerId, userId)));

const ONLY_OPERATORS = 'Only Toolport’s operators review listings.';

/** The host a webhook URL names, shown as where an add-on runs ('' for an unreadable URL). */
export const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
};

const listingsQuery = z.object({ status: z.enum(['pending', 'all'], { message: 'Use pending or all.' }).optional() });

/** `GET /api/operator/listings` (each). */
export type ListingView = Awaited<ReturnType<typeof listListings>>[number];

/** The review queue: pending requests first (oldest first), then the other decided listings. */
export async function listListings({ ctx, status }: { ctx: Ctx; status?: string }) {
  requireOperator(ctx, ONLY_OPERATORS);
  const filter = parseInput(listingsQuery, { status }, 'Unknown status filter.');
  const wanted: ListingStatus[] = filter.status === 'all' ? ['pending', 'approved', 'rejected', 'delisted'] : ['pending'];
  const rows = await ctx.svc.db
    .select({ addon: addons, publisher: users.displayName, confirmed: users.emailVerifiedAt, installs: sql<number>`(select count(*) from ${installs} where ${installs.addonId} = ${addons.id})::int` })
    .from(addons)
    .innerJoin(users, eq(users.id, addons.ownerId))
    .where(and(isNull(addons.deletedAt), inArray(addons.listing, wanted)))
    .orderBy(desc(sql`${addons.listing} = 'pending'`), asc(addons.listingChangedAt));
  return rows.map(({ addon, publisher, confirmed, installs: count }) => ({
    addonId: addon.id,
    name: addon.name,
    description: addon.description,
    status: addon.listing!,
    reason: addon.listingReason,
    requestedAt: addon.listingChangedAt?.toISOString() ?? null,
    version: addon.version,
    publisher: { name: publisher, webhookHost: hostOf(addon.webhookUrl), emailConfirmed: confirmed !== null },
    installs: count,
  }));
}

/** The publisher name the catalog shows: 1 to 60 characters, nothing hidden (as in manifests). */
export const publisherName = (rule: string) =>
  z.string({ message: rule }).transform((raw, ctx) => {
    const name = raw.normalize('NFC').trim();
    if (name.length < 1 || Array.from(name).length > 60) ctx.addIssue({ code: 'custom', message: rule });
    else {
      const hidden = invisibleProblem(name);
      if (hidden) ctx.addIssue({ code: 'custom', message: `The name ${hidden}.` });
    }
    return name;
  });

/** Whether an add-on of the person is listed for everyone (its publisher name was then checked by an operator). */
export async function hasListedAddon(svc: Services, userId: string) {
  const [row] = await svc.db
    .select({ id: addons.id })
    .from(addons)
    .where(and(eq(addons.ownerId, userId), isNull(addons.deletedAt), eq(addons.visibility, 'public'), eq(addons.listing, 'approved')))
    .limit(1);
  return row !== undefined;
}

const DECISIONS = { approve: 'approved', reject: 'rejected', delist: 'delisted' } as const;
const REASON = 'Give the reason as text of up to 500 characters.';
const decisionInput = inputObject({
  decision: z.enum(['approve', 'reject', 'delist'], { message: 'Use "approve", "reject" or "delist".' }),
  reason: z.string({ message: REASON }).max(500, REASON).optional(),
  /**
   * On approve: the publisher's name as the operator checked it, which the catalog shows to
   * everyone (it becomes the developer's name). Needed when the developer gave none.
   */
  publisher: publisherName('Give the publisher’s name: 1 to 60 characters.').optional(),
});
/** `POST /api/operator/listings/{addonId}/decision`. */
export type ListingDecisionInput = z.input<typeof decisionInput>;

/** Announced, so every process's caches of people's tools drop the add-on at once. */
export async function decideListing({ ctx, addonId, input }: { ctx: Ctx; addonId: string; input: unknown }) {
  const operator = requireOperator(ctx, ONLY_OPERATORS);
  const { decision, reason, publisher } = parseInput(decisionInput, input, 'The decision is not valid.');
  const from: ListingStatus[] = decision === 'delist' ? ['approved', 'pending'] : ['pending'];
  // An unconfirmed account never publishes to everyone: its email may not be its own. Nor does an
  // unnamed one: a person reads who makes what they install.
  const publishable = sql`exists (select 1 from ${users} where ${users.id} = ${addons.ownerId} and ${users.emailVerifiedAt} is not null${
    publisher ? sql`` : sql` and ${users.displayName} is not null`
  })`;
  const row = await ctx.svc.db.transaction(async (tx) => {
    const [changed] = await tx
      .update(addons)
      .set({ listing: DECISIONS[decision], listingReason: reason?.trim() || null, listingChangedAt: ctx.svc.clock.now() })
      .where(and(eq(addons.id, addonId), isNull(addons.deletedAt), inArray(addons.listing, from), decision === 'approve' ? publishable : undefined))
      .returning({ id: addons.id, listing: addons.listing, ownerId: addons.ownerId });
    if (changed && decision === 'approve' && publisher) await tx.update(users).set({ displayName: publisher }).where(eq(users.id, changed.ownerId));
    return changed;
  });
  if (!row) {
    if (decision === 'approve') {
      const [owner] = await ctx.svc.db
        .select({ confirmed: users.emailVerifiedAt, named: users.displayName, listing: addons.listing })
        .from(addons)
        .innerJoin(users, eq(users.id, addons.ownerId))
        .where(and(eq(addons.id, addonId), isNull(addons.deletedAt)));
      if (owner?.listing === 'pending' && !owner.confirmed) {
        throw new ToolportError('CONFLICT', 'The publisher has not confirmed their email yet; a listing is approved only for a publisher whose email is confirmed.', { listing: 'pending' });
      }
      if (owner?.listing === 'pending' && !owner.named && !publisher) {
        throw new ToolportError('CONFLICT', 'Give the publisher’s name: the catalog shows it to everyone as who makes this add-on, and this developer has not given one.', { listing: 'pending' });
      }
    }
    const [found] = await ctx.svc.db.select({ listing: addons.listing }).from(addons).where(and(eq(addons.id, addonId), isNull(addons.deletedAt)));
    if (!found || !found.listing) throw notFound('That listing');
    throw new ToolportError('CONFLICT', `This listing is ${found.listing}; "${decision}" applies to ${from.join(' or ')} listings.`, { listing: found.listing });
  }
  ctx.svc.audit.record(OPERATOR_CHAIN, 'listing.decided', { operator, addon: addonId, decision: row.listing!, reason: reason?.trim() || undefined, publisher });
  // Every process drops its cached tool lists: a delisted add-on's tools leave every app at once.
  await ctx.svc.changes.changed('addon', { addonId });
  return { addonId, status: row.listing! };
}
