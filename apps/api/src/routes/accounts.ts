import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { html } from 'hono/html';
import { finishAccountLink, HTTP_STATUS, isToolportError, readSession } from '@toolport/core';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { SESSION_COOKIE } from '../http/auth';
import type { AppEnv } from '../http/env';
import { renderPage, setPageHeaders } from '../pages/layout';

/**
 * One redirect URI per add-on and provider, so a code cannot come back into another add-on's flow.
 * The SameSite=Lax cookie is sent on this top-level redirect.
 */
export const accountRoutes = new Hono<AppEnv>().get('/accounts/callback/:addon/:provider', async (c) => {
  const svc = c.get('svc');
  const token = getCookie(c, SESSION_COOKIE);
  const session = token ? await readSession(svc, token) : undefined;
  try {
    const { addonId, provider } = await finishAccountLink({
      svc,
      userId: session?.userId ?? null,
      at: { addonId: c.req.param('addon'), provider: c.req.param('provider') },
      query: c.req.query(),
    });
    setPageHeaders(c);
    return c.redirect(`/addons/${encodeURIComponent(addonId)}?connected=${encodeURIComponent(provider)}`, 302);
  } catch (err) {
    if (!isToolportError(err) || !err.expose || err.code === 'INTERNAL') throw err;
    const back = err.details.back as { addonId: string; provider: string } | undefined;
    const link = back ? `/addons/${encodeURIComponent(back.addonId)}?connect=${encodeURIComponent(back.provider)}` : '/';
    return renderPage(
      c,
      HTTP_STATUS[err.code] as ContentfulStatusCode,
      'Account not connected',
      html`<h1>The account was not connected</h1>
<p class="error">${err.message}</p>
<p><a href="${link}">${back ? 'Back to the add-on' : 'Go to Toolport'}</a></p>`,
    );
  }
});
