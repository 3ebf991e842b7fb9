import { useState } from 'preact/hooks';
import { post, type Credentials, type Me } from '../api';
import { navigate, peekReturn } from '../router';
import { me } from '../store';
import { get } from '../api';
import { html, Notice, toApiError, useSubmit } from '../ui';
import { passkeyProblem, passkeysWork, signInWithPasskey } from './passkeys';

/**
 * Where to go once signed in when an app's sign-in page sent the person here (to use a passkey):
 * back to that authorization request, and nowhere else.
 */
function oauthReturn(): string | null {
  const next = new URLSearchParams(location.search).get('next');
  return next && next.startsWith('/oauth/authorize?') ? next : null;
}

/** Sign in and sign up share one form; the API answers both with `{user}` and a session cookie. */
export function AuthPage({ mode }: { mode: 'signin' | 'signup' }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, fieldError, run } = useSubmit();
  const signup = mode === 'signup';
  // Sent here from an approval's own page (a notification, the app's link): say why, and that it is urgent.
  const waitingApproval = /^\/approvals\/apr_/.test(peekReturn() ?? '');

  const submit = (e: Event) => {
    e.preventDefault();
    void run(
      async () => {
        await post(signup ? '/api/session/signup' : '/api/session/login', { email, password } satisfies Credentials);
        await signedIn();
      },
      (err) => {
        const { message, fieldErrors } = toApiError(err);
        // The first field to fix: the password, when the pair was wrong.
        return { message, fields: fieldErrors, focus: fieldErrors[0]?.path === '/email' ? 'email' : 'password' };
      },
    );
  };
  const signedIn = async () => {
    const back = oauthReturn();
    if (back) return location.assign(back);
    me.set(await get<Me>('/api/me'));
    navigate('/', true);
  };
  const withPasskey = () =>
    run(
      async () => {
        await signInWithPasskey();
        await signedIn();
      },
      (err) => ({ message: passkeyProblem(err, false) }),
    );
  const emailErr = fieldError('/email');
  const passErr = fieldError('/password');

  return html`<main class="auth" id="main">
    <div class="auth-card">
      <div class="brand brand-lg"><img src="/icon.svg" alt="" width="32" height="32" /><span>Toolport</span></div>
      <h1 tabindex="-1" id="page-title">${signup ? 'Create your account' : 'Sign in'}</h1>
      <p class="muted">${signup ? 'One MCP URL for all your AI apps. You decide which tools they may use.' : 'Welcome back.'}</p>
      ${!signup && waitingApproval
        ? html`<div class="notice notice-info" data-waiting-approval><p><strong>An AI app is waiting for your answer.</strong> Sign in to see what it wants to run and allow or deny it. It waits only a short time: no answer in time is no.</p></div>`
        : null}
      ${error && html`<${Notice} kind="error">${error}<//>`}
      <form onSubmit=${submit} novalidate>
        <div class="field">
          <label for="email">Email</label>
          <input id="email" name="email" type="email" autocomplete="email" required value=${email}
            aria-invalid=${emailErr ? 'true' : undefined} aria-describedby=${emailErr ? 'email-err' : undefined}
            onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)} />
          ${emailErr && html`<p class="error-text" id="email-err">${emailErr}</p>`}
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete=${signup ? 'new-password' : 'current-password'} required
            minlength=${signup ? 10 : undefined} value=${password}
            aria-invalid=${passErr ? 'true' : undefined} aria-describedby=${passErr ? 'password-err' : signup ? 'password-hint' : undefined}
            onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
          ${passErr ? html`<p class="error-text" id="password-err">${passErr}</p>` : signup && html`<p class="hint" id="password-hint">At least 10 characters. A few words you will remember work well.</p>`}
        </div>
        <button class="btn btn-primary btn-block" type="submit" aria-disabled=${busy ? 'true' : undefined}>${signup ? 'Create account' : 'Sign in'}</button>
      </form>
      ${!signup && passkeysWork() && html`<div class="auth-or"><span>or</span></div>
        <button class="btn btn-block" type="button" onClick=${withPasskey} aria-disabled=${busy ? 'true' : undefined}>Sign in with a passkey</button>`}
      ${!signup && html`<p class="auth-switch"><a href="/forgot-password">Forgot your password?</a></p>`}
      <p class="auth-switch">
        ${signup ? html`Already have an account? <a href="/signin">Sign in</a>` : html`New to Toolport? <a href="/signup">Create an account</a>`}
      </p>
    </div>
  </main>`;
}
