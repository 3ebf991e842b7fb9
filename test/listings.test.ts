import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, screenshots, signInOnDashboard, watchErrors } from './helpers/browser';
import { confirmEmail } from './helpers/mail-files';
import { installFor, newPerson, OPERATOR_EMAIL, OPERATOR_PASSWORD, operatorOf } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Issue #23, a catalog people can trust: a public listing is a request an operator decides; until
 * approved only the developer can install it; a delisted add-on's tools leave every app.
 */
let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'found' }) });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

let n = 0;
const newId = () => `listed-${process.pid % 1000}-${n++}`;

describe('public listings are reviewed by an operator', () => {
  it('keeps a requested listing to its developer until an operator approves it; then names its publisher', async () => {
    const dev = await newPerson(tp.url, 'lister');
    const id = newId();
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    assert.equal(created.status, 201, created.text);
    hook.setSecret(created.body.signingSecret);
    assert.equal((await dev.client.get(`/api/addons/${id}`)).body.listing.status, 'pending');

    const person = await newPerson(tp.url, 'browser');
    assert.ok(!((await person.client.get('/api/catalog')).body as any[]).some((a) => a.id === id), 'not in anyone else\'s catalog');
    assert.equal((await person.client.post('/api/installs', { addon: id })).status, 404);
    assert.equal((await dev.client.post('/api/installs', { addon: id })).status, 201, 'the developer can install it');

    // Only operators see the queue or decide.
    assert.equal((await person.client.get('/api/operator/listings')).status, 403);
    assert.equal((await dev.client.post(`/api/operator/listings/${id}/decision`, { decision: 'approve' })).status, 403, 'not even the developer');
    // Someone else's key cannot change the request either.
    const stranger = await newPerson(tp.url, 'stranger');
    assert.equal((await stranger.client.put(`/api/addons/${id}`, notesManifest(id, hook.url, { visibility: 'public' }))).status, 404);

    const op = await operatorOf(tp.url);
    const queue = (await op.get('/api/operator/listings')).body as any[];
    const entry = queue.find((q) => q.addonId === id);
    assert.equal(entry.status, 'pending');
    assert.equal(entry.publisher.webhookHost, new URL(hook.url).host);
    const bad = await op.post(`/api/operator/listings/${id}/decision`, { decision: 'maybe' });
    assert.equal(bad.status, 422);
    // Issue #40: an account whose email nobody confirmed never publishes to everyone.
    assert.equal(entry.publisher.emailConfirmed, false);
    const early = await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve' });
    assert.equal(early.status, 409, early.text);
    assert.equal(early.body.detail, 'The publisher has not confirmed their email yet; a listing is approved only for a publisher whose email is confirmed.');
    assert.ok(!((await person.client.get('/api/catalog')).body as any[]).some((a) => a.id === id), 'still not listed');
    await confirmEmail(dev);
    assert.equal(((await op.get('/api/operator/listings')).body as any[]).find((q) => q.addonId === id).publisher.emailConfirmed, true);
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: 'Lister' })).status, 200);
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: 'Lister' })).status, 409, 'decided once');

    const listed = ((await person.client.get('/api/catalog')).body as any[]).find((a) => a.id === id);
    assert.ok(listed, 'listed now');
    assert.equal(listed.publisher.webhookHost, new URL(hook.url).host);
    assert.equal(listed.release.version, 1);
    assert.ok(Date.parse(listed.release.publishedAt));
    assert.equal((await person.client.post('/api/installs', { addon: id })).status, 201);
    // A new release of an approved listing stays listed.
    assert.equal((await dev.client.put(`/api/addons/${id}`, notesManifest(id, hook.url, { visibility: 'public', description: 'Two.' }))).status, 200);
    assert.equal((await dev.client.get(`/api/addons/${id}`)).body.listing.status, 'approved');
  });

  it('names every approved publisher: the operator gives the name the catalog shows, which the developer then cannot change alone', async () => {
    const dev = await newPerson(tp.url, 'unnamed');
    const id = newId();
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    hook.setSecret(created.body.signingSecret);
    await confirmEmail(dev);
    const op = await operatorOf(tp.url);
    const nameless = await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve' });
    assert.equal(nameless.status, 409, nameless.text);
    assert.equal(nameless.body.detail, 'Give the publisher’s name: the catalog shows it to everyone as who makes this add-on, and this developer has not given one.');
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: '  ' })).status, 422, 'a blank name is no name');
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: 'Acme Notes Ltd' })).status, 200);
    const person = await newPerson(tp.url, 'reads');
    assert.equal(((await person.client.get('/api/catalog')).body as any[]).find((a) => a.id === id).publisher.name, 'Acme Notes Ltd');
    // The name was checked by an operator: while the add-on is listed, the developer cannot swap it for another.
    const renamed = await dev.client.patch('/api/settings', { displayName: 'Google' });
    assert.equal(renamed.status, 409, renamed.text);
    assert.match(renamed.body.detail, /operator/);
    assert.equal((await dev.client.get('/api/settings')).body.displayName, 'Acme Notes Ltd');
  });

  it('tells the developer why a request was rejected', async () => {
    const dev = await newPerson(tp.url, 'rejected');
    const id = newId();
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    hook.setSecret(created.body.signingSecret);
    const op = await operatorOf(tp.url);
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'reject', reason: 'The summaries do not say what the tools return.' })).status, 200);
    const mine = (await dev.client.get(`/api/addons/${id}`)).body;
    assert.deepEqual([mine.listing.status, mine.listing.reason], ['rejected', 'The summaries do not say what the tools return.']);
    // Pushing again asks again.
    assert.equal((await dev.client.put(`/api/addons/${id}`, notesManifest(id, hook.url, { visibility: 'public' }))).status, 200);
    assert.equal((await dev.client.get(`/api/addons/${id}`)).body.listing.status, 'pending');
  });

  it('takes a delisted add-on\'s tools off every app at once and tells the person why', async () => {
    const dev = await newPerson(tp.url, 'delisted');
    const id = newId();
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    hook.setSecret(created.body.signingSecret);
    await confirmEmail(dev);
    const op = await operatorOf(tp.url);
    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'approve', publisher: 'Delisted Notes' })).status, 200);
    const person = await newPerson(tp.url, 'installed');
    await installFor(person, id, { search_notes: true });
    const { client: app } = await connectApp(person.user.mcpUrl, person.client);
    assert.equal((await app.listTools()).tools.length, 1);

    assert.equal((await op.post(`/api/operator/listings/${id}/decision`, { decision: 'delist', reason: 'Reported for phishing.' })).status, 200);
    let tools = (await app.listTools()).tools;
    for (let i = 0; i < 50 && tools.length; i++) {
      await sleep(100);
      tools = (await app.listTools()).tools;
    }
    assert.equal(tools.length, 0, 'the app no longer sees its tools');
    const call = (await app.callTool({ name: `${id}__search_notes`, arguments: { query: 'x' } })) as { isError?: boolean };
    assert.equal(call.isError, true);
    const install = ((await person.client.get('/api/installs')).body as any[]).find((i) => i.addon.id === id);
    assert.equal(install.heldOff, 'delisted', 'the person is told');
    const later = await newPerson(tp.url, 'later');
    assert.ok(!((await later.client.get('/api/catalog')).body as any[]).some((a) => a.id === id), 'off the catalog');
  });
});

