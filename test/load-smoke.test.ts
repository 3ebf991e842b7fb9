import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { listPublicly, newPerson } from './helpers/http';
import { openEvents, openEventsWhenFree } from './helpers/approvals';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { parseConfig } from '@toolport/core';
import { spawnToolport, type ToolportProcess } from './helpers/private-services';
import { createBacking, UNLIMITED_CALLS, type Backing } from './helpers/target';

/**
 * Load smoke (docs/faults.md "Load"): thousands of pending approvals each end expired, recorded,
 * with nothing delivered; thousands of open dashboard event streams all open, are limited per
 * person and give their places back. Toolport runs as its own process on this pass's target.
 * Behaviour only: how late they expire and what the streams cost in memory are measured by
 * `npm run bench` (its approval expiry and event streams), where a busy machine cannot fail a test.
 */
const APPROVALS = 2_000;
/** Long enough that the 2,000 approvals, created over several seconds, are pending all at once. */
const TIMEOUT_SECONDS = 20;
/**
 * Calls being set up at once (sent, not yet told where to approve). The client keeps pace with the
 * server, as a real population of apps would, instead of opening 2,000 sockets in one instant;
 * every call that got its approval stays open until it ends.
 */
const SETTING_UP = 64;
/** The call budget the process runs with: the default, as it sets no CALL_BUDGET_SECONDS. */
const CALL_BUDGET_MS = parseConfig({}).callBudgetSeconds * 1000;
const PEOPLE = 200;
const STREAMS_PER_PERSON = 10;

