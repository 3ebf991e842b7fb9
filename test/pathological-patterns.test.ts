import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { SCHEMA_LIMITS } from '@toolport/core';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { createBacking, freePort, type Backing } from './helpers/target';
import { toolportEntry } from './helpers/process';

/**
 * Issue #23: a pattern cannot freeze a process. `^(\w{1,20}\s?){1,20}$` passed the old check
 * (recheck calls bounded repetition safe), and with JavaScript's backtracking RegExp a 30-character
 * argument took 20 s, `/healthz` included; at the longest allowed length it never ends. Toolport
 * runs in its own process here, so a frozen event loop is seen from outside: `/healthz` is polled
 * while the worst argument is checked. No timing is asserted: the bounds below only turn a hang
 * into a failure, and are hundreds of times what a check takes.
 */
const PATHOLOGICAL = '^(\\w{1,20}\\s?){1,20}$';
/** The backtracking engine's worst case: words that never end at `$`, as long as allowed. */
const WORST = 'a'.repeat(SCHEMA_LIMITS.patternInput - 1) + '!';
/** What turns a frozen process into a failure (a check takes milliseconds): for /healthz, and for a call. */
const HANG_MS = 10_000;
const CALL_MS = 3 * HANG_MS;

let backing: Backing;
let child: ChildProcess | undefined;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let baseUrl: string;

before(async () => {
  backing = await createBacking();
  hook = await startAddonServer({ search_notes: (b) => ({ text: `found ${String(b.arguments.query).length} characters` }) });
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, toolportEntry(), {
    env: { ...process.env, ...backing.env, PORT: String(port), PUBLIC_URL: baseUrl },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; ; i++) {
    if (await fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false)) break;
    if (i > 600 || child.exitCode !== null) throw new Error('Toolport did not become ready');
    await sleep(100);
  }
});
after(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await hook?.close();
  await backing?.drop();
});

/** Polls `/healthz` one request after another, each given HANG_MS to answer, until stopped. */
function pollHealth() {
  const state = { answered: 0, failures: [] as string[], stopped: false };
  const done = (async () => {
    while (!state.stopped) {
      try {
        const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(HANG_MS) });
        if (res.ok) state.answered++;
        else state.failures.push(`status ${res.status}`);
        await res.arrayBuffer();
      } catch (err) {
        state.failures.push(`/healthz did not answer: ${(err as Error).message}`);
        return;
      }
      await sleep(10);
    }
  })();
  return {
    state,
    /** Resolves once `n` more answers have come than now; rejects when one did not come. */
    async more(n: number) {
      const target = state.answered + n;
      while (state.answered < target) {
        if (state.failures.length) throw new Error(state.failures.join('; '));
        await sleep(5);
      }
    },
    async stop() {
      state.stopped = true;
      await done;
    },
  };
}

describe('a pathological pattern cannot freeze a process', () => {
  it('takes the pattern; the worst argument at the longest allowed length answers, /healthz keeps answering meanwhile, and the pattern has a lint warning', async () => {
    const person = await personWithNotes(baseUrl, hook, { search_notes: true }, 'redos', (m) => {
      const tool = m.tools[0] as Record<string, unknown>;
      delete tool.arguments;
      tool.inputSchema = {
        type: 'object',
        properties: { query: { type: 'string', maxLength: SCHEMA_LIMITS.patternInput, pattern: PATHOLOGICAL, description: 'Words to look for.' } },
        required: ['query'],
        additionalProperties: false,
      };
    });
    const { client } = await connectApp(person.user.mcpUrl, person.client);
    const name = `${person.addonId}__search_notes`;
    const health = pollHealth();
    try {
      await health.more(3);
      // Four at once, each the worst input at the longest allowed length.
      const calls = Array.from({ length: 4 }, () =>
        client.callTool({ name, arguments: { query: WORST } }, undefined, { timeout: CALL_MS }).then((r) => r, (err: Error) => err));
      // While they are checked (with a backtracking engine: forever), /healthz keeps answering.
      await health.more(5);
      for (const result of await Promise.all(calls)) {
        if (result instanceof Error) throw result;
        assert.equal(result.isError, true);
        assert.deepEqual(result.content, [{ type: 'text', text: `Argument \`query\` must match the pattern \`${PATHOLOGICAL}\`.` }]);
      }
      // A matching argument goes through to the add-on, checked by the same engine.
      const words = ('a'.repeat(19) + ' ').repeat(20).trimEnd();
      const ok = await client.callTool({ name, arguments: { query: words } }, undefined, { timeout: CALL_MS });
      assert.deepEqual(ok.content, [{ type: 'text', text: `found ${words.length} characters` }]);
      await health.more(2);
      assert.deepEqual(health.state.failures, []);
    } finally {
      await health.stop();
      await client.close();
    }
    assert.equal(hook.calls().length, 1, 'only the matching call reached the add-on');
    // Accepted as a lint warning: the add-on's own engine, or an app's, may still backtrack on it.
    const addon = await person.dev.client.get(`/api/addons/${person.addonId}`);
    const warning = (addon.body.warnings ?? []).find((w: { path: string }) => w.path === '/tools/0/inputSchema/properties/query/pattern');
    assert.match(warning?.message ?? '', /backtrack catastrophically/, JSON.stringify(addon.body.warnings));
  });
});
