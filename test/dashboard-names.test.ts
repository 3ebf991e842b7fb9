// Issue #30, "Names people read": names in any script are shown as written; only mixed-script
// look-alikes (UTS #39 confusables) and hidden characters are marked; folds never halve a character.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { clipGraphemes, revealText } from '../apps/dashboard/src/app/unicode';
import { skeleton } from '../packages/core/src/text/skeleton';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

const named = (s: string) => revealText(s, true, skeleton);

describe('names: what is marked', () => {
  it('shows names in one script, any script, as written', () => {
    for (const name of ['🤖 مساعد', 'Привет', 'Grüße, café', '東京ノート', 'नोट्स', 'Ελληνικά', 'Claude ❤️', '👩‍🚀 Notes', '🏳️‍🌈', '1️⃣ first', 'Notes 🏴󠁧󠁢󠁳󠁣󠁴󠁿', 'Notes для Claude']) {
      assert.equal(named(name), name, name);
    }
  });

  it('marks letters posing as another script\'s in a mixed-script name, from Unicode\'s confusables data', () => {
    assert.equal(named('Сlaude'), '⟦U+0421⟧laude'); // Cyrillic С
    assert.equal(named('Clοude Desktop'), 'Cl⟦U+03BF⟧ude Desktop'); // Greek ο
    assert.equal(named('d\u0435lete_note'), 'd⟦U+0435⟧lete_note');
    assert.equal(named('Соре Notes'), '⟦U+0421⟧⟦U+043E⟧⟦U+0440⟧⟦U+0435⟧ Notes', 'a whole word of look-alikes next to Latin');
    assert.equal(named('ЅΙ Notes'.slice(0, 2) + 'mple'), '⟦U+0405⟧⟦U+0399⟧mple');
  });

  it('marks hidden characters everywhere, sparing only what an emoji is made of', () => {
    assert.equal(named('pay\u200Bpal'), 'pay⟦U+200B⟧pal');
    assert.equal(named('Notes\u202E'), 'Notes⟦U+202E⟧');
    assert.equal(named('a\uFE0Fb'), 'a⟦U+FE0F⟧b', 'a presentation selector after a letter');
    assert.equal(named('😀\u{E0101}\u{E0102}'), '😀⟦U+E0101⟧⟦U+E0102⟧', 'bytes smuggled in variation selectors after an emoji');
    assert.equal(named('x\u200Dy'), 'x⟦U+200D⟧y', 'a joiner between letters');
    assert.equal(named('tag\u{E0041}'), 'tag⟦U+E0041⟧');
    assert.equal(revealText('a\u2066b\u2069'), 'a⟦U+2066⟧b⟦U+2069⟧', 'values too');
  });

  it('folds text by what a person sees as one character', () => {
    assert.equal(clipGraphemes(`${'a'.repeat(3)}👩‍🚀b`, 4), 'aaa👩‍🚀');
    assert.equal(clipGraphemes('e\u0301x', 1), 'e\u0301');
  });
});

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: () => ({ text: 'Deleted.' }) });
  hook.onConfirm(() => ({ confirm: { message: 'Delete this note?' } })); // null would skip the approval
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

for (const size of Object.keys(SIZES) as Size[]) {
  describe(`names in Chromium at ${SIZES[size].width}×${SIZES[size].height}`, () => {
    it('lists apps named in any script as written, and marks only the look-alike', async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, `names-${size}`);
      const names = ['🤖 مساعد', 'Сlaude', 'Claude ❤️', 'Grüße'];
      const apps = [];
      for (const name of names) apps.push((await connectApp(person.user.mcpUrl, person.client, { name })).client);
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/apps');
        const rows = page.locator("[data-connection] > div > h2");
        await rows.nth(names.length - 1).waitFor();
        // Marked at once, then by Unicode's confusables data once it arrives (it loads only for mixed scripts).
        await page.locator('mark.suspicious').first().waitFor();
        const shown = (await rows.allTextContents()).map((t) => t.replace(/Unverified/, '').trim()).sort();
        assert.deepEqual(shown, ['Claude ❤️', 'Grüße', '⟦U+0421⟧laude', '🤖 مساعد'].sort());
        assert.equal(await page.locator('mark.suspicious').count(), 1, 'one mark: the Cyrillic С');
        assert.match((await page.locator('mark.suspicious').getAttribute('title')) ?? '', /another script/);
        assert.deepEqual(await axeSerious(page), []);
        await screenshots(page, `names-apps-${size}`);
        assert.deepEqual(errors, []);
      } finally {
        await close();
        await Promise.all(apps.map((a) => a.close()));
      }
    });

    it('folds a long argument without cutting a character in half', async () => {
      const person = await personWithNotes(tp.url, hook, { delete_note: true }, `fold-${size}`, (m) => {
        const del = m.tools.find((t) => t.name === 'delete_note')!;
        del.arguments[0]!.kind = { text: { maxLength: 1000 } };
      });
      const app = (await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' })).client;
      const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
      try {
        await page.goto('/approvals');
        await page.locator('[data-empty="approvals"]').waitFor();
        const id = `${'a'.repeat(79)}👩‍🚀${'b'.repeat(200)}`;
        const calling = app.callTool({ name: `${person.addonId}__delete_note`, arguments: { id } });
        const summary = page.locator("[data-approval] details.fold summary");
        await summary.waitFor({ timeout: 15_000 });
        const preview = (await summary.locator('span.mono').textContent()) ?? '';
        assert.doesNotMatch(preview, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/, 'no half of a surrogate pair');
        assert.equal(preview, `${'a'.repeat(79)}👩‍🚀…`);
        await page.locator('[data-approval]').getByRole('button', { name: /Deny/ }).click();
        await calling;
        assert.deepEqual(errors, []);
      } finally {
        await close();
        await app.close();
      }
    });
  });
}
