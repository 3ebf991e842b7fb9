import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ToolportError } from '@toolport/core';
import type { AppEnv } from './env';

const MAX_JSON_BODY = 256 * 1024;

const noop = async () => {};

/** Holds the body of `c` to `limit` bytes, or throws `tooLarge`. */
export async function limitBody(c: Context<AppEnv>, limit: number, tooLarge: () => Error): Promise<void> {
  const length = c.req.header('content-length');
  const declared = Number(length ?? '0');
  if (declared > limit) throw tooLarge();
  // Hono's body-limit reads `c.req.raw.body`, giving up @hono/node-server's direct read of a body whose
  // length Node's parser holds it to (and closing the connection after an over-limit one): it reads
  // only a body without a declared length (chunked), cut off at the limit.
  if (length !== undefined && Number.isSafeInteger(declared)) return;
  await bodyLimit({ maxSize: limit, onError: () => { throw tooLarge(); } })(c, noop);
}

/** Reads a JSON body: 415 for another media type, 413 past the limit, 400 for broken JSON. */
export async function readJson(c: Context<AppEnv>, limit = MAX_JSON_BODY): Promise<unknown> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) {
    throw new ToolportError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.');
  }
  await limitBody(c, limit, () => new ToolportError('PAYLOAD_TOO_LARGE', `The body is larger than ${limit / 1024} KB.`));
  const text = await c.req.raw.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolportError('MALFORMED', 'The body is not valid JSON.');
  }
}
