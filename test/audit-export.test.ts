// Issue #45, "a verifiable audit trail": the person downloads their audit trail from the Activity
// page in Chromium, and `toolport audit verify` (the real CLI, as a child process) verifies it, and
// refuses copies with one event changed, one removed, or two swapped, naming where each breaks.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { pendingOf } from './helpers/approvals';
import { launchBrowser } from './helpers/browser';
import { runToolportCli } from './helpers/cli';
import { dashboardAs } from './helpers/dashboard';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'toolport-audit-export-'));

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ add_note: () => ({ text: 'Added.' }), delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?' } }));
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

const verify = (file: string) => runToolportCli(['audit', 'verify', file], { config: path.join(scratch, 'cli.json') });
function copy(name: string, lines: string[]): string {
  const file = path.join(scratch, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('the audit trail, downloaded and verified', () => {
  it('the Activity page’s download verifies with `toolport audit verify`; a tampered copy fails where it was tampered with', async () => {
    const person = await personWithNotes(tp.url, hook, { add_note: true, delete_note: true }, 'audit-dl');
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    for (let i = 0; i < 6; i++) await app.callTool({ name: `${person.addonId}__add_note`, arguments: { text: `note ${i}` } });
    const deleting = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'n1' } });
    const pending = await pendingOf(person.client, 'n1');
    assert.equal((await person.client.post(`/api/approvals/${pending.id}/decision`, { decision: 'allow' })).status, 200);
    await deleting;
    await app.close();

    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, 'desktop');
    let downloaded: string;
    try {
      await page.goto(`${tp.url}/activity`);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download audit trail' }).click()]);
      assert.equal(download.suggestedFilename(), 'toolport-audit.ndjson');
      downloaded = path.join(scratch, 'toolport-audit.ndjson');
      await download.saveAs(downloaded);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }

    const lines = readFileSync(downloaded, 'utf8').split('\n').filter(Boolean);
    // Let in, six calls, the decision and the delete.
    assert.equal(lines.length, 9, lines.join('\n'));
    const ok = await verify(downloaded);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.equal(ok.stdout, 'verified 9 events in 1 chain\n');

    const chain = person.user.id;
    const changed = [...lines];
    changed[6] = changed[6]!.replace('"at":"20', '"at":"19');
    const removed = lines.filter((_, i) => i !== 7);
    const swapped = [...lines];
    [swapped[4], swapped[5]] = [swapped[5]!, swapped[4]!];
    for (const [name, tampered, where] of [
      ['changed', changed, `chain ${chain}: event seq 7 was changed (its hash does not match)`],
      ['removed', removed, `chain ${chain}: event seq 8 is missing`],
      ['swapped', swapped, `chain ${chain}: event seq 5 comes after seq 6`],
    ] as const) {
      const file = copy(`${name}.ndjson`, tampered);
      const r = await verify(file);
      assert.equal(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, `${where}\n`, name);
      assert.match(r.stderr, /does not verify: 1 problem among \d+ events in 1 chain\./);
    }

    // docs/audit.md's few lines for an auditor without the CLI agree on the download and a changed copy.
    const docs = readFileSync(path.resolve(import.meta.dirname, '../docs/audit.md'), 'utf8');
    const snippet = /these lines\s+of Node\.js check the same:\s*```js\n([\s\S]*?)```/.exec(docs)?.[1];
    assert.ok(snippet, 'the snippet is in docs/audit.md');
    const script = path.join(scratch, 'verify.mjs');
    writeFileSync(script, snippet);
    assert.equal(execFileSync(process.execPath, [script, downloaded], { encoding: 'utf8' }), 'verified\n');
    assert.throws(() => execFileSync(process.execPath, [script, copy('changed-again.ndjson', changed)], { stdio: 'pipe' }), /seq 7: changed/);
  });
});
