import { and, eq, lt, sql } from 'drizzle-orm';
import { iconHash, readIconImage } from '../addons/icon-image';
import { approvals, confirmImages } from '../db/schema/index';
import { OutboundError } from '../outbound/http-client';
import type { ConfirmImage } from '../outbound/types';
import type { Services } from '../services';
import { personId, type Ctx } from '../context';
import { notFound } from '../errors';

/**
 * A confirmation's picture (a screenshot of what will be deleted, say): larger than an icon, still
 * small enough to fetch while the person waits and to keep per approval.
 */
const CONFIRM_IMAGE_LIMITS = { bytes: 512 * 1024, dimension: 4096 } as const;
/** Of the call's budget, at most this goes to fetching the picture: the approval waits for it. */
const FETCH_MS = 5_000;
/** As long as an approval is shown with its picture; the periodic sweep forgets older ones. */
const CONFIRM_IMAGE_KEPT_DAYS = 30;

/** Why the picture was left out, for the developer's delivery log. */
function fetchProblem(err: OutboundError): string {
  switch (err.errorClass) {
    case 'blocked_address':
      return 'its URL leads to a private, loopback, link-local or metadata address, which Toolport does not fetch';
    case 'too_large':
      return `it is larger than ${CONFIRM_IMAGE_LIMITS.bytes / 1024} KB`;
    case 'timeout':
      return `its URL did not answer within ${FETCH_MS / 1000} s`;
    default:
      return 'its URL could not be reached';
  }
}

/**
 * Fetches `confirm.image` through the outbound client (private addresses refused, no redirects,
 * bounded size and time) and keeps it by hash. A string says why it was left out.
 */
export async function keepConfirmImage(svc: Services, url: string, deadline: number): Promise<ConfirmImage | string> {
  let bytes: Buffer;
  try {
    const res = await svc.outbound.request({
      url,
      method: 'GET',
      headers: { accept: 'image/png, image/jpeg, image/webp, image/gif', 'user-agent': 'Toolport-Images/1' },
      deadline: Math.min(deadline, svc.clock.now().getTime() + FETCH_MS),
      maxBytes: CONFIRM_IMAGE_LIMITS.bytes,
    });
    if (res.status !== 200) return `confirm.image left out: its URL answered HTTP ${res.status}, not the image.`;
    bytes = res.body;
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    return `confirm.image left out: ${fetchProblem(err)}.`;
  }
  const image = readIconImage(bytes, CONFIRM_IMAGE_LIMITS, 'a confirmation image');
  if (typeof image === 'string') return `confirm.image left out: the image at its URL ${image}.`;
  const hash = iconHash(bytes);
  // Shown again: kept from now, not from when it was first shown.
  await svc.db.insert(confirmImages).values({ hash, ...image, bytes }).onConflictDoUpdate({ target: confirmImages.hash, set: { createdAt: svc.clock.now() } });
  return { hash, ...image };
}

/** The picture an add-on showed with one of the person's approvals: 404 when none, not theirs, or forgotten. */
export async function getConfirmImage({ ctx, id }: { ctx: Ctx; id: string }) {
  const userId = personId(ctx);
  if (typeof id !== 'string' || id.length > 64) throw notFound('That image');
  const [row] = await ctx.svc.db
    .select({ mimeType: confirmImages.mimeType, bytes: confirmImages.bytes })
    .from(approvals)
    .innerJoin(confirmImages, eq(confirmImages.hash, sql`${approvals.confirm}->'image'->>'hash'`))
    .where(and(eq(approvals.id, id), eq(approvals.userId, userId)));
  if (!row) throw notFound('That image');
  return row;
}

/** Part of the periodic sweep: pictures older than their time go, whichever approvals showed them. */
export async function forgetConfirmImages(svc: Services): Promise<void> {
  const before = new Date(svc.clock.now().getTime() - CONFIRM_IMAGE_KEPT_DAYS * 86_400_000);
  await svc.db.delete(confirmImages).where(lt(confirmImages.createdAt, before));
}
