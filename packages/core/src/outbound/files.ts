/** Files an add-on returns with an answer (`artifacts`): what Toolport keeps of them, and for how long. */
export const ARTIFACT_LIMITS = {
  files: 5,
  /** Each file, and all of one answer's files together, decoded. */
  bytes: 4 * 1024 * 1024,
  name: 120,
  keptHours: 24,
  /** What one person's unexpired files may hold in all. */
  perPersonBytes: 64 * 1024 * 1024,
} as const;

/** An oversized text answer's preview, in characters. */
export const PREVIEW_CHARS = 2_000;

export interface AnswerFile {
  name: string;
  mediaType: string;
  bytes: Buffer;
}

const startsWith = (b: Buffer, ...sig: number[]) => b.length >= sig.length && sig.every((x, i) => b[i] === x);
const ascii = (b: Buffer, at: number, s: string) => b.subarray(at, at + s.length).toString('latin1') === s;
const utf8 = new TextDecoder('utf-8', { fatal: true });
function isText(b: Buffer): boolean {
  if (b.includes(0)) return false;
  try {
    utf8.decode(b);
    return true;
  } catch {
    return false;
  }
}

/**
 * The media types kept, each with what its bytes must be: a file is only ever labelled as what it
 * is, so an app never renders a script that says it is a picture.
 */
const KEPT: Record<string, { what: string; is: (b: Buffer) => boolean }> = {
  'text/plain': { what: 'UTF-8 text', is: isText },
  'text/csv': { what: 'UTF-8 text', is: isText },
  'text/markdown': { what: 'UTF-8 text', is: isText },
  'application/json': {
    what: 'JSON',
    is: (b) => {
      if (!isText(b)) return false;
      try {
        JSON.parse(b.toString('utf8'));
        return true;
      } catch {
        return false;
      }
    },
  },
  'image/png': { what: 'a PNG image', is: (b) => startsWith(b, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a) },
  'image/jpeg': { what: 'a JPEG image', is: (b) => startsWith(b, 0xff, 0xd8, 0xff) },
  'image/gif': { what: 'a GIF image', is: (b) => ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a') },
  'image/webp': { what: 'a WebP image', is: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP') },
  'application/pdf': { what: 'a PDF document', is: (b) => ascii(b, 0, '%PDF-') },
  'application/zip': { what: 'a ZIP archive', is: (b) => startsWith(b, 0x50, 0x4b, 0x03, 0x04) || startsWith(b, 0x50, 0x4b, 0x05, 0x06) },
  'application/octet-stream': { what: 'bytes', is: () => true },
};
const KEPT_MEDIA_TYPES = Object.keys(KEPT);

/** Text types are served as text; the rest as base64 blobs. */
export const isTextType = (mediaType: string) => mediaType.startsWith('text/') || mediaType === 'application/json';

const NAME = /^[^/\\\p{Cc}\p{Cf}]+$/u;

/** Why this file is not kept, in a sentence about it; null: it is kept. `mediaType` is lowercased, without parameters. */
export function fileProblem(f: AnswerFile): string | null {
  const called = `The file "${f.name}"`;
  const kind = KEPT[f.mediaType];
  if (!kind) return `${called} is ${f.mediaType}, a type Toolport does not keep (it keeps ${KEPT_MEDIA_TYPES.join(', ')}).`;
  if (f.bytes.length > ARTIFACT_LIMITS.bytes) return `${called} is larger than ${ARTIFACT_LIMITS.bytes / 1024 / 1024} MB.`;
  if (!f.bytes.length) return `${called} is empty.`;
  if (!kind.is(f.bytes)) return `${called} says it is ${f.mediaType}, but it is not ${kind.what}.`;
  return null;
}

/** A file's name as given: one path segment of visible characters. */
export const nameProblem = (name: unknown): string | null =>
  typeof name !== 'string' || !name.trim() || name.length > ARTIFACT_LIMITS.name || !NAME.test(name) || name === '.' || name === '..'
    ? `a file's name must be 1 to ${ARTIFACT_LIMITS.name} characters with no slash or control character`
    : null;

/** `text/csv; charset=utf-8` is `text/csv`. */
export const bareMediaType = (v: string) => v.split(';')[0]!.trim().toLowerCase();
