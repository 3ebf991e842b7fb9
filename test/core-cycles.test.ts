import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { valueCycles } from '../scripts/core-cycles.mjs';

/** Issue #38: no value-import cycle inside packages/core, and the check (npm run lint) really catches one. */
describe('the core has no value-import cycle', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'core-cycles-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  };

  it('finds none in packages/core/src', () => {
    assert.deepEqual(valueCycles(path.resolve(import.meta.dirname, '../packages/core/src')), []);
  });

  it('finds a writer that imports its reader back, across folders and through an index', () => {
    write('calls/reader.ts', "import { writeThing } from '../installs/index';\nexport const read = () => writeThing;\n");
    write('installs/index.ts', "export { writeThing } from './writer';\n");
    write('installs/writer.ts', "import { read } from '../calls/reader';\nexport const writeThing = () => read;\n");
    assert.deepEqual(valueCycles(dir), [['calls/reader.ts', 'installs/index.ts', 'installs/writer.ts']]);
  });

  it('does not count imports that are only types', () => {
    write('installs/writer.ts', "import type { read } from '../calls/reader';\nimport { type read as r2 } from '../calls/reader';\nexport const writeThing = (f: typeof read, g: typeof r2) => [f, g];\n");
    assert.deepEqual(valueCycles(dir), []);
  });
});
