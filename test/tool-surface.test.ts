import assert from 'node:assert/strict';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { defineAddon, GENERIC_FAILURE, serveNode, text, tool } from '@toolport/addon-kit';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { launchBrowser, newContext, watchErrors } from './helpers/browser';
import { Client, installFor, listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { png } from './helpers/png';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Issue #27, the rest of MCP 2025-11-25's tool surface: a tool's outputSchema (listed, and every
 * answer checked against it), icons for add-ons and tools (fetched once at push, checked, served from
 * Toolport's own origin), and the idempotent and open-world hints. Real MCP clients, a real add-on
 * on 127.0.0.1, a real icon host, and Chromium for the dashboard.
 */

// ---------------------------------------------------------------------------------------------
// Images, made here byte by byte

/** The header of a JPEG (SOI, JFIF, a baseline frame of 16x16): enough to be read as one. */
const jpeg = Buffer.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
  0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x10, 0x00, 0x10, 0x01, 0x01, 0x11, 0x00, 0xff, 0xd9,
]);
/** A PNG whose header declares a canvas of width x height (a few bytes that would decode to gigabytes). */
function vastPng(width: number, height: number) {
  const b = png(1, 1);
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  return b;
}
const dataUri = (type: string, b: Buffer) => `data:${type};base64,${b.toString('base64')}`;

const ICON = png(32, 32);
const TOOL_ICON = png(16, 16, [200, 60, 40]);

// ---------------------------------------------------------------------------------------------

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let icons: Server;
let iconBase: string;
const iconHits: string[] = [];

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({
    search_notes: (b) => {
      const q = b.arguments.query;
      if (q === 'good') return { json: { notes: [{ id: 'n1', title: 'Shopping' }], total: 1 } };
      if (q === 'bad') return { json: { notes: [{ id: 5 }], total: 'one' } };
      if (q === 'words') return { text: 'n1 Shopping' };
      return { error: 'Nothing asked.' };
    },
    add_note: () => ({ json: { id: 'n2' } }),
    delete_note: () => ({ text: 'deleted' }),
  });
  icons = http.createServer((req, res) => {
    iconHits.push(req.url!);
    const send = (status: number, type: string, body: Buffer | string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, ...headers });
      res.end(body);
    };
    switch (req.url) {
      case '/icon.png':
        return send(200, 'image/png', ICON);
      case '/other.png':
        return send(200, 'image/png', png(24, 24, [10, 200, 10]));
      case '/big.png':
        return send(200, 'image/png', png(8, 8, [0, 0, 0], 1024 * 1024));
      case '/notes.txt':
        return send(200, 'text/plain', 'Groceries: oat milk, bread.\n');
      case '/logo.svg':
        return send(200, 'image/svg+xml', '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>');
      case '/vast.png':
        return send(200, 'image/png', vastPng(30_000, 30_000));
      case '/moved.png':
        return send(302, 'text/plain', '', { location: '/icon.png' });
      default:
        return send(404, 'text/plain', 'no');
    }
  });
  await new Promise<void>((r) => icons.listen(0, '127.0.0.1', r));
  iconBase = `http://127.0.0.1:${(icons.address() as AddressInfo).port}`;
});
after(async () => {
  icons?.closeAllConnections();
  await new Promise<void>((r) => (icons ? icons.close(() => r()) : r()));
  await hook?.close();
  await tp?.stop();
});

const SEARCH_OUTPUT = {
  type: 'object',
  properties: {
    notes: {
      type: 'array',
      description: 'The notes found, newest first.',
      items: {
        type: 'object',
        properties: { id: { type: 'string', pattern: '^n[0-9]+$' }, title: { type: 'string' } },
        required: ['id', 'title'],
      },
    },
    total: { type: 'integer', minimum: 0 },
  },
  required: ['notes', 'total'],
};

