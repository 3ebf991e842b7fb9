// Issue #45, "a verifiable audit trail": every call, approval decision, release accepted, rule
// change, app let in or revoked and operator decision is an event in a hash chain (one per person,
// one for the operators); a person exports theirs, an operator the deployment's, and the CLI
// verifies both. Chains stay unbroken when several writers append to one at once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { asc, eq } from 'drizzle-orm';
import { verifyAuditExport } from '../packages/core/src/audit/chain';
import { AuditLog } from '../packages/core/src/audit/writer';
import { createDatabase } from '../packages/core/src/db/client';
import { auditEvents } from '../packages/core/src/db/schema/index';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { pendingOf } from './helpers/approvals';
import { runToolportCli } from './helpers/cli';
import { Client, newPerson, operatorOf } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { spawnToolport } from './helpers/process';
import { createBacking, freePort, startToolport, TARGET, UNLIMITED_CALLS, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'toolport-audit-'));

before(async () => {
  tp = await startToolport({ env: UNLIMITED_CALLS });
  hook = await startAddonServer({ add_note: () => ({ text: 'Added.' }), delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?' } }));
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

const events = (ndjson: string) => ndjson.split('\n').filter(Boolean).map((l) => JSON.parse(l));

/** `toolport audit verify` as a person runs it, on the export saved to a file. */
async function verifyWithCli(ndjson: string) {
  const file = path.join(scratch, `export-${randomBytes(4).toString('hex')}.ndjson`);
  writeFileSync(file, ndjson);
  return runToolportCli(['audit', 'verify', file], { config: path.join(scratch, 'cli.json') });
}

describe('the audit trail records each kind of event', () => {
  it('a person’s chain holds their calls (arguments only as their digest), decisions, rules, releases and apps; the operators’ chain their listing decisions; both verify', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true, delete_note: true }, 'audit');
    const provider = new TestOAuthProvider('Claude');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { provider });
    const secret = `milk-${randomBytes(6).toString('hex')}`;
    await app.callTool({ name: `${person.addonId}__add_note`, arguments: { text: secret } });
    const deleting = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
    const pending = await pendingOf(person.client, 'n1');
    assert.equal((await person.client.post(`/api/approvals/${pending.id}/decision`, { decision: 'allow' })).status, 200);
    await deleting;
    await app.close();

    const connection = (await person.client.get('/api/connections')).body[0].id as string;
    const rule = await person.client.put('/api/rules', { addon: person.addonId, tool: 'add_note', app: connection, mode: 'never' });
    assert.equal(rule.status, 200, rule.text);
    assert.equal((await person.client.delete(`/api/rules/${rule.body.id}`)).status, 204);
    const v2 = notesManifest(person.addonId, hook.url, { visibility: 'public' });
    v2.tools[1]!.summary = 'Adds a note and returns its id and title.';
    assert.equal((await person.dev.client.put(`/api/addons/${person.addonId}`, v2)).status, 200);
    assert.equal((await person.client.post(`/api/installs/${person.addonId}/accept`, { version: 2 })).status, 200);
    assert.equal((await person.client.delete(`/api/connections/${connection}`)).status, 204);

    const res = await person.client.get('/api/audit/export');
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="toolport-audit.ndjson"');
    const mine = events(res.text);
    assert.deepEqual([...new Set(mine.map((e) => e.chain))], [person.user.id]);
    assert.deepEqual(mine.map((e) => e.seq), mine.map((_, i) => i + 1));
    const kinds = new Set(mine.map((e) => e.kind));
    for (const kind of ['app.let_in', 'call', 'approval', 'rule.set', 'rule.removed', 'release.accepted', 'app.revoked']) assert.ok(kinds.has(kind), `${kind} in ${[...kinds].join(', ')}`);

    const calls = (await person.client.get('/api/calls')).body.items as Array<{ id: string; tool: string; argsDigest: string }>;
    const added = calls.find((c) => c.tool === 'add_note')!;
    const addEvent = mine.find((e) => e.kind === 'call' && e.data.call === added.id);
    assert.deepEqual(addEvent?.data, { call: added.id, app: 'Claude', grant: connection, addon: person.addonId, tool: 'add_note', args: added.argsDigest, outcome: 'ok' });
    assert.ok(!res.text.includes(secret), 'the arguments themselves are nowhere in it');
    const decision = mine.find((e) => e.kind === 'approval');
    assert.deepEqual(decision?.data, { receipt: pending.id, call: pending.callId, status: 'allowed', channel: 'dashboard', app: 'Claude', addon: person.addonId, tool: 'delete_note' });
    assert.deepEqual(mine.find((e) => e.kind === 'release.accepted')?.data, { addon: person.addonId, version: 2 });
    assert.deepEqual(mine.find((e) => e.kind === 'app.revoked')?.data, { grant: connection, by: 'person' });
    assert.deepEqual(mine.find((e) => e.kind === 'rule.removed')?.data, { rule: rule.body.id, addon: person.addonId, tool: 'add_note', app: connection });

    const cli = await verifyWithCli(res.text);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout.trim(), `verified ${mine.length} events in 1 chain`);

    const op = await operatorOf(tp.url);
    const all = await op.get('/api/operator/audit/export');
    assert.equal(all.status, 200, all.text);
    assert.equal(all.headers.get('content-disposition'), 'attachment; filename="toolport-audit-deployment.ndjson"');
    const deployment = events(all.text);
    const chains = new Set(deployment.map((e) => e.chain));
    assert.ok(chains.has(person.user.id) && chains.has('operator'), [...chains].join(', '));
    const listed = deployment.find((e) => e.chain === 'operator' && e.data.addon === person.addonId);
    assert.deepEqual(listed?.data, { operator: 'usr_testoperator', addon: person.addonId, decision: 'approved', publisher: 'Test Developer' });
    const whole = await verifyWithCli(all.text);
    assert.equal(whole.code, 0, whole.stderr);
    assert.equal(whole.stdout.trim(), `verified ${deployment.length} events in ${chains.size} chains`);
  });
});

