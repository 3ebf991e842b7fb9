import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { clientAddress } from '../http/client-address';
import { crossSiteForm } from '../http/form-origin';
import { getCookie, setCookie } from 'hono/cookie';
import { cors } from 'hono/cors';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import {
  decideAuthorization,
  exchangeToken,
  HTTP_STATUS,
  isToolportError,
  login,
  oauthError,
  prepareAuthorization,
  publicJwks,
  readSession,
  registerClient,
  revokeToken,
  ToolportError,
  type AuthorizeOutcome,
  type PersonSession,
} from '@toolport/core';
import { DEVICE_COOKIE, SESSION_COOKIE, setDeviceCookie } from '../http/auth';
import { limitBody, readJson } from '../http/body';
import type { AppEnv } from '../http/env';
import { oauthErrorResponse } from '../http/oauth-error';
import { consentPage } from '../pages/consent';
import { errorPage } from '../pages/error';
import { setPageHeaders } from '../pages/layout';
import { loginPage } from '../pages/login';

const FORM_LIMIT = 16 * 1024;
/** Allow carries one `tool` field per ticked tool: room for thousands of them. */
const DECISION_FORM_LIMIT = 256 * 1024;
const REGISTER_LIMIT = 16 * 1024;
/** Double-submit cookie for the sign-in form, which is posted before there is a session to bind to. */
const LOGIN_CSRF_COOKIE = 'tp_oauth_login';

const secureCookies = (c: Context<AppEnv>) => c.get('svc').config.publicUrl.startsWith('https:');

/** Reads an application/x-www-form-urlencoded body within a size limit. */
async function readForm(c: Context<AppEnv>, limit = FORM_LIMIT): Promise<URLSearchParams> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
    throw oauthError('invalid_request', 'Send the body as application/x-www-form-urlencoded.');
  }
  await limitBody(c, limit, () => new ToolportError('PAYLOAD_TOO_LARGE', 'The body is too large.', { oauth: 'invalid_request' }));
  return new URLSearchParams(await c.req.raw.text());
}

async function currentSession(c: Context<AppEnv>): Promise<PersonSession | undefined> {
  const token = getCookie(c, SESSION_COOKIE);
  const session = token ? await readSession(c.get('svc'), token) : undefined;
  return session ? { userId: session.userId, csrfToken: session.csrfToken } : undefined;
}

function loginCsrf(c: Context<AppEnv>): string {
  const existing = getCookie(c, LOGIN_CSRF_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{32}$/.test(existing)) return existing;
  const token = randomBytes(24).toString('base64url');
  setCookie(c, LOGIN_CSRF_COOKIE, token, { httpOnly: true, sameSite: 'Lax', secure: secureCookies(c), path: '/oauth', maxAge: 3600 });
  return token;
}

function answer(c: Context<AppEnv>, outcome: AuthorizeOutcome, query: string) {
  switch (outcome.kind) {
    case 'error-page':
      return errorPage(c, outcome.status, outcome.message);
    case 'redirect':
      setPageHeaders(c);
      return c.redirect(outcome.location, c.req.method === 'GET' ? 302 : 303);
    case 'login':
      return loginPage(c, { query, csrfToken: loginCsrf(c) });
    case 'consent':
      return consentPage(c, outcome.view, outcome.status);
  }
}

