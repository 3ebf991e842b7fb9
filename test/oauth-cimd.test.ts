import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { OutboundError, verifyAccessToken, type OutboundClient, type OutboundRequest } from '@toolport/core';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Client ID metadata documents. The documents live on https hosts this sandbox cannot reach, so the
 * outbound port is steered: a stand-in answers for app.example.com and records what was asked.
 */
const REDIRECT = 'http://127.0.0.1:7777/cb';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let tp: Toolport;
const documents = new Map<string, { status?: number; body: unknown } | Error>();
const asked: OutboundRequest[] = [];
let real: OutboundClient;

before(async () => {
  tp = await startToolport();
  real = tp.svc.outbound;
  tp.svc.outbound = {
    async request(req) {
      if (!req.url.startsWith('https://app.example.com/')) return real.request(req);
      asked.push(req);
      const doc = documents.get(req.url);
      if (!doc) return { status: 404, headers: {}, body: Buffer.from('not found') };
      if (doc instanceof Error) throw doc;
      return { status: doc.status ?? 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(doc.body)) };
    },
    close: () => real.close(),
  };
});
after(async () => {
  await tp?.stop();
});

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function hiddenFields(page: string) {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1]!] = m[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
  }
  return out;
}

async function authorizePage(person: Client, clientId: string, resource: string) {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({
    response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge,
    code_challenge_method: 'S256', resource, state: 'c1',
  });
  return { page: await person.get(`/oauth/authorize?${q}`), verifier };
}

describe('client ID metadata documents', () => {
  it('fetches the document (5 KB, 5 s), shows the app, and runs the whole flow with the URL as client_id', async () => {
    const clientId = 'https://app.example.com/oauth/client.json';
    documents.set(clientId, { body: { client_id: clientId, client_name: 'Doc App', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' } });
    const { client, user } = await newPerson(tp.url);
    await client.patch('/api/settings', { aiApps: true });
    const before = asked.length;
    const { page, verifier } = await authorizePage(client, clientId, user.mcpUrl);
    assert.equal(page.status, 200, page.text);
    assert.match(page.text, /Doc App/);
    assert.match(page.text.replaceAll('<wbr>', ''), /app\.example\.com/, 'its host, which may wrap after each dot');
    assert.equal(asked.length, before + 1);
    const req = asked.at(-1)!;
    assert.equal(req.maxBytes, 5 * 1024);
    assert.ok(req.deadline - Date.now() <= 5000);

    const decided = await client.request('POST', '/oauth/authorize/decision', new URLSearchParams({ ...hiddenFields(page.text), decision: 'allow' }).toString(), FORM);
    const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
    const token = await new Client(tp.url).request(
      'POST',
      '/oauth/token',
      new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId }).toString(),
      FORM,
    );
    assert.equal(token.status, 200, token.text);
    const access = await verifyAccessToken(tp.svc, token.body.access_token, user.mcpUrl);
    assert.equal(access.identity.clientId, clientId);
    assert.equal(access.identity.appName, 'Doc App');
    assert.equal(asked.length, before + 1, 'the cached document served the token request');
  });

  it('fetches the document again after an hour', async () => {
    const clientId = 'https://app.example.com/refresh.json';
    documents.set(clientId, { body: { client_id: clientId, client_name: 'Old Name', redirect_uris: [REDIRECT] } });
    const { client, user } = await newPerson(tp.url);
    assert.match((await authorizePage(client, clientId, user.mcpUrl)).page.text, /Old Name/);
    documents.set(clientId, { body: { client_id: clientId, client_name: 'New Name', redirect_uris: [REDIRECT] } });
    assert.match((await authorizePage(client, clientId, user.mcpUrl)).page.text, /Old Name/);
    const clock = tp.svc.clock;
    tp.svc.clock = { now: () => new Date(Date.now() + 61 * 60 * 1000) };
    try {
      assert.match((await authorizePage(client, clientId, user.mcpUrl)).page.text, /New Name/);
    } finally {
      tp.svc.clock = clock;
    }
  });

  it('refuses, with an error page and no redirect, documents that lie, carry secrets, fail or are not https', async () => {
    const { client, user } = await newPerson(tp.url);
    const cases: Array<[string, { status?: number; body: unknown } | Error | undefined]> = [
      ['https://app.example.com/other.json', { body: { client_id: 'https://app.example.com/else.json', redirect_uris: [REDIRECT] } }],
      ['https://app.example.com/secret.json', { body: { client_id: 'https://app.example.com/secret.json', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' } }],
      ['https://app.example.com/js.json', { body: { client_id: 'https://app.example.com/js.json', redirect_uris: ['javascript:alert(1)'] } }],
      ['https://app.example.com/big.json', new OutboundError('too_large', 'answer exceeds 5120 bytes')],
      ['https://app.example.com/gone.json', { status: 500, body: {} }],
      ['https://app.example.com/missing.json', undefined],
      ['https://app.example.com/', undefined],
    ];
    for (const [clientId, doc] of cases) {
      if (doc) documents.set(clientId, doc);
      const { page } = await authorizePage(client, clientId, user.mcpUrl);
      assert.equal(page.status, 400, clientId);
      assert.equal(page.headers.get('location'), null);
    }
    const redirectElsewhere = 'https://app.example.com/ok.json';
    documents.set(redirectElsewhere, { body: { client_id: redirectElsewhere, redirect_uris: ['https://app.example.com/cb'] } });
    const { page } = await authorizePage(client, redirectElsewhere, user.mcpUrl);
    assert.equal(page.status, 400, 'a redirect URI the document does not list');
  });
});
