import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createCipheriv, createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT } from 'jose';
import webPush from 'web-push';
import {
  ConfigError,
  createLogger,
  loadMasterKeys,
  parseConfig,
  productionSecretProblems,
  resealSecrets,
  secretBoxes,
  settingsKey,
  STABLE_KEYS_SECRET,
  type ResealReport,
} from '@toolport/core';
import { vapidKeys } from '../packages/core/src/approvals/push';
import { keyedDigest, SecretBox } from '../packages/core/src/crypto';
import { createDatabase } from '../packages/core/src/db/client';
import { accountLinkStates, connectedAccounts } from '../packages/core/src/db/schema/index';
import { openAccountTokens, sealAccountTokens } from '../packages/core/src/installs/connected-accounts';
import { startServer, type RunningServer } from '../apps/api/src/server';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { Client } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { createBacking, freePort, newSigningKey, TARGET, type Backing } from './helpers/target';
import { toolportEntry } from './helpers/process';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const S1 = newSigningKey();
const S2 = newSigningKey();
const list = (...keys: string[]) => keys.join(',');

let backing: Backing;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let port: number;
let publicUrl: string;
const running: RunningServer[] = [];

before(async () => {
  backing = await createBacking();
  hook = await startAddonServer({ add_note: (body) => ({ text: `saved ${body.arguments.text}` }) });
  port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
});
after(async () => {
  for (const s of running) await s.close().catch(() => {});
  await hook?.close();
  await backing?.drop();
});

/** The settings of one process; embedded keeps PGlite on disk under DATA_DIR so it outlives a restart. */
const envFor = (secretKeys: string, signingKeys: string, onPort = port) => ({
  ...backing.env,
  PORT: String(onPort),
  PUBLIC_URL: publicUrl,
  TOOLPORT_SECRET_KEY: secretKeys,
  TOOLPORT_SIGNING_KEYS: signingKeys,
});

async function start(secretKeys: string, signingKeys: string, onPort = port) {
  const server = await startServer(parseConfig(envFor(secretKeys, signingKeys, onPort)), { log: createLogger({}, !process.env.TEST_LOGS) });
  running.push(server);
  return server;
}
async function stop(server: RunningServer) {
  await server.close();
  running.splice(running.indexOf(server), 1);
}

