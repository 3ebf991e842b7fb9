// Issue #40, passkeys: a person adds a passkey on Home and signs in with it, on the dashboard and
// from an app's sign-in page, in Chromium with its virtual authenticator (WebAuthn over CDP). A
// replayed registration, a cloned authenticator and another site's answer are refused.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { startToolport, type Toolport } from './helpers/target';
import { Client, newPerson } from './helpers/http';
import { ensureDashboardBuilt } from '../apps/dashboard/src/build';
import { launchBrowser, newContext, watchErrors } from './helpers/browser';
import { TestOAuthProvider } from './helpers/mcp';
import { personWithNotes, startAddonServer } from './helpers/addon-server';

let tp: Toolport;
let browser: Awaited<ReturnType<typeof launchBrowser>>['browser'];
let closeBrowser: () => Promise<void>;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

before(async () => {
  await ensureDashboardBuilt();
  // WebAuthn names the site by a domain; an IP address cannot hold a passkey.
  tp = await startToolport({ publicHost: 'localhost' });
  hook = await startAddonServer({});
  ({ browser, close: closeBrowser } = await launchBrowser());
});
after(async () => {
  await closeBrowser?.();
  await hook?.close();
  await tp?.stop();
});

/** A platform authenticator with a fingerprint reader that always says yes, on this page. */
async function authenticator(ctx: BrowserContext, page: Page) {
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, authenticatorId };
}

/** A signed-in dashboard page with an authenticator; the person adds a passkey named `name` on Home. */
async function addPasskey(who: { client: Client; password: string }, name: string) {
  const ctx = await newContext(browser, tp.url);
  await ctx.addCookies([...who.client.cookies].map(([n, value]) => ({ name: n, value, url: tp.url })));
  const page = await ctx.newPage();
  const errors = watchErrors(page);
  const auth = await authenticator(ctx, page);
  await page.goto('/');
  await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
  await page.getByText('No passkey yet.').waitFor();
  await page.getByLabel('Name of the new passkey').fill(name);
  await page.getByLabel('Password, to confirm it is you').fill(who.password);
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await page.getByText(`The passkey “${name}” is added. Next time, sign in with it.`).waitFor();
  await page.locator('[data-passkey]', { hasText: name }).waitFor();
  return { ctx, page, errors, ...auth };
}

const signOut = async (page: Page) => {
  await page.context().clearCookies({ name: 'tp_session' });
};

