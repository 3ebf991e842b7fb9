import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveNode } from '@toolport/addon-kit';
import { createNotesAddon } from '@toolport/example-notes';
import { developerKey, runToolportCli, runToolportCliHere } from './helpers/cli';
import { freePort, startToolport, type Toolport } from './helpers/target';

// The CLI against the developer API, with the Notes example as the add-on behind the webhook.
const notesManifest = path.resolve(import.meta.dirname, '../examples/notes/addon.json');
let tp: Toolport;
let dir: string;
let key: string;
let otherKey: string;
let notes: Server;
let notesUrl: string;
let notesSecrets: string[] = [];

// A child process for each command's main run; its variants run the same code in-process.
const cli = (args: string[], opts: { env?: Record<string, string | undefined> } = {}) =>
  runToolportCli(args, { ...opts, config: path.join(dir, 'config.json') });
const here = (args: string[], opts: { env?: Record<string, string | undefined> } = {}) =>
  runToolportCliHere(args, { ...opts, config: path.join(dir, 'config.json') });

before(async () => {
  tp = await startToolport();
  dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-cli-'));
  [key, otherKey] = await Promise.all([developerKey(tp.url, 'cli-dev'), developerKey(tp.url, 'cli-other')]);
  notes = await serveNode(createNotesAddon().handler({ secrets: () => notesSecrets }), await freePort(), '127.0.0.1');
  notesUrl = `http://127.0.0.1:${(notes.address() as { port: number }).port}/webhook`;
});
after(async () => {
  await new Promise<void>((r) => notes?.close(() => r()));
  await tp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('toolport addon push, rotate-secret, deliveries, check', () => {
  const env = () => ({ TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key });

  it('creates the add-on (secret shown once), then publishes a new version, and refuses someone else the id', async () => {
    const created = await cli(['addon', 'push', notesManifest, '--webhook', notesUrl, '--json'], { env: env() });
    assert.equal(created.code, 0, created.stdout + created.stderr);
    assert.equal(created.json.action, 'created');
    assert.equal(created.json.id, 'notes');
    assert.match(created.json.signingSecret, /^whsec_/);
    notesSecrets = [created.json.signingSecret];

    const again = await here(['addon', 'push', notesManifest, '--webhook', notesUrl], { env: env() });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /Updated add-on notes/);
    assert.doesNotMatch(again.stdout, /whsec_/, 'the secret is shown only on creation');

    const bad = path.join(dir, 'bad-push.json');
    writeFileSync(bad, JSON.stringify({ id: 'bad-push', name: 'B', description: 'b', webhook: notesUrl, tools: [] }));
    const [taken, refused] = await Promise.all([
      here(['addon', 'push', notesManifest, '--webhook', notesUrl], { env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: otherKey } }),
      here(['addon', 'push', bad], { env: env() }),
    ]);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /taken/);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /error \/tools: /);
  });

  it('rotates the signing secret', async () => {
    const run = await cli(['addon', 'rotate-secret', 'notes', '--json'], { env: env() });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.json.signingSecret, /^whsec_/);
    assert.notEqual(run.json.signingSecret, notesSecrets[0]);
    notesSecrets = [run.json.signingSecret, ...notesSecrets];
    const [human, theirs] = await Promise.all([
      here(['addon', 'rotate-secret', 'notes'], { env: env() }),
      here(['addon', 'rotate-secret', 'notes'], { env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: otherKey } }),
    ]);
    assert.match(human.stdout, /24 h/);
    assert.equal(theirs.code, 1, "another developer's add-on does not exist for them");
  });

  it('runs a check script and lists the deliveries it caused', async (t) => {
    const probe = await fetch(`${tp.url}/api/addons/notes/check`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '[]' });
    // A 404 from the router (no `code`) means the route is not built yet; the add-on itself exists.
    if (probe.status === 404 && !(await probe.json()).code) return t.skip('needs POST /api/addons/{id}/check');
    const script = path.join(dir, 'script.json');
    writeFileSync(script, JSON.stringify([
      { tool: 'add_note', arguments: { text: '# CLI check\nfrom the test' } },
      { tool: 'search_notes', arguments: { query: 'cli check' } },
      { tool: 'add_note', arguments: { text: 'x'.repeat(5001) } },
    ]));
    const run = await cli(['addon', 'check', 'notes', script, '--json'], { env: env() });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(run.json.tools.length, 3);
    assert.equal(run.json.tools[0].tool, 'add_note');
    assert.ok(run.json.tools[0].result, JSON.stringify(run.json.tools[0]));
    assert.match(JSON.stringify(run.json.tools[1].result), /CLI check/);
    assert.ok(run.json.tools[2].refused ?? run.json.tools[2].result?.isError, 'too long is refused before delivery');
    const human = await here(['addon', 'check', 'notes', script], { env: env() });
    assert.match(human.stdout, /✓ add_note/);

    const list = await cli(['addon', 'deliveries', 'notes', '--limit', '2', '--json'], { env: env() });
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.json.deliveries.length, 2);
    const text = await here(['addon', 'deliveries', 'notes'], { env: env() });
    assert.match(text.stdout, /tool\.call/);
  });

  it('lists deliveries as JSON and refuses an add-on that is not yours', async () => {
    const [list, theirs] = await Promise.all([
      cli(['addon', 'deliveries', 'notes', '--limit', '5', '--json'], { env: env() }),
      here(['addon', 'deliveries', 'notes'], { env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: otherKey } }),
    ]);
    assert.equal(list.code, 0, list.stderr);
    assert.ok(Array.isArray(list.json.deliveries));
    assert.ok(list.json.deliveries.length <= 5);
    assert.equal(theirs.code, 1);
    assert.match(theirs.stderr, /does not exist/);
  });
});