/** What the release before key rings wrote: `v1.<iv>.<body>.<tag>` under a key derived from the one master key. */
function sealV1(master: string, purpose: string, plain: string) {
  const key = createHmac('sha256', Buffer.from(master, 'base64')).update(`toolport:${purpose}`).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `v1.${iv.toString('base64url')}.${body.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
}
/** What that release showed add-ons as `user.id`, and wrote in the call log as the argument digest. */
const legacyPseudonym = (addonId: string, userId: string) => `usr_${keyedDigest(Buffer.from(K1, 'base64'), `pseudonym:${addonId}`, userId).slice(0, 26)}`;
const legacyArgsDigest = (json: string) => `sha256:${keyedDigest(Buffer.from(K1, 'base64'), 'args', json).slice(0, 22)}`;

async function openDatabase() {
  const config = parseConfig(envFor(K1, S1));
  return createDatabase(config.database);
}

/**
 * Turns the database into one the release before key rings left: every secret sealed `v1` under
 * K1, no stable keys, and its own active signing key in the database. Returns a token that key
 * signed (with `like`'s claims), as an app would hold one across the upgrade.
 */
async function writeAsPreviousRelease(like: string): Promise<string> {
  const database = await openDatabase();
  try {
    const boxes = secretBoxes([Buffer.from(K1, 'base64')]);
    const { db } = database;
    const rows = async (q: ReturnType<typeof sql>) => {
      const out: unknown = await db.execute(q);
      return (Array.isArray(out) ? out : (out as { rows: any[] }).rows) as any[];
    };
    await db.execute(sql`delete from service_secrets where name = ${STABLE_KEYS_SECRET}`);
    for (const r of await rows(sql`select id, secret_enc as v from addon_secrets`)) {
      await db.execute(sql`update addon_secrets set secret_enc = ${sealV1(K1, 'webhook-secrets', boxes.webhookBox.open(r.v))} where id = ${r.id}`);
    }
    for (const r of await rows(sql`select kid as id, private_jwk_enc as v from signing_keys`)) {
      await db.execute(sql`update signing_keys set private_jwk_enc = ${sealV1(K1, 'signing-keys', boxes.signingKeyBox.open(r.v))} where kid = ${r.id}`);
    }
    for (const r of await rows(sql`select name as id, value_enc as v from service_secrets`)) {
      await db.execute(sql`update service_secrets set value_enc = ${sealV1(K1, 'service-secrets', boxes.serviceSecretBox.open(r.v))} where name = ${r.id}`);
    }
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const kid = `kid_prev_${randomBytes(4).toString('hex')}`;
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
    const sealed = sealV1(K1, 'signing-keys', JSON.stringify({ ...(await exportJWK(privateKey)), kid, alg: 'ES256' }));
    await db.execute(sql`insert into signing_keys (kid, alg, public_jwk, private_jwk_enc) values (${kid}, 'ES256', ${JSON.stringify(publicJwk)}::jsonb, ${sealed})`);
    return await new SignJWT({ ...decodeJwt(like), exp: Math.floor(Date.now() / 1000) + 300 })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
      .sign(privateKey);
  } finally {
    await database.close();
  }
}

/** The re-encrypt step: the real command beside running processes on Postgres; in-process on the stopped embedded database. */
function reencrypt(secretKeys: string): Promise<ResealReport> | ResealReport {
  if (TARGET === 'services') {
    const out = spawnSync(process.execPath, ['--import', 'tsx', 'apps/api/src/reencrypt-secrets.ts'], {
      env: { ...process.env, ...envFor(secretKeys, list(S2, S1)) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(out.status, 0, out.stderr || out.stdout);
    return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as ResealReport;
  }
  return (async () => {
    const database = await openDatabase();
    try {
      return await resealSecrets(database.db, secretBoxes(loadMasterKeys(parseConfig(envFor(secretKeys, S1)))));
    } finally {
      await database.close();
    }
  })();
}

const mcpPath = (mcpUrl: string) => new URL(mcpUrl).pathname;
let rpc = 0;
/** A tools/call with a bearer token straight to one process (any process answers any MCP URL). */
async function callNote(base: string, mcpUrl: string, token: string, addonId: string, text: string) {
  const res = await fetch(`${base}${mcpPath(mcpUrl)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: `${addonId}__add_note`, arguments: { text } } }),
  });
  if (res.status !== 200) return { status: res.status };
  const body = await res.json();
  const delivery = hook.calls().find((d) => d.body.arguments.text === text);
  return { status: 200, isError: body.result?.isError === true, userId: delivery?.body.user.id as string | undefined };
}

const thumbprint = async (key: string) => (await settingsKey(parseConfig({ TOOLPORT_SIGNING_KEYS: key }).signingKeys![0]!)).kid;

