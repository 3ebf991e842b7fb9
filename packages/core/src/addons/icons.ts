import { eq } from 'drizzle-orm';
import { ToolportError, notFound, type FieldError } from '../errors';
import { icons } from '../db/schema/index';
import type { Ctx } from '../context';
import type { Services } from '../services';
import { OutboundError } from '../outbound/http-client';
import { ICON_LIMITS, declaredProblem, iconHash, readIconImage, type IconImage } from './icon-image';
import type { IconSource, StoredIcon } from './types';

/** All of a push's icon fetches together, as the webhook's ping has. */
const FETCH_TIMEOUT_MS = 10_000;
const ACCEPT = 'image/png, image/jpeg, image/webp, image/gif';
const HASH = /^[0-9a-f]{64}$/;

type Image = IconImage & { bytes: Buffer; hash: string };

/** Why an icon URL gave no image, for the developer: where it leads is theirs to fix. */
function fetchProblem(err: OutboundError): string {
  switch (err.errorClass) {
    case 'blocked_address':
      return 'The icon URL leads to a private, loopback, link-local or metadata address, which Toolport does not fetch; put the icon on a public host or use a data URI.';
    case 'too_large':
      return `The icon is larger than ${ICON_LIMITS.bytes / 1024} KB; give a smaller image (64x64 is plenty).`;
    case 'timeout':
      return `The icon URL did not answer within ${FETCH_TIMEOUT_MS / 1000} s.`;
    case 'dns':
      return 'The icon URL is unreachable: its host name does not resolve.';
    case 'tls':
      return 'The icon URL is unreachable: the TLS handshake or certificate failed.';
    case 'bad_url':
      return 'The icon URL must be an http or https URL without credentials.';
    default:
      return 'The icon URL is unreachable: the connection failed.';
  }
}

async function fetchImage(svc: Services, url: string, deadline: number): Promise<Buffer | string> {
  try {
    const res = await svc.outbound.request({ url, method: 'GET', headers: { accept: ACCEPT, 'user-agent': 'Toolport-Icons/1' }, deadline, maxBytes: ICON_LIMITS.bytes });
    if (res.status >= 300 && res.status < 400) return `The icon URL answered with a redirect (HTTP ${res.status}); Toolport does not follow redirects, so give the URL it leads to.`;
    if (res.status !== 200) return `The icon URL answered HTTP ${res.status}, not the image.`;
    return res.body;
  } catch (err) {
    if (err instanceof OutboundError) return fetchProblem(err);
    // Never a rejection: the push's other fetches are awaited one by one.
    svc.log.error('icon fetch failed', { err });
    return 'Toolport could not fetch the icon; try again.';
  }
}

export interface ResolvedIcons {
  /** The add-on's own icons, in the manifest's order. */
  addon: StoredIcon[];
  /** Each tool's own icons, by tool name. */
  tools: Map<string, StoredIcon[]>;
  /** The distinct images to store. */
  images: Image[];
}

/** URLs go through the outbound client (private addresses refused, no redirects, 64 KB, one deadline). */
export async function resolveIcons(svc: Services, sources: IconSource[]): Promise<ResolvedIcons> {
  const out: ResolvedIcons = { addon: [], tools: new Map(), images: [] };
  if (!sources.length) return out;
  const deadline = svc.clock.now().getTime() + FETCH_TIMEOUT_MS;
  const fetched = new Map<string, Promise<Buffer | string>>();
  for (const s of sources) {
    if (!s.bytes && !fetched.has(s.icon.src)) fetched.set(s.icon.src, fetchImage(svc, s.icon.src, deadline));
  }
  const problems: FieldError[] = [];
  const images = new Map<string, Image>();
  for (const s of sources) {
    const bytes = s.bytes ?? (await fetched.get(s.icon.src)!);
    if (typeof bytes === 'string') {
      problems.push({ path: `${s.path}/src`, message: bytes });
      continue;
    }
    const image = readIconImage(bytes);
    if (typeof image === 'string') {
      problems.push({ path: `${s.path}/src`, message: `The icon at this URL ${image}.` });
      continue;
    }
    const declared = declaredProblem(s.icon, image);
    if (declared) {
      problems.push({ path: s.path, message: `The icon's ${declared}.` });
      continue;
    }
    const hash = iconHash(bytes);
    if (!images.has(hash)) images.set(hash, { ...image, bytes, hash });
    const stored: StoredIcon = { hash, mimeType: image.mimeType, sizes: [`${image.width}x${image.height}`], ...(s.icon.theme ? { theme: s.icon.theme } : {}) };
    if (s.tool === undefined) out.addon.push(stored);
    else out.tools.set(s.tool, [...(out.tools.get(s.tool) ?? []), stored]);
  }
  if (problems.length) {
    throw new ToolportError('VALIDATION', `The manifest has ${problems.length} problem${problems.length === 1 ? '' : 's'} with its icons.`, { errors: problems });
  }
  out.images = [...images.values()];
  return out;
}

type Tx = Parameters<Parameters<Services['db']['transaction']>[0]>[0];

/** Keeps the images of a release; an image already kept (by its hash) is not written again. */
export async function storeIcons(tx: Tx, images: Image[]) {
  if (!images.length) return;
  await tx
    .insert(icons)
    .values(images.map((i) => ({ hash: i.hash, mimeType: i.mimeType, width: i.width, height: i.height, bytes: i.bytes })))
    .onConflictDoNothing();
}

/** Public: a hash says nothing of an image nobody has been shown. */
export async function getIcon({ ctx, hash }: { ctx: Ctx; hash: string }): Promise<{ mimeType: string; bytes: Buffer }> {
  if (!HASH.test(hash)) throw notFound('That icon');
  const [row] = await ctx.svc.db.select({ mimeType: icons.mimeType, bytes: icons.bytes }).from(icons).where(eq(icons.hash, hash));
  if (!row) throw notFound('That icon');
  return row;
}

/** Where an app or the dashboard fetches an icon: Toolport's own origin, never the add-on's. */
export const iconUrl = (publicUrl: string, icon: StoredIcon) => `${publicUrl}/icons/${icon.hash}`;
