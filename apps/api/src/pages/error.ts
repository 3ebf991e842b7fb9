import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../http/env';
import { html } from 'hono/html';
import { renderPage } from './layout';

/** Shown instead of redirecting when the app or its redirect URI cannot be trusted. */
export function errorPage(c: Context<AppEnv>, status: ContentfulStatusCode, message: string) {
  return renderPage(
    c,
    status,
    'Cannot continue',
    html`<h1>Toolport cannot continue</h1>
<p class="error">${message}</p>
<p class="muted">You can close this window.</p>`,
  );
}
