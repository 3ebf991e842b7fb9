import { createHash } from 'node:crypto';
import type { ManifestIcon } from './types';

/**
 * Header fields only, no dependency (the CLI bundles this). The bytes decide the type; what a
 * manifest or data URI claims is only checked against them.
 */

export const ICON_LIMITS = {
  /** One image, in bytes. */
  bytes: 64 * 1024,
  /** Width and height, in pixels: a small file can declare a huge canvas (a decompression bomb). */
  dimension: 1024,
  /** Icons of the add-on, and of each tool. */
  perOwner: 4,
  /** Different icons (distinct `src`) in one manifest: each is a fetch at registration. */
  perManifest: 16,
  /** An icon URL, in characters. */
  url: 2048,
  /** `sizes` entries of one icon. */
  sizes: 8,
} as const;

export const ICON_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type IconType = (typeof ICON_TYPES)[number];

const TYPE_NAMES: Record<IconType, string> = { 'image/png': 'a PNG', 'image/jpeg': 'a JPEG', 'image/webp': 'a WebP', 'image/gif': 'a GIF' };
export const typeName = (t: IconType) => TYPE_NAMES[t];

export const SVG_REFUSAL =
  'SVG icons are not accepted: an SVG is a document that can carry scripts and links, and apps render icons in their own pages; give a PNG, JPEG, WebP or GIF (64x64 is plenty)';

/** A media type as written, made comparable: lowercase, without parameters; `image/jpg` is JPEG. */
export function normalType(t: string): string {
  const base = t.split(';')[0]!.trim().toLowerCase();
  return base === 'image/jpg' || base === 'image/pjpeg' ? 'image/jpeg' : base;
}

export interface IconImage {
  mimeType: IconType;
  width: number;
  height: number;
}

const u16be = (b: Buffer, i: number) => b.readUInt16BE(i);
const u16le = (b: Buffer, i: number) => b.readUInt16LE(i);
const u24le = (b: Buffer, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);

function jpegSize(b: Buffer): { width: number; height: number } | undefined {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    // Markers that stand alone: TEM, RST0-7, SOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end, or the scan, before any frame header
    const length = u16be(b, i + 2);
    if (length < 2) return undefined;
    // Start of frame (baseline, progressive, lossless, arithmetic), not DHT (C4), JPG (C8) or DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 > b.length) return undefined;
      return { height: u16be(b, i + 5), width: u16be(b, i + 7) };
    }
    i += 2 + length;
  }
  return undefined;
}

function webpSize(b: Buffer): { width: number; height: number } | undefined {
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ' && b.length >= 30 && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
  }
  if (chunk === 'VP8L' && b.length >= 25 && b[20] === 0x2f) {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && b.length >= 30) return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
  return undefined;
}

const looksLikeSvg = (b: Buffer) => {
  const head = b.subarray(0, 1024).toString('utf8').replace(/^\uFEFF/, '').trimStart().toLowerCase();
  return head.startsWith('<') && /<svg[\s>]/.test(head);
};

/** By magic number; a string is a phrase to follow "The icon ". */
export function readIconImage(b: Buffer, limits: { bytes: number; dimension: number } = ICON_LIMITS, what = 'an icon'): IconImage | string {
  if (b.length === 0) return 'is empty';
  if (b.length > limits.bytes) return `is larger than ${limits.bytes / 1024} KB (${Math.ceil(b.length / 1024)} KB); give a smaller image`;
  let image: { mimeType: IconType; width: number; height: number } | undefined;
  if (b.length >= 24 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) && b.toString('latin1', 12, 16) === 'IHDR') {
    image = { mimeType: 'image/png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  } else if (b.length >= 10 && /^GIF8[79]a$/.test(b.toString('latin1', 0, 6))) {
    image = { mimeType: 'image/gif', width: u16le(b, 6), height: u16le(b, 8) };
  } else if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) {
    const size = jpegSize(b);
    if (!size) return 'starts like a JPEG image but has no readable frame header; save it again as PNG or JPEG';
    image = { mimeType: 'image/jpeg', ...size };
  } else if (b.length >= 16 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    const size = webpSize(b);
    if (!size) return 'starts like a WebP image but has no readable header; save it again as PNG or WebP';
    image = { mimeType: 'image/webp', ...size };
  } else if (looksLikeSvg(b)) {
    return `is an SVG image. ${SVG_REFUSAL}`;
  } else {
    return 'is not an image: its bytes are not a PNG, JPEG, WebP or GIF';
  }
  const { width, height } = image;
  if (width < 1 || height < 1 || width > limits.dimension || height > limits.dimension) {
    return `is ${width}x${height} pixels; ${what} is at most ${limits.dimension}x${limits.dimension}${limits === ICON_LIMITS ? ' (64x64 is plenty)' : ''}`;
  }
  return image;
}

/** The key an image is stored and served by: its SHA-256, in hex. */
export const iconHash = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The longest data URI taken: the image limit in base64, plus its media type. */
const MAX_DATA_URI = Math.ceil(ICON_LIMITS.bytes / 3) * 4 + 64;

/** A string is a phrase to follow "The icon's data URI ". */
export function readDataUri(src: string): { bytes: Buffer; claimed: string } | string {
  if (src.length > MAX_DATA_URI) return `is too long: an icon is at most ${ICON_LIMITS.bytes / 1024} KB, which is ${MAX_DATA_URI.toLocaleString('en-US')} characters of base64`;
  const comma = src.indexOf(',');
  if (comma < 0) return 'has no comma before its data: write data:image/png;base64,...';
  const head = src.slice(5, comma).split(';').map((s) => s.trim());
  if (head.at(-1)?.toLowerCase() !== 'base64') return 'must be base64: write data:image/png;base64,...';
  const claimed = head.length > 1 ? normalType(head[0]!) : '';
  if (!claimed) return 'names no media type: write data:image/png;base64,...';
  const data = src.slice(comma + 1);
  if (data.length % 4 !== 0 || !BASE64.test(data)) return 'is not valid base64';
  return { bytes: Buffer.from(data, 'base64'), claimed };
}

/** A phrase to follow "The icon's ". One image has one size: `sizes` may name only it. */
export function declaredProblem(icon: ManifestIcon, image: IconImage): string | null {
  if (icon.mimeType && normalType(icon.mimeType) !== image.mimeType) {
    return `\`mimeType\` says ${icon.mimeType}, but the image is ${typeName(image.mimeType)}; fix \`mimeType\` or leave it out`;
  }
  const actual = `${image.width}x${image.height}`;
  if (icon.sizes?.some((s) => s !== actual)) {
    return `\`sizes\` says ${icon.sizes.join(', ')}, but the image is ${actual}; leave \`sizes\` out and Toolport reads the size from the image`;
  }
  return null;
}
