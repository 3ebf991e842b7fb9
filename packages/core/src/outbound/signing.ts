import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. Shown once. */
export const newSigningSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

function secretKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  if (key.length < 16) throw new Error('A webhook signing secret must hold at least 16 bytes.');
  return key;
}

export interface SignatureInput {
  /** The call's id: identical on every retry, the add-on's idempotency key. */
  id: string;
  /** Seconds since the epoch, at this attempt. */
  timestamp: number;
  body: string;
  /** Every secret currently valid; several while a rotation overlaps. */
  secrets: string[];
}

/** Standard Webhooks headers: one `v1,<base64 HMAC-SHA256("{id}.{timestamp}.{body}")>` per secret. */
export function signatureHeaders({ id, timestamp, body, secrets }: SignatureInput): Record<string, string> {
  if (!secrets.length) throw new Error('At least one signing secret is needed.');
  const ts = String(Math.floor(timestamp));
  const content = `${id}.${ts}.${body}`;
  const signatures = secrets.map((s) => `v1,${createHmac('sha256', secretKey(s)).update(content).digest('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signatures.join(' ') };
}

export interface SignedMessage {
  id: string | undefined;
  timestamp: string | undefined;
  /** The `webhook-signature` header: space-separated `v1,<base64>` entries. */
  signature: string | undefined;
  body: Buffer;
}

/** At most this far from now (either way) a signed message's timestamp may be: Standard Webhooks' replay window. */
const TOLERANCE_S = 5 * 60;

/** Why a message signed by an add-on (Standard Webhooks, with one of its secrets) is not to be trusted; undefined when it is. */
export function signatureProblem(msg: SignedMessage, secrets: string[], nowMs: number): string | undefined {
  const { id, timestamp, signature, body } = msg;
  if (!id || !timestamp || !signature) return 'Sign the request: send webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks), with your add-on’s signing secret.';
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowMs / 1000 - Number(timestamp)) > TOLERANCE_S) {
    return 'webhook-timestamp must be the current time in seconds since the epoch (within 5 minutes).';
  }
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  const given = signature
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  for (const secret of secrets) {
    const expected = createHmac('sha256', secretKey(secret)).update(content).digest();
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return undefined;
  }
  return NO_SECRET;
}
/** What `signatureProblem` says when no secret matches (with none given: the message is at least well formed). */
const NO_SECRET = 'The signature does not match: sign "{webhook-id}.{webhook-timestamp}.{body}" with HMAC-SHA256 and your add-on’s current signing secret.';
