import type { Context, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { apiKeyActive, DEVICE_COOKIE_MAX_AGE_SECONDS, readSession, ToolportError, verifyApiKey } from '@toolport/core';
import type { AppEnv } from './env';

export const SESSION_COOKIE = 'tp_session';
/** A browser that signed in before (core accounts/devices.ts): its own sign-in allowance. */
export const DEVICE_COOKIE = 'tp_device';

/** Set on every sign-in, sign-up and reset; a year, renewed each time. */
export function setDeviceCookie(c: Context<AppEnv>, value: string) {
  setCookie(c, DEVICE_COOKIE, value, {
    httpOnly: true,
    sameSite: 'Lax',
    secure: c.get('svc').config.publicUrl.startsWith('https:'),
    path: '/',
    maxAge: DEVICE_COOKIE_MAX_AGE_SECONDS,
  });
}

const unsafe = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method);

/**
 * Cookie sessions are CSRF-protected by SameSite=Lax, by requiring a JSON content type on writes
 * (a cross-site form cannot send one without a preflight) and by refusing a foreign Origin.
 */
function checkSameOrigin(c: Context<AppEnv>) {
  if (!unsafe(c.req.method)) return;
  const origin = c.req.header('origin');
  const allowed = c.get('svc').config.publicOrigin;
  if (origin && origin !== allowed && origin !== new URL(c.req.url).origin) {
    throw new ToolportError('FORBIDDEN', 'This request came from another site.');
  }
}

async function personFromCookie(c: Context<AppEnv>) {
  const token = getCookie(c, SESSION_COOKIE);
  if (!token) return undefined;
  const session = await readSession(c.get('svc'), token);
  if (!session) return undefined;
  c.set('sessionToken', token);
  return session.userId;
}

/** Who the session cookie signs in, if anyone: for a route answered signed in or not. */
export async function personIfSignedIn(c: Context<AppEnv>): Promise<string | undefined> {
  return personFromCookie(c);
}

/** The dashboard's routes: a signed-in person, by session cookie. */
export const requirePerson: MiddlewareHandler<AppEnv> = async (c, next) => {
  const userId = await personFromCookie(c);
  if (!userId) throw new ToolportError('UNAUTHORIZED', 'Sign in first.');
  checkSameOrigin(c);
  c.set('actor', { kind: 'person', userId });
  await next();
};

/** The developer API: a `tpk_` bearer key, or the dashboard session. */
export const requireDeveloper: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header('authorization');
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const key = match?.[1];
    const found = key ? await verifyApiKey(c.get('svc'), key) : undefined;
    if (!found) {
      c.header('WWW-Authenticate', 'Bearer error="invalid_token"');
      throw new ToolportError('UNAUTHORIZED', 'The API key is missing, wrong or revoked.');
    }
    c.set('actor', { kind: 'developer', userId: found.userId, keyId: found.keyId });
    return next();
  }
  const userId = await personFromCookie(c);
  if (!userId) {
    c.header('WWW-Authenticate', 'Bearer');
    throw new ToolportError('UNAUTHORIZED', 'Send an API key (Authorization: Bearer tpk_...) or sign in.');
  }
  checkSameOrigin(c);
  c.set('actor', { kind: 'person', userId });
  await next();
};

/** A stream asks this as it goes, and ends once its credential no longer holds. */
export function credentialCheck(c: Context<AppEnv>): () => Promise<boolean> {
  const svc = c.get('svc');
  const actor = c.get('actor');
  const token = c.get('sessionToken');
  if (actor.kind === 'developer') return () => apiKeyActive(svc, actor.keyId);
  if (token) return async () => (await readSession(svc, token)) !== undefined;
  return async () => false;
}
