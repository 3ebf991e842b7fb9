import { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import {
  addPasskey,
  changePassword,
  listPasskeys,
  passkeyRegistrationOptions,
  passkeySignInOptions,
  removePasskey,
  signInWithPasskey,
  deleteAccount,
  exportAccount,
  endSession,
  getMe,
  getSessionState,
  listSessions,
  login,
  logout,
  requestPasswordReset,
  resendVerification,
  resetPassword,
  rotateUserKey,
  signOutOthers,
  signup,
  verifyEmail,
  type Ctx,
} from '@toolport/core';
import { DEVICE_COOKIE, personIfSignedIn, requirePerson, SESSION_COOKIE, setDeviceCookie } from '../http/auth';
import { readJson } from '../http/body';
import { clientAddress } from '../http/client-address';
import type { AppEnv } from '../http/env';
import type { Context } from 'hono';

const anonymous = (c: Context<AppEnv>): Ctx => ({ svc: c.get('svc'), actor: { kind: 'system' } });
const asPerson = (c: Context<AppEnv>): Ctx => ({ svc: c.get('svc'), actor: c.get('actor') });
/** What the person's list of sessions shows of where one started. */
const deviceOf = (c: Context<AppEnv>) => ({ userAgent: c.req.header('user-agent'), address: clientAddress(c) });

function setSession(c: Context<AppEnv>, token: string, expiresAt: Date) {
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'Lax',
    secure: c.get('svc').config.publicUrl.startsWith('https:'),
    path: '/',
    expires: expiresAt,
  });
}

export const sessionRoutes = new Hono<AppEnv>()
  .post('/session/signup', async (c) => {
    const { user, session, deviceCookie } = await signup({ ctx: anonymous(c), input: await readJson(c), device: deviceOf(c) });
    setSession(c, session.token, session.expiresAt);
    setDeviceCookie(c, deviceCookie);
    return c.json({ user }, 201);
  })
  .post('/session/login', async (c) => {
    const address = clientAddress(c);
    const { user, session, deviceCookie } = await login({
      ctx: anonymous(c),
      input: await readJson(c),
      clientAddress: address,
      userAgent: c.req.header('user-agent'),
      deviceCookie: getCookie(c, DEVICE_COOKIE),
    });
    setSession(c, session.token, session.expiresAt);
    setDeviceCookie(c, deviceCookie);
    return c.json({ user });
  })
  .post('/session/passkey/options', async (c) => c.json(await passkeySignInOptions({ ctx: anonymous(c), clientAddress: clientAddress(c) })))
  .post('/session/passkey', async (c) => {
    const { user, session, deviceCookie } = await signInWithPasskey({ ctx: anonymous(c), input: await readJson(c), device: deviceOf(c) });
    setSession(c, session.token, session.expiresAt);
    setDeviceCookie(c, deviceCookie);
    return c.json({ user });
  })
  .get('/me/passkeys', requirePerson, async (c) => c.json(await listPasskeys({ ctx: asPerson(c) })))
  .post('/me/passkeys/options', requirePerson, async (c) => c.json(await passkeyRegistrationOptions({ ctx: asPerson(c), input: await readJson(c) })))
  .post('/me/passkeys', requirePerson, async (c) => c.json(await addPasskey({ ctx: asPerson(c), input: await readJson(c) }), 201))
  .delete('/me/passkeys/:id', requirePerson, async (c) => {
    await removePasskey({ ctx: asPerson(c), id: c.req.param('id') });
    return c.body(null, 204);
  })
  .post('/session/reset-request', async (c) => {
    return c.json(await requestPasswordReset({ ctx: anonymous(c), input: await readJson(c), clientAddress: clientAddress(c) }), 202);
  })
  .post('/session/reset', async (c) => {
    const { user, session, deviceCookie } = await resetPassword({ ctx: anonymous(c), input: await readJson(c), device: deviceOf(c) });
    setSession(c, session.token, session.expiresAt);
    setDeviceCookie(c, deviceCookie);
    return c.json({ user });
  })
  .post('/session/verify-email', async (c) => c.json(await verifyEmail({ ctx: anonymous(c), input: await readJson(c) })))
  .post('/me/verification', requirePerson, async (c) => c.json(await resendVerification({ ctx: asPerson(c) }), 202))
  .get('/sessions', requirePerson, async (c) => c.json(await listSessions({ ctx: asPerson(c), token: c.get('sessionToken')! })))
  .delete('/sessions/:id', requirePerson, async (c) => {
    await endSession({ ctx: asPerson(c), id: c.req.param('id') });
    return c.body(null, 204);
  })
  .post('/sessions/end-others', requirePerson, async (c) => c.json(await signOutOthers({ ctx: asPerson(c), token: c.get('sessionToken')! })))
  .post('/me/password', requirePerson, async (c) => c.json(await changePassword({ ctx: asPerson(c), input: await readJson(c), token: c.get('sessionToken')! })))
  .get('/me/export', requirePerson, async (c) => {
    c.header('Content-Disposition', 'attachment; filename="toolport-export.json"');
    c.header('Cache-Control', 'no-store');
    return c.json(await exportAccount({ ctx: asPerson(c) }));
  })
  .post('/me/delete', requirePerson, async (c) => {
    await deleteAccount({ ctx: asPerson(c), input: await readJson(c) });
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    deleteCookie(c, DEVICE_COOKIE, { path: '/' });
    return c.body(null, 204);
  })
  .post('/session/logout', requirePerson, async (c) => {
    await logout({ ctx: asPerson(c), token: c.get('sessionToken')! });
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.body(null, 204);
  })
  .get('/me', requirePerson, async (c) => c.json(await getMe({ ctx: asPerson(c) })))
  // The dashboard's first question, answered 200 signed in or not: a signed-out load logs no 401.
  .get('/session', async (c) => {
    const userId = await personIfSignedIn(c);
    return c.json(await getSessionState({ ctx: userId ? { svc: c.get('svc'), actor: { kind: 'person', userId } } : anonymous(c) }));
  })
  .post('/me/rotate-mcp-url', requirePerson, async (c) => c.json(await rotateUserKey({ ctx: asPerson(c) })));
