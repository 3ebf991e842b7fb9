import { generateKeyPairSync, randomBytes } from 'node:crypto';
import webPush from 'web-push';

/** One `NAME=value` line each; for a rotation, append only the value you need to its list. */
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
