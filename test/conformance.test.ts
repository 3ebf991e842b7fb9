import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { startBearerProxy } from './helpers/bearer-proxy';
import { consent } from './helpers/mcp';
import { nodeBinary } from './helpers/node-versions';
import { connect, register } from './helpers/oauth-flow';
import { freePort, startToolport, type Toolport } from './helpers/target';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json),
 * run in server mode against a person's MCP URL for each requirement set Toolport claims, and in
 * authorization mode against Toolport's authorization server. What Toolport deliberately does not
 * offer is listed, each with its reason, in conformance-expected-failures.yaml: any other failure
 * fails the run, and so does a listed one that now passes.
 */
const root = path.resolve(import.meta.dirname, '..');
const CLI = path.join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
/** The suite needs Node 22 or later: the registry's `node` package, installed once (helpers/node-versions.ts). */
const SUITE_NODE = '22.23.3';
const REVISIONS = ['2025-11-25', '2026-07-28'] as const;

type Baseline = Record<string, Record<string, string>>;
const expected = parse(readFileSync(path.join(import.meta.dirname, 'conformance-expected-failures.yaml'), 'utf8')) as Baseline;

let tp: Toolport;
let proxy: Awaited<ReturnType<typeof startBearerProxy>>;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let person: Awaited<ReturnType<typeof personWithNotes>>;
let node: string;
let work: string;

before(async () => {
  node = await nodeBinary(SUITE_NODE);
  work = mkdtempSync(path.join(os.tmpdir(), 'toolport-conformance-'));
  // Toolport behind a reverse proxy, as deployed: PUBLIC_URL names the proxy, which adds the bearer
  // token the suite's server mode does not get for itself (it speaks MCP without OAuth).
  const proxyPort = await freePort();
  tp = await startToolport({ env: { PUBLIC_URL: `http://127.0.0.1:${proxyPort}` } });
  let token = '';
  proxy = await startBearerProxy({ port: proxyPort, upstream: `http://127.0.0.1:${tp.port}`, token: () => token });
  hook = await startAddonServer({ add_note: () => ({ text: 'added' }), search_notes: () => ({ text: 'none' }) });
  person = await personWithNotes(tp.url, hook, { add_note: true, search_notes: true });
  const app = await register(tp.url);
  token = (await connect(tp.url, person.client, app.client_id, person.user.mcpUrl)).access_token;
});
after(async () => {
  await proxy?.close();
  await hook?.close();
  await tp?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Runs the suite's CLI; `onLine` sees its output as it comes. */
function runSuite(args: string[], onLine: (line: string) => void = () => {}) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(node, [CLI, ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let partial = '';
    const take = (chunk: Buffer) => {
      output += chunk;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) onLine(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

interface Check {
  id: string;
  status: string;
}
/** Every check of a run, by scenario, from the results directory the CLI wrote. */
function checksOf(dir: string): Map<string, Check[]> {
  const out = new Map<string, Check[]>();
  for (const name of readdirSync(dir)) {
    const checks = JSON.parse(readFileSync(path.join(dir, name, 'checks.json'), 'utf8')) as Check[];
    const scenario = name.replace(/^(server|authorization-server)-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    out.set(scenario, [...(out.get(scenario) ?? []), ...checks]);
  }
  return out;
}
const failed = (c: Check) => c.status === 'FAILURE' || c.status === 'WARNING';

describe('the expected-failures file', () => {
  it('gives every entry its reason, for each requirement set and the authorization run', () => {
    assert.deepEqual(Object.keys(expected).sort(), [...REVISIONS, 'authorization'].sort());
    for (const [set, entries] of Object.entries(expected)) {
      for (const [entry, reason] of Object.entries(entries ?? {})) {
        assert.ok(typeof reason === 'string' && reason.trim().length > 20, `${set} ${entry}: say why Toolport does not pass it`);
      }
    }
  });
});

for (const revision of REVISIONS) {
  describe(`conformance: the ${revision} requirement set`, () => {
    it('passes every check but those Toolport deliberately does not offer', async () => {
      const baseline = path.join(work, `expected-${revision}.yaml`);
      writeFileSync(baseline, stringify({ server: Object.keys(expected[revision] ?? {}) }));
      const out = path.join(work, `results-${revision}`);
      const run = await runSuite(['server', '--url', person.user.mcpUrl, '--requirements', revision, '--expected-failures', baseline, '-o', out]);
      const checks = [...checksOf(out).values()].flat();
      const passed = checks.filter((c) => c.status === 'SUCCESS').length;
      // The counts the report quotes (docs/mcp.md): checks passed of those that pass or fail.
      console.log(`# conformance ${revision}: ${passed} of ${passed + checks.filter(failed).length} checks passed`);
      assert.equal(run.code, 0, `the suite found unexpected failures or stale entries:\n${run.output.slice(run.output.lastIndexOf('=== SUMMARY ==='))}`);
    });
  });
}

describe('conformance: authorization mode, against Toolport\'s authorization server', () => {
  it('reads the metadata and completes an authorization code grant through the consent page', async () => {
    const callbackPort = await freePort();
    const client = await register(tp.url, { client_name: 'Conformance', redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`] });
    const out = path.join(work, 'results-authorization');
    let consented: Promise<void> | undefined;
    const run = await runSuite(
      ['authorization', '--url', tp.url, '--client-id', client.client_id, '--resource', person.user.mcpUrl, '--port', String(callbackPort), '-o', out],
      (line) => {
        // The suite prints the authorization URL for a person to open: the person signs in and allows it.
        if (consented || !line.startsWith(`${tp.url}/oauth/authorize?`)) return;
        consented = (async () => {
          const back = await consent(person.client, new URL(line.trim()));
          await fetch(back);
        })();
      },
    );
    await consented;
    const allowed = expected.authorization ?? {};
    for (const [scenario, checks] of checksOf(out)) {
      for (const check of checks) {
        const entry = `${scenario}:${check.id}`;
        if (allowed[entry] ?? allowed[scenario]) assert.ok(failed(check), `${entry} passes now: remove it from the expected failures`);
        else assert.ok(!failed(check), `${entry}: ${check.status}\n${run.output}`);
      }
    }
    assert.ok(checksOf(out).size >= 2, run.output);
  });
});