/** The Notes manifest with this fields: icons, an outputSchema, the hints. */
function withSurface(m: ReturnType<typeof notesManifest>) {
  Object.assign(m, { icons: [{ src: `${iconBase}/icon.png` }] });
  Object.assign(m.tools[0]!, { outputSchema: SEARCH_OUTPUT, openWorld: false, icons: [{ src: dataUri('image/png', TOOL_ICON), theme: 'dark', sizes: ['16x16'] }] });
  Object.assign(m.tools[1]!, { idempotent: true, openWorld: false });
}

describe('tools/list: outputSchema, icons and hints, as a real MCP client sees them', () => {
  it('lists them, with icons at Toolport’s own URL serving the checked bytes, fetched once', async () => {
    const p = await personWithNotes(tp.url, hook, { search_notes: true, add_note: true }, 'surface', withSurface);
    const fetchedAtPush = iconHits.filter((u) => u === '/icon.png').length;
    assert.equal(fetchedAtPush, 1, 'the icon was fetched once, when the manifest was pushed');
    const { client } = await connectApp(p.user.mcpUrl, p.client);

    const { tools } = await client.listTools();
    const search = tools.find((t) => t.name === `${p.addonId}__search_notes`)!;
    const add = tools.find((t) => t.name === `${p.addonId}__add_note`)!;
    assert.deepEqual(search.outputSchema, SEARCH_OUTPUT);
    assert.equal(add.outputSchema, undefined);
    assert.deepEqual(search.annotations, { title: 'Search notes', destructiveHint: false, openWorldHint: false });
    assert.deepEqual(add.annotations, { title: 'Add a note', destructiveHint: false, idempotentHint: true, openWorldHint: false });

    // A tool's own icon; a tool without one shows its add-on's.
    assert.equal(search.icons?.length, 1);
    assert.equal(add.icons?.length, 1);
    const [own, addonIcon] = [search.icons![0]!, add.icons![0]!];
    assert.deepEqual({ ...own, src: undefined }, { src: undefined, mimeType: 'image/png', sizes: ['16x16'], theme: 'dark' });
    assert.deepEqual({ ...addonIcon, src: undefined }, { src: undefined, mimeType: 'image/png', sizes: ['32x32'] });
    for (const [icon, bytes] of [[own, TOOL_ICON], [addonIcon, ICON]] as const) {
      assert.match(icon.src, new RegExp(`^${tp.url.replace(/[.]/g, '\\.')}/icons/[0-9a-f]{64}$`), 'served by Toolport, never the add-on’s URL');
      const res = await fetch(icon.src);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.match(res.headers.get('cache-control')!, /max-age=31536000.*immutable/);
      assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; sandbox");
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
      const again = await fetch(icon.src, { headers: { 'if-none-match': res.headers.get('etag')! } });
      assert.equal(again.status, 304);
    }
    // Listing again fetches nothing from the add-on's host.
    await client.listTools();
    assert.equal(iconHits.filter((u) => u === '/icon.png').length, fetchedAtPush);

    // Toolport's own icon in its server info.
    const server = client.getServerVersion()!;
    assert.deepEqual(server.icons, [{ src: `${tp.url}/icon.svg`, mimeType: 'image/svg+xml', sizes: ['any'] }]);
    const own_ = await fetch(server.icons![0]!.src);
    assert.equal(own_.status, 200);
    assert.equal(own_.headers.get('content-type'), 'image/svg+xml');

    // An icon nobody stored, and a path that is no hash.
    assert.equal((await fetch(`${tp.url}/icons/${'0'.repeat(64)}`)).status, 404);
    assert.equal((await fetch(`${tp.url}/icons/..%2Fapi%2Fme`)).status, 404);

    // The developer API shows the icons at Toolport's URL too, and the new fields.
    const described = await p.dev.client.get(`/api/addons/${p.addonId}`);
    assert.equal(described.body.icons[0].src, addonIcon.src);
    assert.deepEqual(described.body.tools[0].outputSchema, SEARCH_OUTPUT);
    assert.equal(described.body.tools[1].idempotent, true);
    await client.close();
  });
});