describe('passkeys in the dashboard', () => {
  it('adds a passkey on Home, signs in with it alone, and removes it', async () => {
    const person = await newPerson(tp.url, 'passkey');
    const { ctx, page, errors } = await addPasskey(person, 'My laptop');
    try {
      const listed = (await person.client.get('/api/me/passkeys')).body as any[];
      assert.deepEqual(listed.map((p) => [p.name, p.lastUsedAt]), [['My laptop', null]]);

      await signOut(page);
      await page.goto('/signin');
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/');
      await page.locator('.email', { hasText: person.email }).waitFor();
      const used = (await person.client.get('/api/me/passkeys')).body as any[];
      assert.ok(used[0].lastUsedAt, 'the sign-in is recorded on the passkey');

      await page.getByRole('button', { name: 'Remove the passkey My laptop' }).click();
      await page.getByRole('button', { name: 'Remove passkey' }).click();
      await page.getByText('The passkey “My laptop” is removed.').waitFor();
      assert.deepEqual((await person.client.get('/api/me/passkeys')).body, []);

      // Removed, it no longer signs in: the browser still offers it, and Toolport says why not.
      await signOut(page);
      await page.goto('/signin');
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByText('This passkey is not registered with Toolport (it may have been removed). Sign in with your password.').waitFor();
      assert.deepEqual(errors.filter((e) => !/401/.test(e)), []);
    } finally {
      await ctx.close();
    }
  });

  it('signs in from an app’s sign-in page with a passkey and lets the app in', async () => {
    const p = await personWithNotes(tp.url, hook, { search_notes: true }, 'pk-notes');
    const { ctx, page } = await addPasskey(p, 'Phone');
    try {
      await signOut(page);
      const provider = new TestOAuthProvider('Claude');
      const app = new McpClient({ name: 'Claude', version: '1.0.0' });
      const transport = () => new StreamableHTTPClientTransport(new URL(p.user.mcpUrl), { authProvider: provider });
      await assert.rejects(app.connect(transport()), UnauthorizedError);

      let code = '';
      await page.route('http://127.0.0.1:7777/**', async (route) => {
        code = new URL(route.request().url()).searchParams.get('code') ?? '';
        await route.fulfill({ status: 200, body: 'You can close this tab.' });
      });
      await page.goto(provider.authorizationUrl!.toString());
      await page.getByRole('heading', { name: 'Sign in to Toolport' }).waitFor();
      await page.getByRole('link', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('heading', { level: 1, name: 'Let Claude use your Toolport tools?' }).waitFor();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((u) => u.origin === 'http://127.0.0.1:7777');
      assert.ok(code, 'the app got its code');

      const t = transport();
      await t.finishAuth(code);
      const connected = new McpClient({ name: 'Claude', version: '1.0.0' });
      await connected.connect(transport());
      assert.deepEqual((await connected.listTools()).tools.map((tool) => tool.name), [`${p.addonId}__search_notes`]);
      await connected.close();
    } finally {
      await ctx.close();
    }
  });

  it('sends nobody back anywhere but an authorization request', async () => {
    const person = await newPerson(tp.url, 'pk-next');
    const { ctx, page } = await addPasskey(person, 'Key');
    try {
      await signOut(page);
      await page.goto(`/signin?next=${encodeURIComponent('https://evil.example/steal')}`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
      assert.equal(new URL(page.url()).origin, new URL(tp.url).origin);
    } finally {
      await ctx.close();
    }
  });
});

/**
 * navigator.credentials.get over options Toolport issued, run in `page` (any origin), as JSON. A
 * string, so the test's compiler adds nothing the page lacks.
 */
function getAssertion(page: Page, options: { challenge: string; rpId: string }): Promise<any> {
  return page.evaluate(`(async (o) => {
    const bytes = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0));
    const b64 = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    const cred = await navigator.credentials.get({ publicKey: { challenge: bytes(o.challenge), rpId: o.rpId, userVerification: 'required', timeout: 10000 } });
    const r = cred.response;
    return {
      id: cred.id,
      rawId: b64(cred.rawId),
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: b64(r.clientDataJSON), authenticatorData: b64(r.authenticatorData), signature: b64(r.signature), userHandle: r.userHandle ? b64(r.userHandle) : undefined },
    };
  })(${JSON.stringify(options)})`);
}

describe('passkeys refused (bad input)', () => {
  let other: Server;
  before(async () => {
    // Another site on the same host name: a passkey for `localhost` answers its prompts too.
    other = createServer((_, res) => res.end('<!doctype html><title>Another site</title>'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  });
  after(() => new Promise<void>((r) => other.close(() => r())));

  it('refuses a registration replayed into another account, and the same credential twice', async () => {
    const a = await newPerson(tp.url, 'pk-a');
    const ctx = await newContext(browser, tp.url);
    await ctx.addCookies([...a.client.cookies].map(([n, value]) => ({ name: n, value, url: tp.url })));
    const page = await ctx.newPage();
    try {
      await authenticator(ctx, page);
      const sent = page.waitForRequest((r) => r.url().endsWith('/api/me/passkeys') && r.method() === 'POST');
      await page.goto('/');
      await page.getByLabel('Name of the new passkey').fill('Mine');
      // A session alone adds no passkey: the password is asked again.
      await page.getByLabel('Password, to confirm it is you').fill('not my password');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByText('This is not your password.').waitFor();
      assert.deepEqual((await a.client.get('/api/me/passkeys')).body, []);
      await page.getByLabel('Password, to confirm it is you').fill(a.password);
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      const body = (await sent).postDataJSON();
      await page.getByText('The passkey “Mine” is added. Next time, sign in with it.').waitFor();

      const b = await newPerson(tp.url, 'pk-b');
      const stolen = await b.client.post('/api/me/passkeys', body);
      assert.equal(stolen.status, 422, stolen.text);
      assert.equal(stolen.body.detail, 'This passkey prompt has expired or was used already. Try again.');
      // With a challenge of B's own, the same credential is still A's alone.
      assert.equal((await b.client.post('/api/me/passkeys/options', { password: b.password })).status, 200);
      const again = await a.client.post('/api/me/passkeys', body);
      assert.equal(again.status, 422, 'A cannot replay it either');
      assert.deepEqual((await b.client.get('/api/me/passkeys')).body, []);
      assert.equal(((await a.client.get('/api/me/passkeys')).body as any[]).length, 1);
      assert.equal((await b.client.delete(`/api/me/passkeys/${encodeURIComponent(body.response.id ?? body.id)}`)).status, 404, 'B cannot remove A’s passkey');
    } finally {
      await ctx.close();
    }
  });

  it('refuses a cloned authenticator whose counter went backwards, and an answer made on another site', async () => {
    const person = await newPerson(tp.url, 'pk-clone');
    const { ctx, page, cdp, authenticatorId } = await addPasskey(person, 'Original');
    try {
      const [credential] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
      assert.ok(credential, 'the authenticator holds the passkey');
      const anonymous = new Client(tp.url);
      const signIn = async () => {
        const options = (await anonymous.post('/api/session/passkey/options')).body;
        return anonymous.post('/api/session/passkey', { response: await getAssertion(page, options) });
      };
      assert.equal((await signIn()).status, 200);
      assert.equal((await signIn()).status, 200);

      // A copy of the key as it was before those sign-ins: its count is behind the original's.
      await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId });
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount: 1 } });
      const cloned = await signIn();
      assert.equal(cloned.status, 401, cloned.text);
      assert.equal(cloned.body.detail, 'This passkey’s signature count went backwards, which a copied authenticator does. Sign in with your password, and remove the passkey on your Home page if you did not copy it.');

      // Another site asks the authenticator to sign Toolport's challenge: the answer names that site.
      await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: credential.credentialId });
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...credential, signCount: 1000 } });
      const port = (other.address() as { port: number }).port;
      await page.goto(`http://localhost:${port}/`);
      const stranger = new Client(tp.url);
      const options = (await stranger.post('/api/session/passkey/options')).body;
      const foreign = await stranger.post('/api/session/passkey', { response: await getAssertion(page, options) });
      assert.equal(foreign.status, 401, foreign.text);
      assert.equal(foreign.body.detail, 'This passkey answer was made for another site, not for Toolport.');
      assert.equal((await stranger.get('/api/me')).status, 401, 'nobody was signed in');
    } finally {
      await ctx.close();
    }
  });
});