describe('whose export it is', () => {
  it('a person gets their own chain whatever they ask; the deployment’s is the operators’ alone', async () => {
    const a = await personWithNotes(tp.url, hook, { add_note: true }, 'audit-a');
    const { client: app } = await connectApp(a.user.mcpUrl, a.client, { name: 'Cursor' });
    await app.callTool({ name: `${a.addonId}__add_note`, arguments: { text: 'x' } });
    await app.close();
    const b = await newPerson(tp.url, 'audit-b');
    for (const query of ['', `?chain=${a.user.id}`, `?user=${a.user.id}`, '?chain=operator']) {
      const res = await b.client.get(`/api/audit/export${query}`);
      assert.equal(res.status, 200, res.text);
      assert.ok(!res.text.includes(a.user.id) && !res.text.includes(a.addonId), `B's export${query} shows nothing of A's`);
      assert.ok(events(res.text).every((e) => e.chain === b.user.id));
    }
    // A's cookie on B's client is A's session: it answers A's chain, never B's.
    const asA = new Client(tp.url);
    asA.cookies = new Map(a.client.cookies);
    assert.ok(events((await asA.get(`/api/audit/export?chain=${b.user.id}`)).text).every((e) => e.chain === a.user.id));

    const refused = await b.client.get('/api/operator/audit/export');
    assert.equal(refused.status, 403);
    assert.match(refused.text, /Only Toolport’s operators export the whole deployment’s audit trail/);
    assert.equal((await new Client(tp.url).get('/api/operator/audit/export')).status, 401);
    assert.equal((await new Client(tp.url).get('/api/audit/export')).status, 401);
  });
});