describe('tools/call: structuredContent against the outputSchema', () => {
  it('passes a matching answer with structuredContent; a mismatch or a missing one is a clear tool error', async () => {
    const p = await personWithNotes(tp.url, hook, { search_notes: true }, 'output', withSurface);
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    await client.listTools(); // the SDK client validates structuredContent against the listed outputSchema too
    const name = `${p.addonId}__search_notes`;

    const good = await client.callTool({ name, arguments: { query: 'good' } });
    assert.equal(good.isError, undefined, JSON.stringify(good));
    assert.deepEqual(good.structuredContent, { notes: [{ id: 'n1', title: 'Shopping' }], total: 1 });

    const bad = await client.callTool({ name, arguments: { query: 'bad' } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent, undefined);
    const said = (bad.content as Array<{ text: string }>)[0]!.text;
    assert.match(said, /^The add-on "Notes" answered with a result that does not match this tool's outputSchema, so Toolport did not pass it on: /);
    assert.match(said, /`notes\[0\]\.id` must be text\./);
    assert.match(said, /`notes\[0\]\.title` is missing\./);
    assert.match(said, /`total` must be a whole number\./);

    const words = await client.callTool({ name, arguments: { query: 'words' } });
    assert.equal(words.isError, true);
    assert.match((words.content as Array<{ text: string }>)[0]!.text, /answered without the structured result this tool declares \(its outputSchema\)/);

    // A refusal stays the add-on's sentence.
    const refused = await client.callTool({ name, arguments: {} });
    assert.deepEqual(refused, { content: [{ type: 'text', text: 'Nothing asked.' }], isError: true });

    const log = await p.client.get('/api/calls');
    assert.deepEqual(log.body.items.slice(0, 4).map((i: any) => i.outcome), ['refused', 'failed', 'failed', 'ok']);
    await client.close();
  });

  it('an add-on built with the kit renders the fields into its manifest and answers with structured output', async () => {
    const logged: unknown[] = [];
    const secrets: string[] = [];
    const addon = defineAddon({
      id: `kit-out-${process.pid % 1000}`,
      name: 'Dice',
      description: 'Rolls dice.',
      webhook: 'http://127.0.0.1:1/hook',
      visibility: 'public',
      icons: [{ src: dataUri('image/png', ICON) }],
      tools: {
        roll: tool({
          title: 'Roll dice',
          summary: 'Rolls two dice and returns each face and the total.',
          readOnly: true,
          openWorld: false,
          outputSchema: {
            type: 'object',
            properties: { faces: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 6 } }, total: { type: 'integer' } },
            required: ['faces', 'total'],
          },
          run: () => ({ json: { faces: [3, 4], total: 7 } }),
        }),
        shout: tool({
          title: 'Shout',
          summary: 'Returns the text in capitals.',
          idempotent: true,
          arguments: { text: text({ maxLength: 40, summary: 'What to shout.' }) },
          outputSchema: { type: 'object', properties: { loud: { type: 'string' } } },
          // Wrong on purpose: a tool with an outputSchema answers { json }.
          run: ({ text: t }) => t.toUpperCase(),
        }),
      },
    });
    const server = await serveNode(addon.handler({ secrets: () => secrets, onError: (err) => logged.push(err) }), 0, '127.0.0.1');
    try {
      const webhook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const manifest = addon.manifest({ webhook });
      assert.deepEqual(manifest.icons, [{ src: dataUri('image/png', ICON) }]);
      assert.equal(manifest.tools[0]!.openWorld, false);
      assert.equal(manifest.tools[1]!.idempotent, true);
      assert.deepEqual(manifest.tools[0]!.outputSchema?.required, ['faces', 'total']);

      const dev = await newPerson(tp.url, 'kit-dev');
      const created = await dev.client.post('/api/addons', manifest);
      assert.equal(created.status, 201, created.text);
      secrets.push(created.body.signingSecret);
      await listPublicly(tp.url, manifest.id, dev);
      const person = await newPerson(tp.url, 'kit-person');
      await installFor(person, manifest.id, { roll: true, shout: true });
      const { client } = await connectApp(person.user.mcpUrl, person.client);
      const { tools } = await client.listTools();
      assert.equal(tools.find((t) => t.name === `${manifest.id}__roll`)!.icons?.[0]?.mimeType, 'image/png');

      const rolled = await client.callTool({ name: `${manifest.id}__roll`, arguments: {} });
      assert.deepEqual(rolled.structuredContent, { faces: [3, 4], total: 7 });
      assert.deepEqual(JSON.parse((rolled.content as Array<{ text: string }>)[0]!.text), { faces: [3, 4], total: 7 });

      const shouted = await client.callTool({ name: `${manifest.id}__shout`, arguments: { text: 'hi' } });
      assert.deepEqual(shouted, { content: [{ type: 'text', text: GENERIC_FAILURE }], isError: true });
      assert.match(String(logged.at(-1)), /a tool with an outputSchema must return \{ json: \{\.\.\.\} \}/);
      await client.close();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('releases: what an outputSchema, a hint or an icon change asks of the person', () => {
  it('an outputSchema or hint change waits for review; an icon change reaches apps at once', async () => {
    const p = await personWithNotes(tp.url, hook, { search_notes: true }, 'review', withSurface);
    const { client } = await connectApp(p.user.mcpUrl, p.client);
    const name = `${p.addonId}__search_notes`;
    const manifest = notesManifest(p.addonId, hook.url, { visibility: 'public' });
    withSurface(manifest);

    // Icons only: no review; the new icon is listed at once.
    assert.deepEqual((await client.listTools()).tools.find((t) => t.name === name)!.icons![0]!.sizes, ['16x16']);
    (manifest.tools[0] as any).icons = [{ src: `${iconBase}/other.png` }];
    const iconsOnly = await p.dev.client.put(`/api/addons/${p.addonId}`, manifest);
    assert.equal(iconsOnly.status, 200, iconsOnly.text);
    assert.equal((await p.client.get('/api/installs')).body[0].update, null);
    assert.deepEqual((await client.listTools()).tools.find((t) => t.name === name)!.icons![0]!.sizes, ['24x24']);

    // The outputSchema and a hint: reviewed; apps keep the accepted ones until then.
    const changed = structuredClone(SEARCH_OUTPUT);
    changed.properties.total = { type: 'integer', minimum: 0, description: 'How many notes matched.' } as never;
    Object.assign(manifest.tools[0]!, { outputSchema: changed, openWorld: true });
    const reviewed = await p.dev.client.put(`/api/addons/${p.addonId}`, manifest);
    assert.equal(reviewed.status, 200, reviewed.text);
    const update = (await p.client.get('/api/installs')).body[0].update;
    assert.ok(update, 'the person has an update to review');
    const fields = update.tools.find((t: any) => t.name === 'search_notes').fields.map((f: any) => f.field);
    assert.deepEqual(fields.sort(), ['openWorld', 'outputSchema']);
    assert.deepEqual(update.tools.find((t: any) => t.name === 'search_notes').lessSafe, ['It would reach beyond its own data (it is no longer marked closed-world).']);
    const before = (await client.listTools()).tools.find((t) => t.name === name)!;
    assert.deepEqual(before.outputSchema, SEARCH_OUTPUT);
    assert.equal(before.annotations?.openWorldHint, false);

    const accepted = await p.client.post(`/api/installs/${p.addonId}/accept`, { version: update.to });
    assert.equal(accepted.status, 200, accepted.text);
    const after_ = (await client.listTools()).tools.find((t) => t.name === name)!;
    assert.deepEqual(after_.outputSchema, changed);
    assert.equal(after_.annotations?.openWorldHint, true);
    await client.close();
  });
});

describe('bad input: refused at registration with a sentence, nothing registered', () => {
  let dev: Client;
  let n = 0;
  before(async () => {
    dev = (await newPerson(tp.url, 'bad-dev')).client;
  });

  /** Registers Notes with `edit` applied; expects a 422 naming `path` with a message matching `said`. */
  async function refused(edit: (m: any) => void, path: string, said: RegExp) {
    const id = `bad-${process.pid % 1000}-${n++}`;
    const m: any = notesManifest(id, hook.url);
    edit(m);
    const res = await dev.post('/api/addons', m);
    assert.equal(res.status, 422, `${path}: ${res.status} ${res.text}`);
    const hit = (res.body.errors as Array<{ path: string; message: string }>).find((e) => e.path === path);
    assert.ok(hit, `no error at ${path}: ${JSON.stringify(res.body.errors)}`);
    assert.match(hit.message, said);
    assert.doesNotMatch(hit.message, /inputSchema/, 'said of the outputSchema');
    assert.equal((await dev.get(`/api/addons/${id}`)).status, 404, 'nothing was registered');
    return hit.message;
  }
  const output = (schema: unknown) => (m: any) => (m.tools[0].outputSchema = schema);
  const icon = (src: string, more: Record<string, unknown> = {}) => (m: any) => (m.icons = [{ src, ...more }]);

  it('an unsafe outputSchema: a catastrophic pattern, a remote $ref, recursion, too large, not an object', async () => {
    await refused(
      output({ type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } }),
      '/tools/0/outputSchema/properties/code/pattern',
      /can backtrack catastrophically.*apps check structuredContent against the outputSchema/,
    );
    await refused(
      output({ type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }),
      '/tools/0/outputSchema/properties/a/$ref',
      /Remote `\$ref`.*is refused: Toolport never fetches schemas/,
    );
    await refused(
      output({ type: 'object', properties: { node: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } } } } }),
      '/tools/0/outputSchema/$defs/node/properties/next/$ref',
      /would recurse without bound/,
    );
    await refused(output({ type: 'object', description: 'x'.repeat(70_000) }), '/tools/0/outputSchema', /The outputSchema is too large: at most 64 KB/);
    await refused(output({ type: 'string' }), '/tools/0/outputSchema/type', /The top level of an outputSchema must be `"type": "object"`/);
    await refused(output({ type: 'object', properties: { a: { type: 'string', $data: '1/b' } } }), '/tools/0/outputSchema/properties/a/$data', /`\$data` references are refused/);
  });

  it('an icon that is huge, not an image, an SVG, vast, moved, or a data URI that lies about its type', async () => {
    await refused(icon(`${iconBase}/big.png`), '/icons/0/src', /The icon is larger than 64 KB/);
    await refused(icon(`${iconBase}/notes.txt`), '/icons/0/src', /is not an image: its bytes are not a PNG, JPEG, WebP or GIF/);
    await refused(icon(`${iconBase}/logo.svg`), '/icons/0/src', /SVG icons are not accepted/);
    await refused(icon(`${iconBase}/vast.png`), '/icons/0/src', /is 30000x30000 pixels; an icon is at most 1024x1024/);
    await refused(icon(`${iconBase}/moved.png`), '/icons/0/src', /redirect \(HTTP 302\); Toolport does not follow redirects/);
    await refused(icon(dataUri('image/png', jpeg)), '/icons/0/src', /The icon's data URI says image\/png, but its bytes are a JPEG image/);
    await refused(icon(dataUri('image/svg+xml', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))), '/icons/0/src', /SVG icons are not accepted/);
    await refused(icon(dataUri('image/png', png(200, 200, [1, 2, 3], 90 * 1024))), '/icons/0/src', /data URI is too long/);
    await refused(icon(`${iconBase}/icon.png`, { sizes: ['128x128'] }), '/icons/0', /`sizes` says 128x128, but the image is 32x32/);
    await refused(icon(`${iconBase}/icon.png`, { mimeType: 'image/jpeg' }), '/icons/0', /`mimeType` says image\/jpeg, but the image is a PNG/);
    await refused(icon('file:///etc/passwd'), '/icons/0/src', /must use https or http/);
    await refused((m) => (m.tools[1].idempotent = 'yes'), '/tools/1/idempotent', /must be true or false/);
    await refused((m) => (m.tools[1].icons = Array.from({ length: 5 }, () => ({ src: `${iconBase}/icon.png` }))), '/tools/1/icons', /up to 4 icons/);
  });

  it('an update with a bad icon keeps the release that was there', async () => {
    const id = `bad-up-${process.pid % 1000}`;
    const m: any = notesManifest(id, hook.url);
    const created = await dev.post('/api/addons', m);
    assert.equal(created.status, 201, created.text);
    hook.setSecret(created.body.signingSecret);
    m.icons = [{ src: `${iconBase}/notes.txt` }];
    const res = await dev.put(`/api/addons/${id}`, m);
    assert.equal(res.status, 422);
    assert.match(res.body.errors[0].message, /is not an image/);
    const now = await dev.get(`/api/addons/${id}`);
    assert.equal(now.body.version, 1);
    assert.deepEqual(now.body.icons, []);
  });
});

describe('icons on private addresses when Toolport refuses them (WEBHOOK_ALLOW_PRIVATE=false)', () => {
  it('refuses 10.0.0.1 and 127.0.0.1 without connecting', async () => {
    const strict = await startToolport({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    try {
      const dev = await newPerson(strict.url, 'strict-dev');
      const hits = iconHits.length;
      for (const [i, src] of [`http://10.0.0.1/icon.png`, `${iconBase}/icon.png`, `http://[::1]:1/icon.png`].entries()) {
        const m: any = notesManifest(`strict-${process.pid % 1000}-${i}`, 'https://notes.example.com/toolport');
        m.tools[0].icons = [{ src }];
        const res = await dev.client.post('/api/addons', m);
        assert.equal(res.status, 422, res.text);
        assert.deepEqual(res.body.errors, [{
          path: '/tools/0/icons/0/src',
          message: 'The icon URL leads to a private, loopback, link-local or metadata address, which Toolport does not fetch; put the icon on a public host or use a data URI.',
        }]);
      }
      assert.equal(iconHits.length, hits, 'no request reached the icon host');
    } finally {
      await strict.stop();
    }
  });
});

describe('the dashboard shows icons beside names, from Toolport’s own origin', () => {
  it('draws the add-on’s and the tool’s icons under the strict CSP', async () => {
    const p = await personWithNotes(tp.url, hook, { search_notes: true }, 'dash', withSurface);
    const { browser, close } = await launchBrowser();
    try {
      const ctx = await newContext(browser, tp.url);
      await ctx.addCookies([...p.client.cookies].map(([name, value]) => ({ name, value, url: tp.url })));
      const page = await ctx.newPage();
      const errors = watchErrors(page);
      await page.goto('/addons');
      const card = page.locator(`article[data-addon="${p.addonId}"]`);
      await card.waitFor();
      // The icons load lazily and may still be in flight: scroll them in and wait for each to settle.
      await card.scrollIntoViewIfNeeded();
      await card.locator('img.icon').evaluateAll((imgs) => Promise.all((imgs as HTMLImageElement[]).map((i) =>
        i.complete ? null : new Promise((settle) => { i.addEventListener('load', settle, { once: true }); i.addEventListener('error', settle, { once: true }); }))));
      const drawn = await card.locator('img.icon').evaluateAll((imgs) =>
        (imgs as HTMLImageElement[]).map((i) => ({ src: new URL(i.src).pathname, width: i.naturalWidth, alt: i.alt })),
      );
      assert.equal(drawn.length, 2, JSON.stringify(drawn)); // the add-on's, and search_notes' own
      for (const d of drawn) {
        assert.match(d.src, /^\/icons\/[0-9a-f]{64}$/);
        assert.ok(d.width > 0, `${d.src} was loaded`);
        assert.equal(d.alt, '');
      }
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
