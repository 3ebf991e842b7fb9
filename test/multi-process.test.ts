import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { spawnToolport } from './helpers/process';
import { startAddonServer, notesManifest } from './helpers/addon-server';
import { listPublicly, newPerson } from './helpers/http';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { openEvents, openEventsWhenFree } from './helpers/approvals';
import { MAX_STREAMS_PER_PERSON } from '@toolport/core';
import { createBacking, freePort, TARGET, type Backing } from './helpers/target';

const skip = TARGET !== 'services' ? 'needs Postgres + Redis (several processes share them)' : false;

let backing: Backing;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
const procs: ChildProcess[] = [];

const spawnProcess = (role: 'api' | 'worker', publicUrl: string, port: number) => spawnToolport(procs, { env: backing.env, role, port, publicUrl });

before(async () => {
  if (skip) return;
  backing = await createBacking();
  hook = await startAddonServer({
    add_note: async () => {
      await sleep(150);
      return { text: 'ok' };
    },
  });
});
after(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await hook?.close();
  await backing?.drop();
});

describe('two API processes and two workers on one Postgres and one Redis', { skip }, () => {
  it('spreads calls, survives a SIGTERM of an API process and a killed worker, loses nothing, runs nothing twice', async (t) => {
    const [pa, pb, pw1, pw2] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${pa}`;
    const apiA = await spawnProcess('api', publicUrl, pa);
    await spawnProcess('api', publicUrl, pb);
    const worker1 = await spawnProcess('worker', publicUrl, pw1);
    await spawnProcess('worker', publicUrl, pw2);

    const dev = await newPerson(publicUrl, 'dev');
    const id = `mp-${process.pid % 1000}`;
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    assert.equal(created.status, 201, created.text);
    hook.setSecret(created.body.signingSecret);
    await listPublicly(publicUrl, id, dev);
    const person = await newPerson(publicUrl);
    await person.client.patch('/api/settings', { aiApps: true });
    await person.client.post('/api/installs', { addon: id });
    await person.client.patch(`/api/installs/${id}`, { tools: { add_note: true } });
    const provider = new TestOAuthProvider('Load');
    await connectApp(person.user.mcpUrl, person.client, { provider });
    const path = new URL(person.user.mcpUrl).pathname;

    let rpc = 0;
    const call = async (port: number, text: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${provider.saved!.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: `${id}__add_note`, arguments: { text } } }),
      }).catch(() => undefined);
      if (!res) return { accepted: false, text };
      if (res.status === 503) return { accepted: false, text };
      assert.equal(res.status, 200);
      const body = await res.json();
      return { accepted: true, text, ok: body.result?.isError === undefined, result: body.result };
    };

    // 60 calls, alternating between the two API processes; mid-way A is told to stop and a worker dies.
    const runs: Array<Promise<{ accepted: boolean; text: string; ok?: boolean; result?: unknown }>> = [];
    for (let i = 0; i < 60; i++) {
      runs.push(call(i % 2 ? pb : pa, `note-${i}`));
      if (i === 20) apiA.kill('SIGTERM');
      if (i === 30) worker1.kill('SIGKILL');
      await sleep(20);
    }
    const results = await Promise.all(runs);
    const accepted = results.filter((r) => r.accepted);
    const failed = accepted.filter((r) => !r.ok);
    assert.deepEqual(failed, [], 'every accepted call got its result');
    assert.ok(accepted.length >= 40, `most calls were accepted (${accepted.length})`);
    const deliveries = hook.calls().length;
    t.diagnostic(`accepted ${accepted.length} of 60, refused while draining ${60 - accepted.length}, deliveries ${deliveries}`);

    // Whatever was delivered twice (a worker died mid-job) carried the same webhook-id both times.
    const idsByText = new Map<string, Set<string>>();
    for (const d of hook.calls()) {
      const set = idsByText.get(d.body.arguments.text) ?? new Set();
      set.add(d.headers['webhook-id'] as string);
      idsByText.set(d.body.arguments.text, set);
    }
    for (const [text, ids] of idsByText) assert.equal(ids.size, 1, `${text} was delivered under one call id`);
    for (const r of accepted) assert.ok(idsByText.has(r.text), `${r.text} reached the add-on`);
    for (const r of results.filter((x) => !x.accepted)) assert.ok(!idsByText.has(r.text), `${r.text} was refused, so it never ran`);

    const exit = await new Promise<number | null>((resolve) => (apiA.exitCode !== null ? resolve(apiA.exitCode) : apiA.once('exit', (c) => resolve(c))));
    assert.equal(exit, 0, 'the API process drained and exited cleanly');
  });
});

describe('open event streams per person, across API processes', { skip }, () => {
  it('counts streams on every process against one limit, and a closed stream frees its place', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${pa}`;
    await spawnProcess('api', publicUrl, pa);
    await spawnProcess('api', publicUrl, pb);
    const a = `http://127.0.0.1:${pa}`;
    const b = `http://127.0.0.1:${pb}`;
    const person = await newPerson(publicUrl, 'streams');
    const streams: Array<Awaited<ReturnType<typeof openEvents>>> = [];
    try {
      for (let i = 0; i < MAX_STREAMS_PER_PERSON; i++) {
        const s = await openEvents(a, person.client);
        assert.equal(s.res.status, 200, `stream ${i + 1} on A`);
        streams.push(s);
      }
      const over = await openEvents(b, person.client);
      assert.equal(over.res.status, 429, 'B counts the streams open on A');
      assert.equal(over.res.headers.get('content-type'), 'application/problem+json');
      assert.ok(Number(over.res.headers.get('retry-after')) > 0);
      await over.close();
      // Another person is not limited by this one's streams.
      const other = await newPerson(publicUrl, 'streams');
      const theirs = await openEvents(b, other.client);
      assert.equal(theirs.res.status, 200);
      await theirs.close();

      await streams.pop()!.close();
      streams.push(await openEventsWhenFree(b, person.client, 'a stream closed on A never freed its place on B'));
      const full = await openEvents(a, person.client);
      assert.equal(full.res.status, 429, 'A counts the stream now open on B');
      await full.close();
    } finally {
      for (const s of streams) await s.close();
    }
  });
});
