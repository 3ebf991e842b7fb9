// Issue #45, retention of the audit trail: events past RETAIN_AUDIT_DAYS are removed in the
// background while calls go on, and each chain keeps its continuity through one checkpoint signed
// with the deployment's key, which `toolport audit verify --jwks` checks against the JWKS the
// server publishes; a changed or forged checkpoint, and events claimed from before it, are refused.
// A person's "Clear history" is itself recorded in their chain.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { asc, eq, sql } from 'drizzle-orm';
import { CompactSign, generateKeyPair } from 'jose';
import { forgetOldLogs, rotateSigningKey } from '@toolport/core';
import { canonicalJson } from '../packages/core/src/audit/chain';
import { executedRows } from '../packages/core/src/db/client';
import { auditEvents } from '../packages/core/src/db/schema/index';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { runToolportCli } from './helpers/cli';
import { captureLog } from './helpers/log';
import { callsMeanwhile, connectApp } from './helpers/mcp';
import { newSigningKey, startToolport, TARGET, UNLIMITED_CALLS, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'toolport-audit-retention-'));

const captured = captureLog();
const LONG_AGO = 'usr_longago';

before(async () => {
  tp = await startToolport({ env: { ...UNLIMITED_CALLS, RETAIN_AUDIT_DAYS: '400' }, log: captured.log });
  // Old events before the first sweep (seconds after the start), which removes them: the first test.
  await recordMany(LONG_AGO, 12);
  await ageChain(LONG_AGO, 12, 402);
  hook = await startAddonServer({ add_note: () => ({ text: 'Added.' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const lines = (ndjson: string) => ndjson.split('\n').filter(Boolean);
const parsed = (ndjson: string) => lines(ndjson).map((l) => JSON.parse(l));
const file = (name: string, text: string) => {
  const f = path.join(scratch, `${name}-${randomBytes(3).toString('hex')}`);
  writeFileSync(f, text);
  return f;
};
const verify = (ndjson: string, ...extra: string[]) => runToolportCli(['audit', 'verify', file('export.ndjson', ndjson), ...extra], { config: path.join(scratch, 'cli.json') });

/** The deployment's JWKS, from its jwks_uri, saved as an auditor would. */
async function jwksFile(url = tp.url): Promise<string> {
  const res = await fetch(`${url}/oauth/jwks`);
  assert.equal(res.status, 200);
  return file('jwks.json', await res.text());
}

/** The chain's rows as stored, in order. */
const rowsOf = (chain: string) => tp.svc.db.select({ seq: auditEvents.seq, kind: auditEvents.kind, event: auditEvents.event }).from(auditEvents).where(eq(auditEvents.chain, chain)).orderBy(asc(auditEvents.seq));

/** Real events, written through the writer, then made `days` old: the chain stays the one the writer hashed. */
async function ageChain(chain: string, upToSeq: number, days: number) {
  await tp.svc.db.execute(sql`update audit_events set at = at - make_interval(days => ${days}) where chain = ${chain} and seq <= ${upToSeq}`);
}

async function recordMany(chain: string, n: number) {
  for (let i = 0; i < n; i++) tp.svc.audit.record(chain, 'call', { call: `call_old_${i}`, tool: 'add_note', outcome: 'ok', args: `sha256:${i}` });
  await tp.svc.audit.flushed();
}

describe('audit retention', () => {
  it('the periodic sweep removes the events past their time, beside the calls and deliveries', async () => {
    const chain = LONG_AGO;
    // The first sweep runs seconds after the start, the next ten minutes later: the tests below drive their own.
    const removedLine = () => captured.logged.map((l) => JSON.parse(l)).find((l) => l.m === 'old log rows removed');
    for (let i = 0; i < 300 && !removedLine(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(removedLine()?.f, { calls: 0, deliveries: 0, audit: 12, callsDays: 90, deliveriesDays: 30, auditDays: 400 });
    assert.deepEqual((await rowsOf(chain)).map((r) => [r.kind, r.seq]), [['checkpoint', 12]]);
  });

  it('removes the events past their time while calls go on, leaving one signed checkpoint that the CLI verifies against the JWKS', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'aret');
    const chain = person.user.id;
    await recordMany(chain, 2_400);
    const before = await rowsOf(chain);
    const old = before.length;
    const oldHash = JSON.parse(before[old - 1]!.event).hash as string;
    await ageChain(chain, old, 402);

    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const calls = callsMeanwhile(client, `${person.addonId}__add_note`, (n) => ({ text: `n${n}` }));
    // Two sweeps at once, as two processes run them (on Postgres over two connections of the pool).
    const swept = await Promise.all([forgetOldLogs(tp.svc), forgetOldLogs(tp.svc)]);
    const made = await calls.stop(3);
    await client.close();
    await tp.svc.audit.flushed();

    assert.equal(swept[0].audit + swept[1].audit, old, 'every event past its time, once');
    const rows = await rowsOf(chain);
    assert.deepEqual(rows.filter((r) => r.kind === 'checkpoint').map((r) => r.seq), [old], 'one checkpoint, at the last removed event');
    assert.equal(rows[0]!.seq, old);

    const exported = (await person.client.get('/api/audit/export')).text;
    const events = parsed(exported);
    assert.deepEqual({ ...events[0], sig: undefined }, { v: 1, chain, seq: old, at: JSON.parse(before[old - 1]!.event).at, kind: 'checkpoint', hash: oldHash, sig: undefined });
    assert.match(events[0].sig, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWS');
    assert.equal(events[1].seq, old + 1);
    assert.equal(events[1].prev, oldHash, 'the first event kept still links to the removed stretch');
    assert.ok(events.filter((e) => e.kind === 'call').length >= made, 'the calls made meanwhile are in the chain');

    const jwks = await jwksFile();
    const checked = await verify(exported, '--jwks', jwks);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    assert.equal(checked.stdout, `verified ${events.length - 1} events in 1 chain\nchain ${chain} starts at a checkpoint (its events up to seq ${old} were removed by retention); its signature verified with the JWKS given\n`);
    const byUrl = await verify(exported, '--jwks', `${tp.url}/oauth/jwks`);
    assert.equal(byUrl.code, 0, byUrl.stdout + byUrl.stderr);
    const unchecked = await verify(exported);
    assert.equal(unchecked.code, 0, unchecked.stdout + unchecked.stderr);
    assert.match(unchecked.stdout, /its signature not checked: give --jwks with the deployment's JWKS \(its \/oauth\/jwks\) to check it\n$/);

    // Tampered copies, each refused with a sentence saying where.
    const text = lines(exported);
    const withFirst = (first: string, rest = text.slice(1)) => `${[first, ...rest].join('\n')}\n`;
    const refused = async (name: string, ndjson: string, expected: string[]) => {
      const r = await verify(ndjson, '--jwks', jwks);
      assert.equal(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
      assert.deepEqual(lines(r.stdout), expected, name);
    };
    const cp = events[0];
    await refused('a checkpoint moved in time', withFirst(canonicalJson({ ...cp, at: '2020-01-01T00:00:00.000Z' })), [
      `chain ${chain}: the checkpoint at seq ${old} was changed (its signature is over another chain, seq, hash or time)`,
    ]);
    const otherHash = 'ab'.repeat(32);
    await refused('a checkpoint standing for another event', withFirst(canonicalJson({ ...cp, hash: otherHash })), [
      `chain ${chain}: the checkpoint at seq ${old} was changed (its signature is over another chain, seq, hash or time)`,
      `chain ${chain}: event seq ${old + 1} does not follow the checkpoint at seq ${old} (its prev is not the checkpoint's hash)`,
    ]);
    // Signed again by someone else under the deployment's key id: only the JWKS tells.
    const kid = JSON.parse(Buffer.from(cp.sig.split('.')[0], 'base64url').toString()).kid as string;
    const { privateKey } = await generateKeyPair('ES256');
    const stoodFor = JSON.parse(before[old - 101]!.event);
    const forgedBody = { ...cp, seq: old - 100, at: stoodFor.at, hash: stoodFor.hash, sig: undefined };
    const forged = { ...forgedBody, sig: await new CompactSign(new TextEncoder().encode(canonicalJson(forgedBody))).setProtectedHeader({ alg: 'ES256', kid }).sign(privateKey) };
    const forgedCopy = withFirst(canonicalJson(forged), [...before.slice(old - 100).map((row) => row.event), ...text.slice(1)]);
    await refused('a forged checkpoint', forgedCopy, [`chain ${chain}: the checkpoint at seq ${old - 100} was changed or forged (its signature does not verify with key ${kid})`]);
    const forgedUnchecked = await verify(forgedCopy, '--json');
    assert.deepEqual([forgedUnchecked.json.ok, forgedUnchecked.json.signaturesChecked], [true, false], 'without the JWKS only the links are checked: the signature is what tells');
    await refused('an event claimed from before the checkpoint', withFirst(text[0]!, [before[old - 2]!.event, ...text.slice(1)]), [
      `chain ${chain}: event seq ${old - 1} is claimed from before the checkpoint at seq ${old}: the events up to seq ${old} were removed, and the checkpoint stands for them`,
    ]);
    const r = await verify(`${[...before.slice(0, 3).map((b) => b.event), ...text].join('\n')}\n`, '--jwks', jwks);
    assert.equal(r.code, 1);
    assert.equal(
      lines(r.stdout)[0],
      `chain ${chain}: the checkpoint at seq ${old} is not the first line of its chain: it stands for the events up to seq ${old}, which were removed, so nothing of the chain comes before it (an export taken while retention removed them: download it again)`,
    );

    // A later removal merges into the checkpoint: still one per chain.
    await recordMany(chain, 60);
    const head = (await rowsOf(chain)).at(-1)!.seq;
    await ageChain(chain, old + 50, 402);
    assert.equal((await forgetOldLogs(tp.svc)).audit, 50);
    const merged = await rowsOf(chain);
    assert.deepEqual(merged.filter((row) => row.kind === 'checkpoint').map((row) => row.seq), [old + 50]);
    assert.equal(merged[merged.length - 1]!.seq, head, 'nothing after the stretch changed');
    const again = await verify((await person.client.get('/api/audit/export')).text, '--jwks', await jwksFile());
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, new RegExp(`^verified ${head - old - 50} events in 1 chain\nchain ${chain} starts at a checkpoint \\(its events up to seq ${old + 50} were removed`));
    assert.deepEqual(await forgetOldLogs(tp.svc), { calls: 0, deliveries: 0, audit: 0 }, 'nothing left to remove');
  });

  it('a chain whose every event aged out is its checkpoint alone, and goes on from it', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'aret-quiet');
    const chain = person.user.id;
    await recordMany(chain, 5);
    const all = await rowsOf(chain);
    await ageChain(chain, all.length, 500);
    assert.equal((await forgetOldLogs(tp.svc)).audit, all.length);
    const alone = (await person.client.get('/api/audit/export')).text;
    assert.deepEqual(parsed(alone).map((e) => [e.kind, e.seq]), [['checkpoint', all.length]]);
    const jwks = await jwksFile();
    const v = await verify(alone, '--jwks', jwks);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.equal(v.stdout, `verified 0 events in 1 chain\nchain ${chain} starts at a checkpoint (its events up to seq ${all.length} were removed by retention); its signature verified with the JWKS given\n`);

    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    await client.callTool({ name: `${person.addonId}__add_note`, arguments: { text: 'back' } });
    await client.close();
    await tp.svc.audit.flushed();
    const later = (await person.client.get('/api/audit/export')).text;
    assert.equal(parsed(later)[1].seq, all.length + 1);
    const ok = await verify(later, '--jwks', jwks);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });

  it('after the signing key rotates, the sweep signs each checkpoint again with the new key, so it verifies against the JWKS published then', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'aret-rotate');
    const chain = person.user.id;
    await recordMany(chain, 3);
    await ageChain(chain, 3, 402);
    await forgetOldLogs(tp.svc);
    const kidOf = async () => {
      const [cp] = parsed((await person.client.get('/api/audit/export')).text);
      return JSON.parse(Buffer.from(cp.sig.split('.')[0], 'base64url').toString()).kid as string;
    };
    const first = await kidOf();
    // The embedded default rotates its own keys; a hosted deployment by a new key first in TOOLPORT_SIGNING_KEYS (a restart).
    const rotated =
      TARGET === 'services'
        ? await startToolport({ backing: tp.backing, keepBacking: true, env: { ...UNLIMITED_CALLS, TOOLPORT_SIGNING_KEYS: `${newSigningKey()},${tp.backing.env.TOOLPORT_SIGNING_KEYS}` } })
        : undefined;
    const svc = rotated?.svc ?? tp.svc;
    try {
      const kid = rotated ? (await fetch(`${rotated.url}/oauth/jwks`).then((r) => r.json())).keys[0].kid : (await rotateSigningKey(tp.svc)).kid;
      assert.notEqual(kid, first);
      assert.deepEqual(await forgetOldLogs(svc), { calls: 0, deliveries: 0, audit: 0 }, 'nothing removed, only signed again');
      assert.equal(await kidOf(), kid);
      const v = await verify((await person.client.get('/api/audit/export')).text, '--jwks', await jwksFile(rotated?.url));
      assert.equal(v.code, 0, v.stdout + v.stderr);
    } finally {
      await rotated?.stop();
    }
  });
});

describe('"Clear history" is in the audit trail', () => {
  it('clearing the call history records calls.cleared with how many calls went, and the chain still verifies', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'aret-clear');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    for (let i = 0; i < 3; i++) await client.callTool({ name: `${person.addonId}__add_note`, arguments: { text: `n${i}` } });
    await client.close();
    const cleared = await person.client.delete('/api/calls');
    assert.equal(cleared.status, 200, cleared.text);
    assert.deepEqual(cleared.body, { removed: 3 });
    const exported = (await person.client.get('/api/audit/export')).text;
    const events = parsed(exported);
    const last = events[events.length - 1];
    assert.deepEqual([last.kind, last.data], ['calls.cleared', { removed: 3 }]);
    assert.equal(events.filter((e) => e.kind === 'call').length, 3, 'the calls stay in the audit trail: it is the call log that was cleared');
    const v = await verify(exported);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const count = Number(executedRows<{ n: number }>(await tp.svc.db.execute(sql`select count(*)::int as n from calls where user_id = ${person.user.id}`))[0]!.n);
    assert.equal(count, 0);
  });
});
