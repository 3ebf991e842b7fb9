import { createHmac, randomBytes } from 'node:crypto';

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
