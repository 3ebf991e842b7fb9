import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { startAddonServer, personWithNotes } from './helpers/addon-server';
import { launchBrowser, newContext, screenshots, watchErrors } from './helpers/browser';
import { connectApp } from './helpers/mcp';
import { newPerson } from './helpers/http';
import { png } from './helpers/png';
import { startToolport, type Toolport } from './helpers/target';
import { until } from './helpers/wait';

let tp: Toolport;
let bounded: () => unknown;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
/** Where an add-on keeps its confirmation pictures: a PNG, one declaring 50 MB, a web page. */
let pictures: Server;
let picturesUrl = '';
const SHOT = png(120, 80, [30, 140, 90]);

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({ delete_note: (b) => ({ text: `Deleted ${b.arguments.id}.` }) });
  // As Raycast lets an extension write it: a row without a value, and more rows than are shown.
  bounded = () => ({
    confirm: {
      message: 'Delete the note “Trip plan”?',
      info: [
        { name: 'Note', value: 'Trip plan' },
        { name: 'Folder' },
        ...Array.from({ length: 24 }, (_, i) => ({ name: `Line ${i + 1}`, value: `text ${i + 1}` })),
      ],
      style: 'destructive',
    },
  });
  hook.onConfirm(bounded);
  pictures = createServer((req, res) => {
    if (req.url === '/shot.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(SHOT);
    if (req.url === '/huge.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(50 * 1024 * 1024) });
      return res.end(); // the header alone must be enough to refuse it
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>not a picture</p>');
  });
  await new Promise<void>((r) => pictures.listen(0, '127.0.0.1', r));
  picturesUrl = `http://127.0.0.1:${(pictures.address() as AddressInfo).port}`;
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  pictures?.close();
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** A person's app calls delete_note while their Approvals page is open: the card it brings. */
async function cardOfCall(tag: string, noteId: string) {
  const person = await personWithNotes(tp.url, hook, { delete_note: true }, tag);
  const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
  const ctx = await newContext(browser, tp.url);
  await ctx.addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
  const page = await ctx.newPage();
  const errors = watchErrors(page);
  await page.goto('/approvals');
  await page.locator('[data-empty="approvals"]').waitFor();
  const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: noteId } });
  const card = page.locator('[data-approval]');
  await card.waitFor({ timeout: 15_000 });
  return { person, app, ctx, page, errors, calling, card };
}

