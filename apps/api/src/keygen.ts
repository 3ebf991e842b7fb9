import { generateKeyPairSync, randomBytes } from 'node:crypto';
import webPush from 'web-push';

/**
 * Prints fresh keys for the production settings, one `NAME=value` line each, to put in a secret
 * manager (or `.env`): a master key, an access-token signing key (EC P-256, base64 PKCS#8 DER on one
 * line) and a VAPID pair. For a rotation take only the line you need and append its value to the list.
 */
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const vapid = webPush.generateVAPIDKeys();
console.log(
  [
    `TOOLPORT_SECRET_KEY=${randomBytes(32).toString('base64')}`,
    `TOOLPORT_SIGNING_KEYS=${privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')}`,
    `VAPID_PUBLIC_KEY=${vapid.publicKey}`,
    `VAPID_PRIVATE_KEY=${vapid.privateKey}`,
  ].join('\n'),
);