describe('rotating the master key and the signing keys without downtime', () => {
  it('an upgraded database keeps its pseudonyms; add, promote, re-encrypt, retire: every step keeps serving', { timeout: 240_000 }, async () => {
    // The release before key rings: one master key, secrets sealed without a key id.
    const a = await start(K1, S1);
    const person = await personWithNotes(a.url, hook, { add_note: true }, 'rot', (m) => {
      Object.assign(m, { settings: [{ name: 'api_key', title: 'API key', kind: 'secret', required: true }] });
    });
    // The person's settings for the install, sealed under K1 like every other secret of then.
    assert.equal((await person.client.put(`/api/installs/${person.addonId}/settings`, { values: { api_key: 'rot-api-key' } })).status, 200);
    const { provider: oldApp } = await connectApp(person.user.mcpUrl, person.client, { provider: new TestOAuthProvider('Before') });
    const t1 = oldApp.saved!.access_token;
    assert.equal(decodeProtectedHeader(t1).kid, await thumbprint(S1));
    const vapid = await vapidKeys(a.svc);
    assert.equal((await callNote(publicUrl, person.user.mcpUrl, t1, person.addonId, 'a-1')).isError, false);
    await stop(a);
    const t0 = await writeAsPreviousRelease(t1);

    // (a) The new keys are added at the end: K1 still seals, S1 still signs. The pseudonyms add-ons
    // stored under the previous release do not change, nor do the call log's argument digests.
    const b = await start(list(K1, K2), list(S1, S2));
    const first = await callNote(publicUrl, person.user.mcpUrl, t1, person.addonId, 'b-1');
    assert.equal(first.isError, false, 'the webhook secret sealed v1 under K1 opens and still signs');
    const pseudonym = legacyPseudonym(person.addonId, person.user.id);
    assert.equal(first.userId, pseudonym, 'user.id is what the previous release sent');
    assert.equal(b.svc.secrets.argsDigest('{"text":"x"}'), legacyArgsDigest('{"text":"x"}'));
    const byPrevious = await callNote(publicUrl, person.user.mcpUrl, t0, person.addonId, 'b-0');
    assert.deepEqual([byPrevious.status, byPrevious.isError], [200, false], "a token of the previous release's database key still verifies");
    const jwks = (await new Client(publicUrl).get('/oauth/jwks')).body.keys.map((k: { kid: string }) => k.kid);
    assert.deepEqual(jwks.slice(0, 2), [await thumbprint(S1), await thumbprint(S2)], 'both listed keys are published, the signing one first');
    // A connected account and a link in progress, sealed now (under K1, still first).
    await b.svc.db.insert(connectedAccounts).values({
      id: 'acct_rotation', userId: person.user.id, addonId: person.addonId, provider: 'github',
      ...sealAccountTokens(b.svc, { accessToken: 'rot-access-token', refreshToken: 'rot-refresh-token' }),
    });
    await b.svc.db.insert(accountLinkStates).values({
      stateHash: 'rotation-state-digest', userId: person.user.id, addonId: person.addonId, provider: 'github',
      codeVerifierEnc: b.svc.secrets.accountLinkBox.seal('rot-verifier'), expiresAt: new Date(Date.now() + 3600_000),
    });
    await stop(b);

    // (b) The new keys move to the front, while a process still has the old order (a rolling update).
    const c = await start(list(K2, K1), list(S2, S1));
    const lagging = TARGET === 'services' ? await start(list(K1, K2), list(S1, S2), await freePort()) : undefined;
    const { provider: newApp } = await connectApp(person.user.mcpUrl, person.client, { provider: new TestOAuthProvider('After') });
    const t2 = newApp.saved!.access_token;
    assert.equal(decodeProtectedHeader(t2).kid, await thumbprint(S2), 'the first listed key signs');
    assert.equal((await callNote(publicUrl, person.user.mcpUrl, t1, person.addonId, 'c-1')).userId, pseudonym, 'a token of the old key still verifies');

    // (c) Re-encrypt everything under K2, beside the running processes (Postgres); again: nothing left to do.
    if (TARGET === 'embedded') await stop(c);
    const report = await reencrypt(list(K2, K1));
    assert.deepEqual(report.unreadable, []);
    assert.equal(report.resealed, 7, `webhook secret, signing key, VAPID pair, stable keys, the install's settings, the connected account and the link in progress resealed (${JSON.stringify(report)})`);
    const again = await reencrypt(list(K2, K1));
    assert.deepEqual({ resealed: again.resealed, unreadable: again.unreadable }, { resealed: 0, unreadable: [] }, 'idempotent');
    if (lagging) {
      // A process still sealing with K1 reads what the command resealed under K2, and accepts the new key's tokens.
      const base = `http://127.0.0.1:${lagging.port}`;
      const viaLagging = await callNote(base, person.user.mcpUrl, t2, person.addonId, 'c-2');
      assert.deepEqual([viaLagging.isError, viaLagging.userId], [false, pseudonym]);
      await stop(lagging);
    }
    if (TARGET === 'services') await stop(c);

    // (d) The old keys are removed: everything still works, tokens of the removed key are refused.
    const d = await start(K2, S2);
    const last = await callNote(publicUrl, person.user.mcpUrl, t2, person.addonId, 'd-1');
    assert.equal(last.isError, false, 'deliveries are still signed with the same webhook secret');
    assert.equal(last.userId, pseudonym, 'pseudonyms did not change');
    assert.equal(hook.calls().find((call) => call.body.arguments.text === 'd-1')?.body.settings.api_key, 'rot-api-key', 'the settings resealed under K2 still open');
    assert.equal(d.svc.secrets.argsDigest('{"text":"x"}'), legacyArgsDigest('{"text":"x"}'));
    assert.deepEqual(await vapidKeys(d.svc), vapid, 'the VAPID pair survived');
    const [account] = await d.svc.db.select().from(connectedAccounts).where(eq(connectedAccounts.id, 'acct_rotation'));
    assert.deepEqual(openAccountTokens(d.svc, account!), { accessToken: 'rot-access-token', refreshToken: 'rot-refresh-token' }, 'the connected account resealed under K2 opens');
    const [link] = await d.svc.db.select().from(accountLinkStates).where(eq(accountLinkStates.stateHash, 'rotation-state-digest'));
    assert.equal(d.svc.secrets.accountLinkBox.open(link!.codeVerifierEnc), 'rot-verifier');
    assert.equal((await callNote(publicUrl, person.user.mcpUrl, t1, person.addonId, 'd-2')).status, 401, 'a token signed by a removed key is refused');
    const published = (await new Client(publicUrl).get('/oauth/jwks')).body.keys.map((k: { kid: string }) => k.kid);
    assert.ok(!published.includes(await thumbprint(S1)), 'the removed key is no longer published');
    await stop(d);

    // Since the upgrade, every delivery named the person as the previous release did.
    const since = hook.calls().filter((call) => call.body.arguments.text !== 'a-1');
    assert.deepEqual([...new Set(since.map((call) => call.body.user.id))], [pseudonym]);
  });

  it('a fresh database gets random stable keys (pseudonyms do not derive from the master key); a VAPID pair from the settings is used, not stored', async () => {
    const fresh = await createBacking();
    const pair = webPush.generateVAPIDKeys();
    try {
      const port = await freePort();
      const config = parseConfig({
        ...fresh.env,
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        TOOLPORT_SECRET_KEY: K1,
        TOOLPORT_SIGNING_KEYS: S1,
        VAPID_PUBLIC_KEY: pair.publicKey,
        VAPID_PRIVATE_KEY: pair.privateKey,
      });
      if (TARGET === 'embedded') config.database = {};
      const server = await startServer(config, { log: createLogger({}, true) });
      try {
        assert.notEqual(server.svc.secrets.pseudonym('notes', 'usr_x'), legacyPseudonym('notes', 'usr_x'));
        assert.equal(server.svc.secrets.pseudonym('notes', 'usr_x'), server.svc.secrets.pseudonym('notes', 'usr_x'));
        assert.equal((await new Client(server.url).get('/api/push/key')).body.publicKey, pair.publicKey);
        const stored: unknown = await server.svc.db.execute(sql`select name from service_secrets order by name`);
        const names = (Array.isArray(stored) ? stored : (stored as { rows: any[] }).rows).map((r: { name: string }) => r.name);
        assert.deepEqual(names, [STABLE_KEYS_SECRET]);
        // Re-encrypting with a list missing the key the secrets are under changes nothing and says what it could not open.
        const wrong = await resealSecrets(server.svc.db, secretBoxes([randomBytes(32)]));
        assert.equal(wrong.resealed, 0);
        assert.ok(wrong.unreadable.includes(`service_secrets:${STABLE_KEYS_SECRET}`), JSON.stringify(wrong));
      } finally {
        await server.close();
      }
    } finally {
      await fresh.drop();
    }
  });
});

