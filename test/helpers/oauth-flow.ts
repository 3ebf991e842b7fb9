import { createHash, randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import { sql } from 'drizzle-orm';
import { ToolportError } from '@toolport/core';
import { Client, newPerson, type Reply } from './http';
import { startToolport, type Toolport } from './target';

/**
 * One Toolport for the test file, handed to `use` once started. Every request comes from
 * 127.0.0.1, so each test starts with a fresh client-registration allowance.
 */
export function oauthToolport(use: (tp: Toolport) => void) {
  let tp: Toolport | undefined;
  before(async () => {
    tp = await startToolport();
    use(tp);
  });
  after(async () => {
    await tp?.stop();
  });
  beforeEach(async () => {
    await tp!.svc.db.execute(sql`delete from oauth_rate_limits`);
  });
}

/** Test-side OAuth client moves: register, authorize through the real pages, redeem, refresh. */
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
export const REDIRECT = 'http://127.0.0.1:9999/callback';

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const entities: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };
/** The hidden inputs of the first form on a page, unescaped. */
export function hiddenFields(page: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1]!] = m[2]!.replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e]!);
  }
  return out;
}

/** The consent form's preselected tools (`tool` checkboxes ticked), as a browser would send them. */
function tickedTools(page: string): string[] {
  return [...page.matchAll(/<input type="checkbox" name="tool" value="([^"]*)" checked>/g)].map((m) => m[1]!.replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e]!));
}

export async function register(baseUrl: string, body: Record<string, unknown> = {}) {
  const res = await new Client(baseUrl).post('/oauth/register', { client_name: 'Test App', redirect_uris: [REDIRECT], ...body });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return res.body as { client_id: string; client_secret?: string; redirect_uris: string[] };
}

export function authorizeQuery(params: Record<string, string | undefined>) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return `/oauth/authorize?${q}`;
}

export const postForm = (client: Client, path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  client.request('POST', path, new URLSearchParams(form).toString(), { ...FORM, ...headers });

export interface FlowOptions {
  clientId: string;
  redirectUri?: string;
  resource: string;
  state?: string;
  decision?: 'allow' | 'deny';
}

/** Signed-in person: authorize → consent page → decision; returns the redirect. */
export async function consent(person: Client, opts: FlowOptions) {
  const { verifier, challenge } = pkce();
  const redirectUri = opts.redirectUri ?? REDIRECT;
  const page = await person.get(
    authorizeQuery({
      response_type: 'code',
      client_id: opts.clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: opts.resource,
      scope: 'tools',
      state: opts.state ?? 'st-123',
    }),
  );
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${page.headers.get('location')} ${page.text.slice(0, 300)}`);
  const form = new URLSearchParams({ ...hiddenFields(page.text), decision: opts.decision ?? 'allow' });
  for (const tool of tickedTools(page.text)) form.append('tool', tool);
  const decided = await person.request('POST', '/oauth/authorize/decision', form.toString(), FORM);
  const location = new URL(decided.headers.get('location') ?? 'about:blank');
  return { page, decided, location, verifier, redirectUri };
}

export async function redeem(baseUrl: string, form: Record<string, string>): Promise<Reply> {
  return postForm(new Client(baseUrl), '/oauth/token', { grant_type: 'authorization_code', ...form });
}

/** The whole flow for a signed-in person: tokens for their own MCP URL. */
export async function connect(baseUrl: string, person: Client, clientId: string, resource: string) {
  const { location, verifier, redirectUri } = await consent(person, { clientId, resource });
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  const res = await redeem(baseUrl, { code, code_verifier: verifier, redirect_uri: redirectUri, client_id: clientId, resource });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return res.body as { access_token: string; refresh_token: string; expires_in: number; scope: string; token_type: string };
}


/** A person with AI apps on and a registered public client. */
export async function personWithClient(baseUrl: string, label = 'oauth') {
  const person = await newPerson(baseUrl, label);
  assert.equal((await person.client.patch('/api/settings', { aiApps: true })).status, 200);
  const app = await register(baseUrl);
  return { ...person, app };
}

/** Asserts a verb failed with this code of the error family (and this `details.reason`). */
export async function rejectsWithCode(promise: Promise<unknown>, code: string, reason?: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ToolportError, `expected a ToolportError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (reason) assert.equal(err.details.reason, reason);
    return true;
  });
}
