import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../http/env';
import { html } from 'hono/html';
import { renderPage } from './layout';

interface LoginView {
  /** The authorization request's query string, to return to after signing in. */
  query: string;
  csrfToken: string;
  email?: string;
  error?: string;
}

/**
 * A plain form: works without JavaScript, posts to /oauth/login, then back to the same request. A
 * passkey needs script, so its link signs in on the dashboard, which returns to the same request.
 */
export function loginPage(c: Context<AppEnv>, view: LoginView, status: ContentfulStatusCode = 200) {
  return renderPage(
    c,
    status,
    'Sign in',
    html`<h1>Sign in to Toolport</h1>
<p class="muted">An app wants to connect to your Toolport account. Sign in to continue.</p>
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ''}
<form method="post" action="/oauth/login">
<input type="hidden" name="csrf_token" value="${view.csrfToken}">
<input type="hidden" name="return_query" value="${view.query}">
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${view.email ?? ''}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<p><a class="button" href="/signin?next=${encodeURIComponent(`/oauth/authorize?${view.query}`)}">Sign in with a passkey</a></p>
<p class="muted"><a href="/forgot-password" target="_blank" rel="noopener">Forgot your password?</a> A reset link is mailed to you; once you have set a new password, sign in here.</p>`,
  );
}
