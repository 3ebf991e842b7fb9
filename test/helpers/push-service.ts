// A push service and a browser's side of a subscription, for the Web Push tests (not itself a test file).
import assert from 'node:assert/strict';
import { createDecipheriv, createECDH, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A push service on 127.0.0.1: records what it is sent, answers what the test says. */
export async function startPushService() {
  const received: Array<{ path: string; headers: IncomingHttpHeaders; body: Buffer }> = [];
  let status = 201;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer(s: number) {
      status = s;
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A browser's side of a push subscription: its own P-256 key pair and auth secret. */
export function newBrowserKeys() {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } };
}

const hmac = (key: Buffer, data: Buffer) => createHmac('sha256', key).update(data).digest();

/** RFC 8291 (Web Push message encryption) over RFC 8188 aes128gcm, as a browser decrypts it. */
export function decryptPush(body: Buffer, ecdh: ReturnType<typeof createECDH>, auth: Buffer): string {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const serverPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  assert.equal(idlen, 65, 'the keyid is the sender’s uncompressed P-256 key');
  assert.ok(ciphertext.length <= rs, 'one record');

  const ecdhSecret = ecdh.computeSecret(serverPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ecdh.getPublicKey(), serverPublic]);
  const ikm = hmac(hmac(auth, ecdhSecret), Buffer.concat([keyInfo, Buffer.from([1])]));
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, Buffer.from('Content-Encoding: aes128gcm\0\x01')).subarray(0, 16);
  const nonce = hmac(prk, Buffer.from('Content-Encoding: nonce\0\x01')).subarray(0, 12);

  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 0x02, then zero padding.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  assert.equal(padded[end], 2, 'last-record delimiter');
  return padded.subarray(0, end).toString('utf8');
}

/** Waits for `count` pushes to `path` at the push service. */
async function pushesTo(push: Awaited<ReturnType<typeof startPushService>>, path: string, count: number, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = push.received.filter((r) => r.path === path);
    if (got.length >= count) return got;
    assert.ok(Date.now() < until, `expected ${count} push(es) to ${path}, got ${got.length}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A device subscribed for the person: node holds its keys, so the test reads what Toolport sends it. */
export async function subscribeDevice(
  person: { client: { post(path: string, body: unknown): Promise<{ status: number; text: string }> } },
  push: Awaited<ReturnType<typeof startPushService>>,
) {
  const keys = newBrowserKeys();
  const path = `/push/${randomBytes(6).toString('hex')}`;
  const sub = await person.client.post('/api/push/subscribe', { endpoint: `${push.base}${path}`, keys: keys.keys });
  assert.equal(sub.status, 201, sub.text);
  return {
    path,
    /** The decrypted payload of the `n`th push (from 1) this device received. */
    async payload(n = 1): Promise<any> {
      const got = await pushesTo(push, path, n);
      return JSON.parse(decryptPush(got[n - 1]!.body, keys.ecdh, keys.auth));
    },
  };
}