let backing: Backing;
let tp: ToolportProcess;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  backing = await createBacking({ label: 'tp_load' });
  hook = await startAddonServer({ delete_note: async () => ({ text: 'deleted' }) });
  tp = await spawnToolport('all', {
    ...backing.env,
    APPROVAL_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    LIMIT_PENDING_APPROVALS: String(APPROVALS),
    ...UNLIMITED_CALLS,
  });
});
after(async () => {
  await tp?.kill('SIGKILL');
  await hook?.close();
  await backing?.drop();
});

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${tp.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is exported`);
  return Number(line.split(' ')[1]);
}

/** Runs `fn` over `items` with at most `n` at once. */
async function pool<T, R>(items: T[], n: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

describe('load smoke', { concurrency: false }, () => {
  it(`${PEOPLE * STREAMS_PER_PERSON} event streams open at once, each live, limited per person, and give their places back when closed`, async () => {
    const people = await pool(Array.from({ length: PEOPLE }), 8, () => newPerson(tp.url, 'sse'));
    const streams = (await pool(people, 20, async (p) => Promise.all(Array.from({ length: STREAMS_PER_PERSON }, () => openEvents(tp.url, p.client))))).flat();
    assert.deepEqual([...new Set(streams.map((s) => s.res.status))], [200], 'every stream opened');
    // One more for a person is refused by the per-person limit, not buffered.
    const extra = await openEvents(tp.url, people[0]!.client);
    assert.equal(extra.res.status, 429);
    await extra.close();
    // Every stream is live: its first bytes (the retry interval) arrived.
    for (let i = 0; i < 600 && streams.some((s) => s.retry === undefined); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(streams.filter((s) => s.retry !== 3000).length, 0, 'every stream sent its first event');

    await Promise.all(streams.map((s) => s.close()));
    // Closed streams release their per-person slots: two people can open all ten again.
    for (const p of [people[1]!, people[PEOPLE - 1]!]) {
      const again = await Promise.all(Array.from({ length: STREAMS_PER_PERSON }, () => openEventsWhenFree(tp.url, p.client, 'slots were released on close', 30_000)));
      await Promise.all(again.map((s) => s.close()));
    }
  });

  it(`${APPROVALS} pending approvals each end expired, never early, recorded, with nothing delivered`, async (t) => {
    const dev = await newPerson(tp.url, 'dev');
    const addonId = `load-${process.pid % 1000}`;
    const manifest = notesManifest(addonId, hook.url, { visibility: 'public' }) as any;
    // No `confirm`: the person is asked directly, so the add-on hears nothing unless a call is allowed.
    manifest.tools = manifest.tools.map((tool: any) => (tool.name === 'delete_note' ? { ...tool, confirm: false } : tool));
    const created = await dev.client.post('/api/addons', manifest);
    assert.equal(created.status, 201, created.text);
    await listPublicly(tp.url, addonId, dev);
    hook.setSecret(created.body.signingSecret);
    const person = await newPerson(tp.url);
    await person.client.patch('/api/settings', { aiApps: true });
    await person.client.post('/api/installs', { addon: addonId });
    await person.client.patch(`/api/installs/${addonId}`, { tools: { delete_note: true } });
    const provider = new TestOAuthProvider('Load');
    await connectApp(person.user.mcpUrl, person.client, { provider });
    const token = provider.saved!.access_token;
    const expiredBefore = await metric('toolport_approvals_total{outcome="expired"}').catch(() => 0);

    // Each call sends a progress token: its first progress notification leaves the server right
    // after the approval is recorded, which frees the call's place among those being set up.
    let peak = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        peak = Math.max(peak, await metric('toolport_approvals_pending').catch(() => 0));
        await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    const started = Date.now();
    const stop = new AbortController();
    let free = SETTING_UP;
    const freed: Array<() => void> = [];
    const take = async () => {
      while (free === 0) await new Promise<void>((r) => freed.push(r));
      free--;
    };
    const give = () => {
      free++;
      freed.shift()?.();
    };
    const answers = await pool(Array.from({ length: APPROVALS }, (_, i) => i), APPROVALS, async (i) => {
      await take();
      let held = true;
      const release = () => {
        if (held) give();
        held = false;
      };
      try {
        // A connection of its own (node:http, no keep-alive): a pooled socket the busy server is
        // closing as idle would reset a POST that cannot be retried.
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: `${addonId}__delete_note`, arguments: { id: `n${i}` }, _meta: { progressToken: `p${i}` } },
        });
        let asked: number | undefined;
        let text = '';
        const sent = Date.now();
        const status = await new Promise<number>((resolve, reject) => {
          const req = httpRequest(
            person.user.mcpUrl,
            {
              method: 'POST',
              agent: false,
              signal: AbortSignal.any([stop.signal, AbortSignal.timeout(120_000)]),
              headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
            },
            (res) => {
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => {
                text += chunk;
                if (asked === undefined && text.includes('notifications/progress')) {
                  asked = Date.now();
                  release();
                }
              });
              res.on('end', () => resolve(res.statusCode ?? 0));
              res.on('error', reject);
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        const answered = Date.now();
        const final = text
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => JSON.parse(l.slice(6)))
          .find((m) => m.id === i);
        return { status, sent, asked, answered, isError: final?.result?.isError, text: String(final?.result?.content?.[0]?.text ?? text.slice(0, 300)) };
      } catch (err) {
        stop.abort();
        throw new Error(`call ${i}: ${err} ${(err as Error).cause ?? ''} (server alive: ${tp.child.exitCode === null}) ${tp.output().slice(-800)}`);
      } finally {
        release();
      }
    });
    const elapsed = Date.now() - started;
    watching = false;
    await watcher;
    const wrong = answers.filter((a) => !(a.status === 200 && a.isError && a.text.includes(`did not answer the approval request within ${TIMEOUT_SECONDS} seconds`)));
    assert.deepEqual(wrong.slice(0, 3), [], `every call ended expired (${wrong.length} did not)`);
    assert.ok(answers.every((a) => a.asked), 'every call was told where to approve');
    // Its approval was recorded after the call was sent, so no answer before sent + timeout is early.
    const waited = answers.map((a) => a.answered - a.sent);
    const [shortest, longest] = [Math.min(...waited), Math.max(...waited)];
    t.diagnostic(`${APPROVALS} calls answered in ${elapsed} ms, ${peak} pending at once at the peak; each ${shortest} to ${longest} ms after it was sent`);
    assert.ok(shortest >= TIMEOUT_SECONDS * 1000 - 50, `nothing expired early (${shortest} ms after sending)`);
    assert.ok(longest < CALL_BUDGET_MS, `every call was answered within its budget (${longest} ms)`);
    assert.ok(peak > SETTING_UP, `the approvals were pending together, not one after another (peak ${peak})`);

    // Recorded, not only answered: the server counted each expiry, and none is left pending.
    // A recording that failed under load was answered expired at once (fail closed) and is recorded
    // by the next sweep; so the count may reach every approval a sweep later, and must.
    let expired = 0;
    for (const until = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 500))) {
      expired = (await metric('toolport_approvals_total{outcome="expired"}')) - expiredBefore;
      if (expired >= APPROVALS || Date.now() > until) break;
    }
    assert.equal(expired, APPROVALS, `every approval was recorded expired; the server said: ${tp.output().slice(-1500)}`);
    assert.equal(await metric('toolport_approvals_pending'), 0);
    const pending = await person.client.get('/api/approvals?status=pending');
    assert.deepEqual(pending.body, []);
    const recent = (await person.client.get('/api/approvals?status=all')).body as any[];
    assert.deepEqual([...new Set(recent.map((a) => a.status))], ['expired']);
    // As recorded by the server's own clock: by the timeout, and never before the approval's expiry.
    assert.deepEqual([...new Set(recent.map((a) => a.decidedBy))], ['timeout']);
    assert.deepEqual(recent.filter((a) => Date.parse(a.decidedAt) < Date.parse(a.expiresAt)), []);
    assert.equal(hook.calls().length, 0, 'nothing reached the add-on');
  });
});
