import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import { notesManifest, personWithNotes, startAddonServer } from './helpers/addon-server';
import { newPerson, operatorOf } from './helpers/http';
import { confirmEmail } from './helpers/mail-files';
import { connectAppV2 } from './helpers/mcp-v2';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Issue #45, discovery: a server card for each person's MCP URL and one for the deployment (SEP-2127),
 * each what server/discover and the OAuth metadata then say; approved public listings as MCP registry
 * `server.json` entries, valid against the registry's published schema.
 */

const schema = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/mcp-schemas/${name}`, import.meta.url), 'utf8'));
/** The published schemas' own keywords and formats, so that strict Ajv checks everything else they say. */
function strictAjv<T extends Ajv>(ajv: T): T {
  ajv.addKeyword('example');
  ajv.addFormat('uri', (s: string) => URL.canParse(s) && /^[a-z][a-z0-9+.-]*:/i.test(s));
  return ajv;
}
const cardAjv = strictAjv(new Ajv2020({ allErrors: true }));
cardAjv.addSchema(schema('server-card.schema.json'), 'server-card');
const validCard = cardAjv.getSchema('server-card#/$defs/ServerCard')!;
const validServerJson = strictAjv(new Ajv({ allErrors: true })).compile(schema('server.schema.json'));

function assertValid(validate: typeof validCard, doc: unknown) {
  assert.ok(validate(doc), JSON.stringify(validate.errors, null, 2));
}

const CARD_TYPE = 'application/mcp-server-card+json';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;
let p: Awaited<ReturnType<typeof personWithNotes>>;
before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: () => ({ text: 'found' }) });
  // An approved public listing (its publisher named by the operator) and a person who installed it.
  p = await personWithNotes(tp.url, hook, { search_notes: true });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

/** Fetched as a client does: GET, asking for the card's media type, from a page on another origin. */
async function fetchCard(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers: { accept: CARD_TYPE, origin: 'https://client.example', ...headers } });
  return { res, card: res.status === 200 ? await res.json() : undefined };
}

describe('server cards', () => {
  it('gives each MCP URL a card that server/discover and the OAuth metadata then bear out, for a real SDK client', async () => {
    const { res, card } = await fetchCard(`${p.user.mcpUrl}/server-card`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), CARD_TYPE);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-expose-headers'), 'ETag');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=3600');
    assertValid(validCard, card);
    const etag = res.headers.get('etag')!;
    assert.match(etag, /^"[^"]+"$/);
    assert.equal((await fetch(`${p.user.mcpUrl}/server-card`, { headers: { 'if-none-match': etag } })).status, 304, 'revalidated, not sent again');

    const [remote] = card.remotes;
    assert.deepEqual([card.remotes.length, remote.type, remote.url], [1, 'streamable-http', p.user.mcpUrl]);

    // Sign-in: the card's OAuth metadata is the document the 401 points at.
    const { resource_metadata: metadataUrl, ...resource } = card._meta['toolport/oauth'];
    const challenge = await fetch(remote.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(challenge.status, 401);
    assert.ok(challenge.headers.get('www-authenticate')!.includes(`resource_metadata="${metadataUrl}"`), challenge.headers.get('www-authenticate')!);
    assert.deepEqual(await (await fetch(metadataUrl)).json(), resource);
    assert.equal(resource.resource, remote.url);
    const [issuer] = resource.authorization_servers;
    assert.equal((await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()).issuer, issuer);

    // The SDK client connects where the card says, on the card's newest revision, and server/discover agrees.
    const { client, provider } = await connectAppV2(remote.url, p.client, { name: 'Card reader', mode: 'auto' });
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), remote.supportedProtocolVersions[0]);
      const discovered = await client.discover();
      assert.deepEqual(discovered.supportedVersions, remote.supportedProtocolVersions);
      assert.deepEqual(discovered.capabilities, card._meta['toolport/capabilities']);
      const info = client.getServerVersion()!;
      assert.deepEqual([info.name, info.version], [card.title, card.version]);
      assert.ok((await client.listTools()).tools.length > 0, 'and lists the tools the card leaves out');
      // The icons are the handshake's (2026-07-28's serverInfo carries only the name and version).
      const init = await fetch(remote.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${provider.saved!.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
      });
      const { serverInfo } = (await init.json()).result;
      assert.deepEqual([serverInfo.name, serverInfo.version, serverInfo.icons], [card.title, card.version, card.icons]);
    } finally {
      await client.close();
    }
  });

  it('says nothing of the person: any well-formed key gets the same card, a malformed one 404', async () => {
    const key = new URL(p.user.mcpUrl).pathname.split('/')[2]!;
    const madeUp = 'A'.repeat(24);
    const mine = (await fetchCard(`${p.user.mcpUrl}/server-card`)).card;
    const theirs = (await fetchCard(`${tp.url}/u/${madeUp}/mcp/server-card`)).card;
    assert.deepEqual(theirs, JSON.parse(JSON.stringify(mine).replaceAll(key, madeUp)), 'only the URL differs');
    const text = JSON.stringify(mine);
    for (const personal of [p.email, p.user.id, p.addonId, 'search_notes']) assert.ok(!text.includes(personal), personal);
    assert.ok(!('tools' in mine));

    const malformed = await fetch(`${tp.url}/u/not-a-key/mcp/server-card`);
    assert.equal(malformed.status, 404);
    assert.equal(malformed.headers.get('content-type'), 'application/problem+json');
    assert.equal((await malformed.json()).detail, 'That MCP URL does not exist.');
    assert.equal((await fetch(`${tp.url}/u/%7BuserKey%7D/mcp/server-card`)).status, 404, 'the template is no key');
  });

  it('gives the deployment a card at both well-known paths and in its AI catalog: each person\'s card with the key as a variable', async () => {
    const atCard = await fetchCard(`${tp.url}/.well-known/mcp/server-card.json`);
    const atMcp = await fetchCard(`${tp.url}/.well-known/mcp.json`);
    assert.equal(atCard.res.status, 200);
    assert.equal(atCard.res.headers.get('access-control-allow-origin'), '*');
    assert.ok(atCard.res.headers.get('etag'));
    assert.deepEqual(atMcp.card, atCard.card);
    const deployment = atCard.card;
    assertValid(validCard, deployment);
    const [remote] = deployment.remotes;
    assert.equal(remote.url, `${tp.url}/u/{userKey}/mcp`);
    assert.equal(remote.variables.userKey.isRequired, true);
    assert.equal(deployment._meta['toolport/oauth'].resource_metadata, `${tp.url}/.well-known/oauth-protected-resource/u/{userKey}/mcp`);

    // Filled in with a person's key, it is that person's card.
    const key = new URL(p.user.mcpUrl).pathname.split('/')[2]!;
    const filled = JSON.parse(JSON.stringify(deployment).replaceAll('{userKey}', key));
    delete filled.remotes[0].variables;
    assert.deepEqual(filled, (await fetchCard(`${p.user.mcpUrl}/server-card`)).card);

    const catalog = await fetch(`${tp.url}/.well-known/ai-catalog.json`);
    assert.equal(catalog.headers.get('content-type'), 'application/ai-catalog+json');
    const { specVersion, entries } = await catalog.json();
    assert.equal(specVersion, '1.0');
    const entry = entries.find((e: { type: string }) => e.type === CARD_TYPE);
    assert.deepEqual((await fetchCard(entry.url)).card, deployment);

    // A browser page elsewhere may read it: the preflight lets the revalidation header through.
    const preflight = await fetch(`${tp.url}/.well-known/mcp/server-card.json`, {
      method: 'OPTIONS',
      headers: { origin: 'https://client.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.match(preflight.headers.get('access-control-allow-headers')!, /If-None-Match/i);
  });
});

describe('registry entries for listed add-ons', () => {
  it('describes an approved public listing as a server.json valid against the registry\'s published schema', async () => {
    const res = await fetch(`${tp.url}/api/catalog/${p.addonId}/server.json`);
    assert.equal(res.status, 200, 'public: no sign-in');
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    const entry = await res.json();
    assertValid(validServerJson, entry);
    assert.equal(entry.$schema, 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json');
    // PUBLIC_URL is http://127.0.0.1:port here: its host reversed is the namespace.
    assert.equal(entry.name, `1.0.0.127/${p.addonId}`);
    assert.deepEqual([entry.title, entry.description, entry.version], ['Notes', 'Your notes, searchable.', '1']);

    // The publisher is the name the operator approved, as the catalog shows it.
    const listed = ((await p.client.get('/api/catalog')).body as any[]).find((a) => a.id === p.addonId);
    const provided = entry._meta['io.modelcontextprotocol.registry/publisher-provided'];
    assert.deepEqual(provided.publisher, { name: listed.publisher.name, verifiedBy: 'operator' });
    assert.equal(entry.websiteUrl, `${tp.url}/addons/${p.addonId}`);

    // It points at Toolport: a person's own key in the URL template is their MCP URL.
    const [remote] = entry.remotes;
    assert.equal(remote.type, 'streamable-http');
    assert.ok(remote.variables.userKey.isRequired);
    const key = new URL(p.user.mcpUrl).pathname.split('/')[2]!;
    assert.equal(remote.url.replace('{userKey}', key), p.user.mcpUrl);

    const list = await (await fetch(`${tp.url}/api/catalog/servers.json`)).json();
    const inList = list.servers.find((s: { server: { name: string } }) => s.server.name === entry.name);
    assert.deepEqual(inList.server, entry);
    assert.equal(list.metadata.count, list.servers.length);
    for (const { server } of list.servers) assertValid(validServerJson, server);
  });

  it('follows a new release: its version, and a long description cut to the registry\'s 100 characters', async () => {
    const long = `${'Keeps every note you write, finds them again by any word in them, '.repeat(4)}and more.`.slice(0, 300);
    const pushed = await p.dev.client.put(`/api/addons/${p.addonId}`, notesManifest(p.addonId, hook.url, { visibility: 'public', description: long }));
    assert.equal(pushed.status, 200, pushed.text);
    const entry = await (await fetch(`${tp.url}/api/catalog/${p.addonId}/server.json`)).json();
    assertValid(validServerJson, entry);
    assert.equal(entry.version, '2');
    assert.ok(Array.from(entry.description as string).length <= 100);
    assert.ok(long.startsWith((entry.description as string).slice(0, -1)) && entry.description.endsWith('…'), entry.description);
  });

  it('refuses a private, an unapproved, a delisted or an unknown add-on with the same 404', async () => {
    const dev = await newPerson(tp.url, 'unlisted');
    await confirmEmail(dev);
    const privateId = `private-${process.pid % 1000}`;
    const pendingId = `pending-${process.pid % 1000}`;
    const delistedId = `delisted-${process.pid % 1000}`;
    for (const [id, visibility] of [[privateId, 'private'], [pendingId, 'public'], [delistedId, 'public']] as const) {
      const created = await dev.client.post('/api/addons', notesManifest(id, hook.url, { visibility }));
      assert.equal(created.status, 201, created.text);
    }
    const op = await operatorOf(tp.url);
    assert.equal((await op.post(`/api/operator/listings/${delistedId}/decision`, { decision: 'approve', publisher: 'Unlisted Ltd' })).status, 200);
    assert.equal((await fetch(`${tp.url}/api/catalog/${delistedId}/server.json`)).status, 200, 'listed for a while');
    assert.equal((await op.post(`/api/operator/listings/${delistedId}/decision`, { decision: 'delist' })).status, 200);

    for (const id of [privateId, pendingId, delistedId, 'no-such-addon']) {
      // Signed in as its developer or not: a registry entry is for everyone or no one.
      for (const res of [await fetch(`${tp.url}/api/catalog/${id}/server.json`), await dev.client.get(`/api/catalog/${id}/server.json`)]) {
        assert.equal(res.status, 404, id);
        assert.equal(res.headers.get('content-type'), 'application/problem+json');
        const body = 'json' in res ? await res.json() : res.body;
        assert.equal(body.detail, 'No add-on listed for everyone has that id: only add-ons an operator approved for the public catalog have a registry entry.');
      }
    }
    const names = (await (await fetch(`${tp.url}/api/catalog/servers.json`)).json()).servers.map((s: { server: { name: string } }) => s.server.name);
    for (const id of [privateId, pendingId, delistedId]) assert.ok(!names.includes(`1.0.0.127/${id}`), id);
  });
});
