import type { Context } from 'hono';
import { ToolportError } from '@toolport/core';
import type { AppEnv } from './env';

export const MAX_JSON_BODY = 256 * 1024;

/** Reads a JSON body: 415 for another media type, 413 past the limit, 400 for broken JSON. */
export async function readJson(c: Context<AppEnv>, limit = MAX_JSON_BODY): Promise<unknown> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) {
    throw new ToolportError('VALIDATION', 'Send the body as application/json.', { status: 415 });
  }
  const length = c.req.header('content-length');
  const declared = Number(length ?? '0');
  if (declared > limit) throw new ToolportError('PAYLOAD_TOO_LARGE', `The body is larger than ${limit / 1024} KB.`);
  // With a declared length (which Node's parser holds the body to) the adapter reads it straight
  // from the socket; a chunked body is read as a stream and cut off at the limit.
  const text = length !== undefined && Number.isSafeInteger(declared) ? await c.req.raw.text() : await readLimited(c.req.raw, limit);
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolportError('VALIDATION', 'The body is not valid JSON.', { status: 400 });
  }
}

async function readLimited(req: Request, limit: number): Promise<string> {
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new ToolportError('PAYLOAD_TOO_LARGE', `The body is larger than ${limit / 1024} KB.`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
