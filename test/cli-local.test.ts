import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runToolportCli, runToolportCliHere } from './helpers/cli';

// What the CLI does without a server: usage errors and the local manifest lint.
const notesManifest = path.resolve(import.meta.dirname, '../examples/notes/addon.json');
let dir: string;
const cli = (args: string[], opts: { env?: Record<string, string | undefined>; viaTsx?: boolean } = {}) =>
  runToolportCli(args, { ...opts, config: path.join(dir, 'config.json') });
const here = (args: string[], opts: { env?: Record<string, string | undefined> } = {}) =>
  runToolportCliHere(args, { ...opts, config: path.join(dir, 'config.json') });

before(() => { dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-cli-local-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

describe('toolport usage', () => {
  it('exits 2 on unknown commands, missing arguments and bad options; --help is 0', async () => {
    const runs = await Promise.all([
      cli(['frobnicate']),
      here(['addon', 'lint']),
      here(['addon', 'lint', notesManifest, '--bogus']),
      here(['addon', 'deliveries', 'notes', '--limit', 'lots'], { env: { TOOLPORT_API_KEY: 'tpk_unused', TOOLPORT_URL: 'http://127.0.0.1:9' } }),
      here(['addon', 'lint', path.join(dir, 'missing.json')]),
    ]);
    for (const [i, r] of runs.entries()) {
      assert.equal(r.code, 2, `case ${i}: ${r.stderr}`);
      assert.match(r.stderr, /toolport --help/);
    }
    // The real entry, through tsx, as `npm run toolport` runs it.
    const help = await cli(['--help'], { viaTsx: true });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /toolport addon push/);
  });
});

describe('toolport addon lint', () => {
  it('accepts the Notes manifest', async () => {
    const [run, json] = await Promise.all([cli(['addon', 'lint', notesManifest]), here(['addon', 'lint', notesManifest, '--json'])]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /valid \(4 tools\), 0 warnings/);
    assert.deepEqual(json.json, { ok: true, file: notesManifest, errors: [], warnings: [] });
  });

  it('prints every error with its path, and warnings, and exits 1', async () => {
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ id: 'Bad_Id', name: 'X', description: 'x', webhook: 'ftp://x', tools: [{ name: 'delete_all', title: 'Delete all', summary: 'Deletes every row.', arguments: [] }] }));
    const warnOnly = path.join(dir, 'warn.json');
    writeFileSync(warnOnly, JSON.stringify({ id: 'warny', name: 'W', description: 'w', webhook: 'https://w.example.com/h', tools: [{ name: 'remove_row', title: 'Remove', summary: 'Removes a row.', arguments: [] }] }));
    const notJson = path.join(dir, 'not.json');
    writeFileSync(notJson, '{ "id": ');
    const [run, json, warned, broken] = await Promise.all([
      cli(['addon', 'lint', bad]),
      cli(['addon', 'lint', bad, '--json']),
      here(['addon', 'lint', warnOnly]),
      here(['addon', 'lint', notJson]),
    ]);
    assert.equal(run.code, 1);
    // Never a non-zero exit without a sentence on stderr, naming the file in full.
    assert.equal(run.stderr, `toolport: ${bad}: 2 errors, 2 warnings.\n`);
    assert.match(run.stdout, /^error \/id: /m);
    assert.match(run.stdout, /^error \/webhook: /m);
    assert.match(run.stdout, /^warning \/tools\/0\/name: .*destructive/m);
    assert.equal(json.code, 1);
    assert.equal(json.json.ok, false);
    assert.deepEqual(json.json.errors.map((e: any) => e.path).sort(), ['/id', '/webhook']);
    assert.ok(json.json.warnings.some((w: any) => w.path === '/tools/0/name'));

    assert.equal(warned.code, 0, 'warnings are advice');
    assert.match(warned.stdout, /^warning \/tools\/0\/name: /m);

    assert.equal(broken.code, 1);
    assert.match(broken.stderr, new RegExp(`${notJson.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not valid JSON`));
  });
});