/** Consent and sign-in: HTML pages, and HTML error pages when something goes wrong. */
const pages = new Hono<AppEnv>()
  .get('/authorize', async (c) => {
    const params = new URL(c.req.url).searchParams;
    const outcome = await prepareAuthorization(c.get('svc'), params, await currentSession(c));
    return answer(c, outcome, params.toString());
  })
  .post('/authorize/decision', async (c) => {
    if (crossSiteForm(c)) return errorPage(c, 403, 'This form was sent from another site.');
    const form = await readForm(c, DECISION_FORM_LIMIT);
    const session = await currentSession(c);
    if (!session) return errorPage(c, 401, 'Your session has ended. Go back to the app and connect again.');
    return answer(c, await decideAuthorization(c.get('svc'), { form, session }), '');
  })
  .post('/login', async (c) => {
    if (crossSiteForm(c)) return errorPage(c, 403, 'This form was sent from another site.');
    const form = await readForm(c);
    const query = new URLSearchParams(form.get('return_query') ?? '').toString();
    const cookie = getCookie(c, LOGIN_CSRF_COOKIE);
    const sent = form.get('csrf_token');
    if (!cookie || !sent || cookie !== sent) {
      return errorPage(c, 403, 'This sign-in form has expired. Go back to the app and connect again.');
    }
    const email = form.get('email') ?? '';
    try {
      const { session, deviceCookie } = await login({
        ctx: { svc: c.get('svc'), actor: { kind: 'system' } },
        input: { email, password: form.get('password') ?? '' },
        clientAddress: clientAddress(c),
        userAgent: c.req.header('user-agent'),
        deviceCookie: getCookie(c, DEVICE_COOKIE),
      });
      setDeviceCookie(c, deviceCookie);
      setCookie(c, SESSION_COOKIE, session.token, {
        httpOnly: true,
        sameSite: 'Lax',
        secure: secureCookies(c),
        path: '/',
        expires: session.expiresAt,
      });
    } catch (err) {
      if (!isToolportError(err) || !err.expose || !['UNAUTHORIZED', 'LIMIT_EXCEEDED', 'VALIDATION'].includes(err.code)) throw err;
      if (err.details.retryAfterSeconds) c.header('Retry-After', String(err.details.retryAfterSeconds));
      const status: ContentfulStatusCode = err.code === 'LIMIT_EXCEEDED' ? 429 : err.code === 'UNAUTHORIZED' ? 401 : 400;
      const message = err.code === 'VALIDATION' ? 'Enter your email address and password.' : err.message;
      return loginPage(c, { query, csrfToken: loginCsrf(c), email, error: message }, status);
    }
    setPageHeaders(c);
    return c.redirect(`/oauth/authorize?${query}`, 303);
  })
  .onError((err, c) => {
    if (isToolportError(err) && err.expose) return errorPage(c, HTTP_STATUS[err.code], err.message);
    c.get('svc')?.log.error('unexpected error', { err, requestId: c.get('requestId'), path: c.req.path });
    return errorPage(c, 500, 'Something went wrong on our side. Try again in a moment.');
  });

// Browser-based MCP clients call these cross-origin; they carry no cookies, so any origin may.
const publicCors = cors({ origin: '*', allowMethods: ['GET', 'POST', 'OPTIONS'], maxAge: 600 });

/** The JSON endpoints apps call directly; every error in the OAuth error format. */
const endpoints = new Hono<AppEnv>()
  .use('/register', publicCors)
  .use('/token', publicCors)
  .use('/revoke', publicCors)
  .use('/jwks', publicCors)
  .post('/register', async (c) => {
    const input = await readJson(c, REGISTER_LIMIT);
    const client = await registerClient(c.get('svc'), { input, clientAddress: clientAddress(c) });
    c.header('Cache-Control', 'no-store');
    return c.json(client, 201);
  })
  .post('/token', async (c) => {
    const form = await readForm(c);
    const tokens = await exchangeToken(c.get('svc'), { form, authorization: c.req.header('authorization') });
    c.header('Cache-Control', 'no-store');
    c.header('Pragma', 'no-cache');
    return c.json(tokens);
  })
  .post('/revoke', async (c) => {
    const form = await readForm(c);
    await revokeToken(c.get('svc'), { form, authorization: c.req.header('authorization') });
    c.header('Cache-Control', 'no-store');
    return c.body(null, 200);
  })
  .get('/jwks', async (c) => {
    c.header('Cache-Control', 'public, max-age=300');
    return c.json(await publicJwks(c.get('svc')));
  })
  .onError(oauthErrorResponse);

/** Mounted at /oauth. */
export const oauthRoutes = new Hono<AppEnv>().route('/', pages).route('/', endpoints);
