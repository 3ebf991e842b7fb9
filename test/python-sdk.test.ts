// Issue #41, "every client hears list changes": the Python MCP SDK (`mcp`, as fastmcp's client uses
// it) opens the change stream of 2025-11-25 only once the server gave it a session id. The real
// package, installed from the package index into a fresh virtualenv, is told when the person
// switches a tool on. Its token comes from the SDK's TypeScript client through the real OAuth flow.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp, TestOAuthProvider } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

const SCRIPT = path.join(import.meta.dirname, 'fixtures/python_list_changed.py');

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let venv: string;
let python: string;

before(async () => {
  venv = mkdtempSync(path.join(os.tmpdir(), 'toolport-python-mcp-'));
  const made = spawnSync('python3', ['-m', 'venv', venv], { encoding: 'utf8' });
  assert.equal(made.status, 0, `python3 -m venv: ${made.stderr}`);
  python = path.join(venv, 'bin/python');
  // One try per index: an index this machine cannot reach is passed over at once.
  const pip = spawnSync(python, ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--retries', '0', '--timeout', '10', 'mcp'], { encoding: 'utf8', timeout: 240_000 });
  assert.equal(pip.status, 0, `pip install mcp: ${pip.stderr.split('\n').filter((l) => !/Retrying|NewConnectionError|is ignored/.test(l)).join('\n')}`);
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'none' }), add_note: () => ({ text: 'added' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
  if (venv) rmSync(venv, { recursive: true, force: true });
});

describe('the Python MCP SDK', () => {
  it('gets a session id at initialize, opens the change stream, and hears a tool switched on', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'py');
    const provider = new TestOAuthProvider('Python app');
    const { client } = await connectApp(person.user.mcpUrl, person.client, { provider, choice: { newTools: true } });
    await client.close();

    const child = spawn(python, [SCRIPT, person.user.mcpUrl, provider.saved!.access_token], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // 'close': after its output is read to the end, so stderr is whole when it is shown.
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async () => {
      const line = await Promise.race([lines.next(), exited.then(() => ({ done: true, value: undefined }))]);
      assert.ok(!line.done, `the Python app stopped early:\n${stderr}`);
      return JSON.parse(line.value as string);
    };
    try {
      // The first two lines, in either order: its tools, and its change stream open.
      const said = [await next(), await next()];
      assert.deepEqual(said.find((l) => 'tools' in l), { protocol: '2025-11-25', tools: [`${person.addonId}__search_notes`] });
      assert.ok(said.some((l) => l.listening), `the change stream opened: ${JSON.stringify(said)}`);
      const switched = await person.client.patch(`/api/installs/${person.addonId}`, { tools: { add_note: true } });
      assert.equal(switched.status, 200, switched.text);
      assert.deepEqual(await next(), { changed: [`${person.addonId}__search_notes`, `${person.addonId}__add_note`] });
      assert.equal(await exited, 0, stderr);
    } finally {
      child.kill();
    }
  });
});