describe('one chain, several writers', () => {
  it('calls made at once keep the person’s chain numbered without a gap', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true }, 'audit-busy');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    await Promise.all(Array.from({ length: 40 }, (_, i) => app.callTool({ name: `${person.addonId}__add_note`, arguments: { text: `n${i}` } })));
    await app.close();
    const exported = (await person.client.get('/api/audit/export')).text;
    const v = verifyAuditExport(exported);
    assert.deepEqual(v.problems, []);
    assert.equal(events(exported).filter((e) => e.kind === 'call').length, 40);
  });

  it('two writers that each believe they know the head append to one chain in turn, never forking it', async () => {
    // On Postgres each writer has its own pool, so their statements really do meet.
    const own = TARGET === 'services' ? await Promise.all([createDatabase(tp.config.database), createDatabase(tp.config.database)]) : [];
    const [dbA, dbB] = own.length ? own : [tp.svc.database, tp.svc.database];
    const writers = [new AuditLog(dbA!, tp.svc.clock, tp.svc.log), new AuditLog(dbB!, tp.svc.clock, tp.svc.log)];
    const chain = `usr_twowriters${randomBytes(4).toString('hex')}`;
    try {
      for (let round = 0; round < 10; round++) {
        for (let i = 0; i < 30; i++) writers[i % 2]!.record(chain, 'call', { call: `call_${round}_${i}`, outcome: 'ok' });
        // Both at once: each batch finds the head moved by the other's, at least from the second round on.
        await Promise.all(writers.map((w) => w.flushed()));
      }
    } finally {
      await Promise.all(writers.map((w) => w.close()));
      await Promise.all(own.map((d) => d.close()));
    }
    const rows = await tp.svc.db.select({ event: auditEvents.event }).from(auditEvents).where(eq(auditEvents.chain, chain)).orderBy(asc(auditEvents.seq));
    const v = verifyAuditExport(rows.map((r) => r.event).join('\n'));
    assert.deepEqual([v.problems, v.events], [[], 300]);
    assert.equal(new Set(rows.map((r) => JSON.parse(r.event).data.call)).size, 300, 'each event once');
  });
});

describe('two API processes writing one person’s chain', { skip: TARGET !== 'services' ? 'needs Postgres + Redis (two processes share them)' : false }, () => {
  const procs: ChildProcess[] = [];
  after(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  });

  it('calls spread over both at once leave one unbroken chain', async () => {
    const backing = await createBacking({ label: 'tp_audit' });
    try {
      const [pa, pb] = [await freePort(), await freePort()];
      const publicUrl = `http://127.0.0.1:${pa}`;
      for (const port of [pa, pb]) await spawnToolport(procs, { env: { ...backing.env, ...UNLIMITED_CALLS }, role: 'all', port, publicUrl });
      const person = await personWithNotes(publicUrl, hook, { add_note: true }, 'audit-mp');
      const provider = new TestOAuthProvider('Claude');
      await connectApp(person.user.mcpUrl, person.client, { provider });
      const mcpPath = new URL(person.user.mcpUrl).pathname;
      const call = async (port: number, i: number) => {
        const res = await fetch(`http://127.0.0.1:${port}${mcpPath}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${provider.saved!.access_token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: `${person.addonId}__add_note`, arguments: { text: `n${i}` } } }),
        });
        assert.equal(res.status, 200);
        assert.equal((await res.json()).result?.isError, undefined);
      };
      const CALLS = 60;
      await Promise.all(Array.from({ length: CALLS }, (_, i) => call(i % 2 ? pb : pa, i)));
      // Each process writes its events behind its calls; the export asks one of them.
      let exported = '';
      for (let tries = 0; tries < 50; tries++) {
        exported = (await person.client.get('/api/audit/export')).text;
        if (events(exported).filter((e) => e.kind === 'call').length >= CALLS) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(events(exported).filter((e) => e.kind === 'call').length, CALLS);
      const cli = await verifyWithCli(exported);
      assert.equal(cli.code, 0, cli.stdout + cli.stderr);
      assert.match(cli.stdout, /^verified \d+ events in 1 chain$/m);
    } finally {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
      await backing.drop();
    }
  });
});