describe('the approval card', () => {
  it('names the tool by its title and its add-on, and shows the description as far as it is bounded', async () => {
    const { person, app, ctx, page, errors, calling, card } = await cardOfCall('card', 'n1');
    try {

      const heading = (await card.getByRole('heading', { level: 2 }).textContent()) ?? '';
      assert.equal(heading.trim(), 'Claude wants to run Delete a note · Notes');
      assert.doesNotMatch(heading, new RegExp(`delete_note|${person.addonId}`), 'no ids where names belong');

      await card.getByText('Delete the note “Trip plan”?').waitFor();
      const names = await card.locator('dl.info dt').allTextContents();
      assert.deepEqual(names, ['Note', ...Array.from({ length: 19 }, (_, i) => `Line ${i + 1}`)]);
      assert.equal((await card.locator('[data-info-omitted]').textContent())?.trim(), '5 more details were left out by Toolport (too many to show).');
      await screenshots(page, 'approval-card-bounded');

      await card.getByRole('button', { name: 'Deny' }).click();
      const result = (await calling) as { isError?: boolean };
      assert.equal(result.isError, true);
      const decided = page.locator('[data-decided]');
      await decided.waitFor();
      assert.match((await decided.textContent()) ?? '', /^Delete a note · Notes for Claude/);
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close();
      await app.client.close();
    }
  });

  it('says why a card has no description when the add-on could not give one, and still looks destructive', async () => {
    hook.onConfirm(() => ({ status: 500, body: { oops: true } }));
    const { app, ctx, errors, calling, card } = await cardOfCall('card-undescribed', 'n-plain');
    try {
      assert.equal(
        (await card.locator('[data-confirm-missing="failed"]').innerText()).trim(),
        'Notes could not describe this call (its description step failed), so only the arguments below say what it will do. Read them before you allow it.',
      );
      assert.match((await card.getAttribute('class')) ?? '', /\bapproval-destructive\b/, 'a destructive tool looks it without a description');
      await card.getByRole('button', { name: 'Deny' }).click();
      assert.equal(((await calling) as { isError?: boolean }).isError, true);
      assert.deepEqual(errors, []);
    } finally {
      hook.onConfirm(bounded);
      await ctx.close();
      await app.client.close();
    }
  });

  it('keeps an approval that arrived while an older list of pending ones was still on its way', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'stale');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const ctx = await newContext(browser, tp.url);
    await ctx.addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
    const page = await ctx.newPage();
    // The list asked for when the live feed opens is read by the server now, before the call, but
    // reaches the page only after the call's approval came in over the feed: as on a busy network.
    let lists = 0;
    let releaseList!: () => void;
    const listHeld = new Promise<void>((resolve) => {
      void page.route('**/api/approvals?status=pending', async (route) => {
        lists += 1;
        const response = await route.fetch();
        if (lists !== 2) return route.fulfill({ response });
        const release = new Promise<void>((r) => (releaseList = r));
        resolve();
        await release;
        await route.fulfill({ response });
      });
    });
    const calls: Promise<unknown>[] = [];
    try {
      await page.goto('/approvals');
      await page.locator('[data-empty="approvals"]').waitFor();
      await listHeld;
      calls.push(app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'first' } }));
      await page.locator('[data-approval]').waitFor();
      const finished = page.waitForEvent('requestfinished', (r) => r.url().endsWith('/api/approvals?status=pending'));
      releaseList();
      await finished;
      // The list said "none pending"; it was older than the approval on screen, which stays.
      calls.push(app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'second' } }));
      await page.locator('[data-approval]').filter({ hasText: 'second' }).waitFor();
      assert.equal(await page.locator('[data-approval]').filter({ hasText: 'first' }).count(), 1, 'the first approval is still on screen');
      for (const id of ['first', 'second']) {
        await page.locator('[data-approval]').filter({ hasText: id }).getByRole('button', { name: 'Deny' }).click();
      }
      for (const r of (await Promise.all(calls)) as { isError?: boolean }[]) assert.equal(r.isError, true);
    } finally {
      await ctx.close();
      await app.client.close();
    }
  });

  it('shows the add-on’s picture of the call, kept by Toolport for the person alone, and leaves out one it cannot show', async () => {
    const person = await personWithNotes(tp.url, hook, { delete_note: true }, 'picture');
    const app = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    const ctx = await newContext(browser, tp.url);
    await ctx.addCookies([...person.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    const picture = (b: { arguments: { id: string } }) => `${picturesUrl}/${b.arguments.id}`;
    hook.onConfirm((b) => ({ confirm: { message: `Delete ${b.arguments.id}?`, image: picture(b), style: 'destructive' } }));
    try {
      await page.goto('/approvals');
      await page.locator('[data-empty="approvals"]').waitFor();
      const calling = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id: 'shot.png' } });
      const card = page.locator('[data-approval]');
      await card.getByText('Delete shot.png?').waitFor({ timeout: 15_000 });
      const img = card.getByRole('img', { name: 'The add-on’s picture of what this call will do' });
      await img.waitFor();
      await until('the picture loaded', () => img.evaluate((e: HTMLImageElement) => e.complete && e.naturalWidth > 0));
      // Served by Toolport from its own copy, not from the add-on's host.
      const src = await img.evaluate((e: HTMLImageElement) => e.src);
      assert.match(src, new RegExp(`^${tp.url}/api/approvals/apr_[^/]+/image$`));
      assert.deepEqual(await img.evaluate((e: HTMLImageElement) => [e.naturalWidth, e.naturalHeight]), [120, 80]);
      const served = await person.client.get(new URL(src).pathname);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), 'image/png');
      const someoneElse = await newPerson(tp.url, 'other');
      assert.equal((await someoneElse.client.get(new URL(src).pathname)).status, 404, 'another person cannot see it');

      await card.getByRole('button', { name: 'Allow' }).click();
      assert.equal(((await calling) as { isError?: boolean }).isError, undefined);
      const callId: string = hook.calls().find((d) => d.body.arguments.id === 'shot.png')!.body.call.id;
      await page.goto(`/calls/${callId}`);
      await page.locator('[data-call-page]').getByRole('img', { name: 'The add-on’s picture of what this call would do' }).waitFor();

      // 50 MB declared, and a web page: the person is asked without a picture; the developer's log says why.
      for (const [id, why] of [['huge.png', /confirm\.image left out: it is larger than 512 KB/], ['page.html', /confirm\.image left out: the image at its URL is not an image/]] as const) {
        await page.goto('/approvals');
        const asking = app.client.callTool({ name: `${person.addonId}__delete_note`, arguments: { id } });
        const plain = page.locator('[data-approval]').filter({ hasText: `Delete ${id}?` });
        await plain.waitFor({ timeout: 15_000 });
        assert.equal(await plain.getByRole('img').count(), 0, `${id}: no picture`);
        await plain.getByRole('button', { name: 'Deny' }).click();
        await asking;
        const log = (await person.dev.client.get(`/api/addons/${person.addonId}/deliveries`)).body.deliveries as Array<{ type: string; detail: string | null; outcome: string }>;
        const confirmRows = log.filter((d) => d.type === 'tool.confirm');
        assert.ok(confirmRows.some((d) => why.test(d.detail ?? '')), `${id}: ${JSON.stringify(confirmRows)}`);
      }
      assert.deepEqual(errors, []);
    } finally {
      hook.onConfirm(bounded as never);
      await ctx.close();
      await app.client.close();
    }
  });
});
