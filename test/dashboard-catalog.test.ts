// Issue #30, "A catalog people can browse": search on the server (name, id, description, publisher),
// publisher and release on each entry, and a detail view with every tool's safety flags and
// arguments before installing, at both sizes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { launchBrowser, screenshots } from './helpers/browser';
import { axeSerious, dashboardAs, SIZES, type Size } from './helpers/dashboard';
import { listPublicly, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let browser: Browser;
let closeBrowser: () => Promise<void>;
const tag = `${process.pid % 1000}`;
const notesId = `cat-notes-${tag}`;
const weatherId = `cat-weather-${tag}`;

before(async () => {
  await ensureDashboardBuilt();
  tp = await startToolport();
  hook = await startAddonServer({});
  ({ browser, close: closeBrowser } = await launchBrowser());
  const dev = await newPerson(tp.url, 'cat-dev');
  assert.equal((await dev.client.patch('/api/settings', { displayName: 'Acme Tools' })).status, 200);
  const notes = await dev.client.post('/api/addons', notesManifest(notesId, hook.url, { visibility: 'public' }));
  assert.equal(notes.status, 201, notes.text);
  hook.setSecret(notes.body.signingSecret);
  const weather = await dev.client.post('/api/addons', {
    id: weatherId, name: 'Weather', description: 'Forecasts for any city, by the hour (100% free_).', webhook: hook.url, visibility: 'public',
    tools: [{ name: 'forecast', title: 'Forecast', summary: 'Returns the hourly forecast for a city.', readOnly: true, arguments: [{ name: 'city', summary: 'The city.', kind: { text: { maxLength: 80 } } }] }],
  });
  assert.equal(weather.status, 201, weather.text);
  hook.setSecret(weather.body.signingSecret);
  await listPublicly(tp.url, notesId, dev);
  await listPublicly(tp.url, weatherId, dev);
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

describe('the catalog API', () => {
  it('searches name, id, description and publisher on the server, any case, % and _ as typed', async () => {
    const { client } = await newPerson(tp.url, 'cat-search');
    const ids = async (q: string) => ((await client.get(`/api/catalog?q=${encodeURIComponent(q)}`)).body as Array<{ id: string }>).map((e) => e.id).filter((id) => id.endsWith(tag)).sort();
    assert.deepEqual(await ids('weath'), [weatherId]);
    assert.deepEqual(await ids('HOURLY'.toLowerCase().slice(0, 4)), [weatherId], 'the description');
    assert.deepEqual(await ids('acme'), [notesId, weatherId].sort(), 'the publisher');
    assert.deepEqual(await ids(`cat-notes-${tag}`), [notesId], 'the id');
    assert.deepEqual(await ids('100%'), [weatherId]);
    assert.deepEqual(await ids('e_'), [weatherId], '_ is a character, not a wildcard');
    assert.deepEqual(await ids('nothing like this'), []);
    const long = await client.get(`/api/catalog?q=${'x'.repeat(101)}`);
    assert.equal(long.status, 422, long.text);
  });

  it('details one entry with its publisher, release and each tool\'s flags and arguments', async () => {
    const { client } = await newPerson(tp.url, 'cat-detail');
    const r = await client.get(`/api/catalog/${notesId}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.publisher.name, 'Acme Tools');
    assert.equal(r.body.release.version, 1);
    const del = r.body.tools.find((t: { name: string }) => t.name === 'delete_note');
    assert.equal(del.destructive, true);
    assert.equal(del.confirm, true);
    assert.deepEqual(del.arguments, [{ name: 'id', summary: 'The note’s id.', required: true }]);
    assert.equal((await client.get('/api/catalog/no-such-addon')).status, 404);
  });
});

for (const size of Object.keys(SIZES) as Size[]) {
  it(`browses the catalog in Chromium at ${SIZES[size].width} px: search, details, install`, async () => {
    const person = await newPerson(tp.url, `cat-${size}`);
    const { page, errors, close } = await dashboardAs(browser, tp.url, person.client, size);
    try {
      await page.goto('/addons');
      await page.locator(`[data-addon="${notesId}"]`).waitFor();
      const card = page.locator(`[data-addon="${weatherId}"]`);
      assert.match((await card.locator('.publisher').textContent()) ?? '', /By Acme Tools · runs on 127\.0\.0\.1(:\d+)? · release 1,/);
      await page.getByRole('searchbox', { name: 'Search the catalog' }).fill('weath');
      await page.locator(`[data-addon="${notesId}"]`).waitFor({ state: 'detached' });
      assert.equal(await card.count(), 1);
      await screenshots(page, `catalog-search-${size}`);
      await page.getByRole('searchbox', { name: 'Search the catalog' }).fill('acme');
      await page.getByRole('link', { name: 'Details of Notes' }).click();
      await page.locator(`[data-catalog="${notesId}"]`).waitFor();
      const facts = (await page.locator('[data-catalog] dl.facts').textContent()) ?? '';
      assert.match(facts, /Acme Tools/);
      assert.match(facts, /1, published/);
      const del = page.locator('[data-tool="delete_note"]');
      assert.match((await del.textContent()) ?? '', /asks you before every call, describing what it will do/);
      assert.match((await page.locator('[data-tool="search_notes"]').textContent()) ?? '', /Runs without asking you/);
      assert.match((await del.locator('dl.facts').textContent()) ?? '', /The note’s id/);
      assert.deepEqual(await axeSerious(page), []);
      await screenshots(page, `catalog-detail-${size}`);
      await page.getByRole('button', { name: 'Install' }).click();
      await page.getByText('Notes is installed.').waitFor();
      assert.ok(((await person.client.get('/api/installs')).body as Array<{ addon: { id: string } }>).some((i) => i.addon.id === notesId));
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
}
