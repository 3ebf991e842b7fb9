import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { get, post, type Me, type ResetInput, type ResetRequest, type VerifyEmailInput } from '../api';
import { navigate } from '../router';
import { me } from '../store';
import { html, Notice, toApiError, useSubmit } from '../ui';

/**
 * The one-time token of a mailed link: in the fragment, which no server log or Referer carries. It
 * leaves the address bar once read; a link opened again on this page is only a new fragment.
 */
function useLinkToken(): { token: string } {
  const read = () => new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
  // A new object each time the link is opened, the same token again included.
  const [opened, setOpened] = useState(() => ({ token: read() }));
  // A layout effect: the token is gone from the address bar before the page is first shown.
  useLayoutEffect(() => {
    const onHash = () => {
      const token = read();
      if (token) setOpened({ token });
      history.replaceState(null, '', location.pathname);
    };
    history.replaceState(null, '', location.pathname);
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  return opened;
}

function Card({ title, children }: { title: string; children: unknown }) {
  return html`<main class="auth" id="main">
    <div class="auth-card">
      <div class="brand brand-lg"><img src="/icon.svg" alt="" width="32" height="32" /><span>Toolport</span></div>
      <h1 tabindex="-1" id="page-title">${title}</h1>
      ${children}
    </div>
  </main>`;
}

/** Asks for a reset link; the answer is the same whether or not the email has an account. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState('');
  const { busy, error, run } = useSubmit();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const r = await post<{ message: string }>('/api/session/reset-request', { email } satisfies ResetRequest);
      setSent(r.message);
    });
  };
  return html`<${Card} title="Reset your password">
    ${sent
      ? html`<${Notice} kind="success">${sent}<//>
          <p class="muted">No mail after a few minutes? Look in your spam folder, or check the address and ask again.</p>
          <p class="auth-switch"><a href="/signin">Back to sign in</a></p>`
      : html`<p class="muted">Give the email of your account and we will send it a link to choose a new password.</p>
          ${error && html`<${Notice} kind="error">${error}<//>`}
          <form onSubmit=${submit} novalidate>
            <div class="field">
              <label for="email">Email</label>
              <input id="email" name="email" type="email" autocomplete="email" required value=${email}
                onInput=${(e: Event) => setEmail((e.target as HTMLInputElement).value)} />
            </div>
            <button class="btn btn-primary btn-block" type="submit" aria-disabled=${busy ? 'true' : undefined}>Send reset link</button>
          </form>
          <p class="auth-switch"><a href="/signin">Back to sign in</a></p>`}
  <//>`;
}

/** Opened from the mail: a new password, then the person is signed in here and signed out everywhere else. */
export function ResetPasswordPage() {
  const opened = useLinkToken();
  const { token } = opened;
  const [password, setPassword] = useState('');
  const { busy, error, setError, fieldError, run } = useSubmit();
  useEffect(() => setError(''), [opened]);
  const submit = (e: Event) => {
    e.preventDefault();
    void run(
      async () => {
        await post('/api/session/reset', { token, password } satisfies ResetInput);
        me.set(await get<Me>('/api/me'));
        navigate('/?password=reset', true);
      },
      (err) => {
        const { message, fieldErrors } = toApiError(err);
        return { message, fields: fieldErrors, focus: 'password' };
      },
    );
  };
  const passErr = fieldError('/password');
  if (!token) {
    return html`<${Card} title="Choose a new password">
      <${Notice} kind="error">This page needs the link from the reset mail. Open the link in the mail, or ask for a new one.<//>
      <p class="auth-switch"><a href="/forgot-password">Ask for a reset link</a></p>
    <//>`;
  }
  return html`<${Card} title="Choose a new password">
    <p class="muted">Every other place where you are signed in is signed out.</p>
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <form onSubmit=${submit} novalidate>
      <div class="field">
        <label for="password">New password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="10" value=${password}
          aria-invalid=${passErr ? 'true' : undefined} aria-describedby=${passErr ? 'password-err' : 'password-hint'}
          onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
        ${passErr ? html`<p class="error-text" id="password-err">${passErr}</p>` : html`<p class="hint" id="password-hint">At least 10 characters. A few words you will remember work well.</p>`}
      </div>
      <button class="btn btn-primary btn-block" type="submit" aria-disabled=${busy ? 'true' : undefined}>Set password and sign in</button>
    </form>
    <p class="auth-switch"><a href="/forgot-password">Ask for a new link</a></p>
  <//>`;
}

/** Opened from the mail, signed in or not, on any device: the link is the proof. */
export function VerifyEmailPage({ person }: { person: Me | null }) {
  const opened = useLinkToken();
  const [state, setState] = useState<{ done?: string; error?: string }>({});
  useEffect(() => {
    setState({});
    post<{ email: string }>('/api/session/verify-email', { token: opened.token } satisfies VerifyEmailInput).then(
      (r) => {
        setState({ done: r.email });
        if (person && person.email === r.email) me.set({ ...person, emailVerified: true });
      },
      (err: unknown) => setState({ error: toApiError(err).message }),
    );
  }, [opened]);
  return html`<${Card} title="Confirm your email">
    ${state.done
      ? html`<${Notice} kind="success">${state.done} is confirmed. Thank you.<//>`
      : state.error
        ? html`<${Notice} kind="error">${state.error}<//>`
        : html`<p class="muted" aria-busy="true">Confirming…</p>`}
    <p class="auth-switch"><a href="/">${person ? 'Go to your Home page' : 'Sign in to Toolport'}</a></p>
  <//>`;
}