describe('the operator page in a browser', () => {
  it('shows the request with its publisher; Approve lists it in the catalog with who publishes it', async () => {
    await ensureDashboardBuilt();
    const dev = await newPerson(tp.url, 'shown');
    assert.equal((await dev.client.patch('/api/settings', { displayName: 'Acme Notes' })).status, 200);
    const id = newId();
    const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility: 'public' }));
    hook.setSecret(created.body.signingSecret);
    await confirmEmail(dev);
    const { browser, close } = await launchBrowser();
    try {
      const ctx = await newContext(browser, tp.url);
      const page = await ctx.newPage();
      const errors = watchErrors(page);
      await signInOnDashboard(page, OPERATOR_EMAIL, OPERATOR_PASSWORD);
      await page.getByRole('link', { name: 'Listings' }).click();
      const card = page.locator(`[data-listing="${id}"]`);
      await card.getByText('Acme Notes').first().waitFor();
      await card.getByText(new URL(hook.url).host).waitFor();
      // The name the catalog will show, as the developer gave it; the operator checks it and corrects it.
      const name = card.getByLabel('Publisher name');
      assert.equal(await name.inputValue(), 'Acme Notes');
      await name.fill('Acme Notes Ltd');
      await screenshots(page, 'operator-listings');
      await card.getByRole('button', { name: 'Approve Notes' }).click();
      await page.getByText('Notes: listed, by Acme Notes Ltd.').waitFor();
      assert.deepEqual(errors, []);

      // A person reads who publishes it, on the catalog and on the add-on's own page.
      const person = await newPerson(tp.url, 'reader');
      const reader = await newContext(browser, tp.url);
      await reader.addCookies([...person.client.cookies].map(([n, value]) => ({ name: n, value, url: tp.url })));
      const tab = await reader.newPage();
      await tab.goto('/addons');
      const entry = tab.locator(`[data-addon="${id}"]`);
      await entry.waitFor();
      assert.match((await entry.locator('.publisher').textContent()) ?? '', /^By Acme Notes Ltd · runs on /);
      await tab.goto(`/addons/${id}`);
      await tab.locator('[data-catalog]').waitFor();
      assert.equal(await tab.locator('dt:text-is("Publisher") + dd').textContent(), 'Acme Notes Ltd');
      assert.doesNotMatch((await tab.locator('main').textContent()) ?? '', /unnamed/i);
      await reader.close();
      await ctx.close();
    } finally {
      await close();
    }
    const person = await newPerson(tp.url, 'sees');
    const listed = ((await person.client.get('/api/catalog')).body as any[]).find((a) => a.id === id);
    assert.equal(listed.publisher.name, 'Acme Notes Ltd');
    // Someone who is not an operator has no Listings page.
    assert.equal((await person.client.get('/api/me')).body.operator, false);
  });
});