describe('key settings', () => {
  const problems = (env: Record<string, string>) => {
    try {
      parseConfig(env);
      return [];
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.problems;
    }
  };

  it('reports each bad master key by position, never echoing it', () => {
    const found = problems({ TOOLPORT_SECRET_KEY: `${K1},not-a-key,${K1}` });
    assert.deepEqual(found, [
      'TOOLPORT_SECRET_KEY: key 2 of 3 must be 32 random bytes in base64 (openssl rand -base64 32).',
      'TOOLPORT_SECRET_KEY: key 3 of 3 is listed twice.',
    ]);
    assert.equal(parseConfig({ TOOLPORT_SECRET_KEY: ` ${K2} , ${K1} ` }).secretKeys!.length, 2);
  });

  it('takes signing keys as base64 DER or PEM, P-256 only', () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const sec1 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ format: 'pem', type: 'sec1' }) as string;
    assert.equal(parseConfig({ TOOLPORT_SIGNING_KEYS: `${pem}\n${sec1}` }).signingKeys!.length, 2);
    assert.equal(parseConfig({ TOOLPORT_SIGNING_KEYS: `${S1},${S2}` }).signingKeys!.length, 2);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    assert.deepEqual(problems({ TOOLPORT_SIGNING_KEYS: `${S1},garbage,${rsa},${p384},${S1}` }), [
      'TOOLPORT_SIGNING_KEYS: key 2 of 5 is not a private key (give base64 PKCS#8 DER or PEM; npm run keygen prints one).',
      'TOOLPORT_SIGNING_KEYS: key 3 of 5 must be an EC P-256 key (ES256).',
      'TOOLPORT_SIGNING_KEYS: key 4 of 5 must be an EC P-256 key (ES256).',
      'TOOLPORT_SIGNING_KEYS: key 5 of 5 is listed twice.',
    ]);
  });

  it('checks the VAPID pair and subject', () => {
    const pair = webPush.generateVAPIDKeys();
    const other = webPush.generateVAPIDKeys();
    const ok = parseConfig({ VAPID_PUBLIC_KEY: pair.publicKey, VAPID_PRIVATE_KEY: pair.privateKey, VAPID_SUBJECT: 'mailto:ops@example.com' });
    assert.deepEqual(ok.vapid, pair);
    assert.equal(ok.vapidSubject, 'mailto:ops@example.com');
    assert.deepEqual(problems({ VAPID_PUBLIC_KEY: pair.publicKey }), ['VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY go together: set both or neither.']);
    assert.deepEqual(problems({ VAPID_PUBLIC_KEY: pair.publicKey, VAPID_PRIVATE_KEY: other.privateKey }), ['VAPID_PRIVATE_KEY is not the private half of VAPID_PUBLIC_KEY.']);
    assert.equal(problems({ VAPID_PUBLIC_KEY: 'abc', VAPID_PRIVATE_KEY: pair.privateKey }).length, 1);
    assert.deepEqual(problems({ VAPID_SUBJECT: 'ops@example.com' }), ['VAPID_SUBJECT must be a mailto: address or an https: URL.']);
  });

  it('sends push only to the browsers’ push services unless PUSH_HOSTS names others (issue #40)', () => {
    assert.deepEqual(parseConfig({}).pushHosts, ['fcm.googleapis.com', 'android.googleapis.com', 'updates.push.services.mozilla.com', '*.push.apple.com', '*.notify.windows.com']);
    assert.deepEqual(parseConfig({ PUSH_HOSTS: ' Push.Example.com , *.push.example.net' }).pushHosts, ['push.example.com', '*.push.example.net']);
    for (const bad of ['*', 'https://push.example.com', 'push..example.com', '*.com.', ',']) {
      assert.match(problems({ PUSH_HOSTS: bad })[0] ?? '', /^PUSH_HOSTS must list host names/, bad);
    }
  });

  it('checks the mail settings', () => {
    const ok = parseConfig({ SMTP_URL: 'smtps://user:secret@smtp.example.com:465', MAIL_FROM: 'Ops <ops@example.com>', DATA_DIR: '/tmp/tp' });
    assert.deepEqual(ok.mail, { smtpUrl: 'smtps://user:secret@smtp.example.com:465', from: 'Ops <ops@example.com>', dir: '/tmp/tp/mail' });
    assert.equal(parseConfig({ PUBLIC_URL: 'https://toolport.example.com' }).mail.from, 'Toolport <no-reply@toolport.example.com>');
    assert.deepEqual(problems({ SMTP_URL: 'http://smtp.example.com' }), ['SMTP_URL must start with smtp:// or smtps://, not "http:".']);
    const hidden = problems({ SMTP_URL: 'not a url with a secret' });
    assert.equal(hidden.length, 1);
    assert.ok(!hidden[0]!.includes('secret'), 'the URL, which may hold a password, is never echoed');
    assert.match(problems({ MAIL_FROM: 'Ops <not an address>' })[0] ?? '', /^MAIL_FROM must be an address/);
    assert.match(problems({ MAIL_FROM: 'a@b.co\r\nBcc: x@y.z' })[0] ?? '', /^MAIL_FROM must be an address/);
  });

  it('requires the master and signing keys with DATABASE_URL (a worker signs nothing), and a server refuses to start without them', () => {
    const db = { DATABASE_URL: 'postgres://x@127.0.0.1/db' };
    assert.deepEqual(productionSecretProblems(parseConfig(db)).map((p) => p.split(' ')[0]), ['TOOLPORT_SECRET_KEY', 'TOOLPORT_SIGNING_KEYS']);
    assert.deepEqual(productionSecretProblems(parseConfig({ ...db, TOOLPORT_SECRET_KEY: K1, REDIS_URL: 'redis://r', ROLE: 'worker' })), []);
    assert.deepEqual(productionSecretProblems(parseConfig({})), [], 'the embedded default generates its own');
    const out = spawnSync(process.execPath, toolportEntry(), {
      env: { PATH: process.env.PATH ?? '', ...db, TOOLPORT_SECRET_KEY: K1, PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(out.status, 78, out.stderr);
    assert.match(out.stderr, /TOOLPORT_SIGNING_KEYS is required with DATABASE_URL/);
  });
});

describe('SecretBox key ring', () => {
  const [k1, k2, k3] = [K1, K2, randomBytes(32).toString('base64')].map((k) => Buffer.from(k, 'base64'));
  it('seals as before key rings with one key, names the key with several, opens under any listed key', () => {
    const one = new SecretBox(k1!, 'webhook-secrets');
    const sealedV1 = one.seal('whsec_x');
    assert.match(sealedV1, /^v1\./, 'readable by the release before key rings');
    const ring = new SecretBox([k2!, k1!], 'webhook-secrets');
    assert.equal(ring.open(sealedV1), 'whsec_x');
    const sealedV2 = ring.seal('whsec_y');
    assert.ok(sealedV2.startsWith(`v2.${ring.currentKeyId}.`));
    assert.equal(new SecretBox([k1!, k2!], 'webhook-secrets').open(sealedV2), 'whsec_y', 'any order');
    assert.equal(new SecretBox(k2!, 'webhook-secrets').open(sealedV2), 'whsec_y');
    assert.throws(() => new SecretBox(k3!, 'webhook-secrets').open(sealedV2), /not in TOOLPORT_SECRET_KEY/);
    assert.throws(() => new SecretBox(k3!, 'webhook-secrets').open(sealedV1), /No key/);
    assert.throws(() => new SecretBox([k2!, k1!], 'signing-keys').open(sealedV2), 'a purpose opens only its own');
    assert.deepEqual([ring.isStale(sealedV1), ring.isStale(sealedV2), one.isStale(sealedV1), one.isStale(sealedV2)], [true, false, false, true]);
  });
});
