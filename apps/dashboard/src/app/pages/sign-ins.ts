import { useState } from 'preact/hooks';
import { del, get, post, type DeleteAccountInput, type PasswordChange, type SessionView } from '../api';
import { navigate } from '../router';
import { me } from '../store';
import { Passkeys } from './passkeys';
import { ConfirmButton, html, LiveNotice, Notice, toApiError, useLoad, useSubmit, When } from '../ui';

/** Where the person is signed in, each to sign out; and a new password, which signs the others out. */
export function SignIns() {
  const list = useLoad(() => get<SessionView[]>('/api/sessions'), []);
  const [said, setSaid] = useState('');
  const [error, setError] = useState('');
  const others = list.data?.filter((s) => !s.current).length ?? 0;
  const endOne = async (s: SessionView) => {
    await del(`/api/sessions/${encodeURIComponent(s.id)}`);
    setSaid(`${s.browser} is signed out.`);
    await list.reload();
  };
  const endOthers = async () => {
    const r = await post<{ endedSessions: number }>('/api/sessions/end-others');
    setSaid(r.endedSessions === 1 ? 'One other session is signed out.' : `${r.endedSessions} other sessions are signed out.`);
    await list.reload();
  };
  return html`<section class="card" aria-labelledby="signins-h">
      <h2 id="signins-h">Where you are signed in</h2>
      <p class="muted">Sign out anywhere you do not recognise, then change your password.</p>
      ${list.error && html`<${Notice} kind="error">${list.error.message}<//>`}
      ${error && html`<${Notice} kind="error">${error}<//>`}
      <ul class="sign-ins" aria-label="Sessions">
        ${list.data?.map(
          (s) => html`<li data-session=${s.current ? 'current' : 'other'}>
            <div>
              <strong>${s.browser}</strong>${s.current ? html` <span class="badge badge-calm">This browser</span>` : null}
              <p class="small muted">From ${s.network}. Signed in <${When} iso=${s.signedInAt} />, last used <${When} iso=${s.lastSeenAt} />.</p>
            </div>
            ${s.current
              ? null
              : html`<button type="button" class="btn btn-small" aria-label=${`Sign out ${s.browser}, from ${s.network}`}
                  onClick=${() => endOne(s).catch((err: unknown) => setError(toApiError(err).message))}>Sign out</button>`}
          </li>`,
        )}
      </ul>
      ${others > 0 &&
      html`<${ConfirmButton} label="Sign out everywhere else" title="Sign out everywhere else?" danger
        body=${html`<p>Every other browser and device signed in to your account is signed out. Apps you let in keep working.</p>`}
        confirmLabel="Sign out the others" onConfirm=${endOthers} />`}
      <${LiveNotice}>${said}<//>
    </section>
    <${Passkeys} />
    <${ChangePassword} onChanged=${() => list.reload()} />
    <${YourData} />`;
}

/** A copy of what Toolport keeps of the person, and leaving for good. */
function YourData() {
  const [password, setPassword] = useState('');
  const remove = async () => {
    await post('/api/me/delete', { password } satisfies DeleteAccountInput);
    me.set(null);
    navigate('/signin', true);
  };
  return html`<section class="card" aria-labelledby="data-h">
    <h2 id="data-h">Your data</h2>
    <p class="muted">A copy of your account, the add-ons you installed and their tools, your rules, the apps you let in and your call log, as JSON. Secrets are never in it.</p>
    <p><a class="btn" href="/api/me/export" download="toolport-export.json">Download your data</a></p>
    <${ConfirmButton} label="Delete your account" title="Delete your account?" danger
      body=${html`<p>Your account, the apps you let in, your installs, rules, connected accounts and call log are deleted now, and cannot come back. Apps using your MCP URL stop at once.</p>
        <div class="field">
          <label for="delete-password">Your password</label>
          <input id="delete-password" type="password" autocomplete="current-password" value=${password}
            onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
        </div>`}
      confirmLabel="Delete my account" onConfirm=${remove} />
  </section>`;
}

function ChangePassword({ onChanged }: { onChanged: () => void }) {
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, fieldError, run } = useSubmit();
  const [said, setSaid] = useState('');
  const submit = (e: Event) => {
    e.preventDefault();
    void run(
      async () => {
        setSaid('');
        const r = await post<{ endedSessions: number }>('/api/me/password', { current, password } satisfies PasswordChange);
        setCurrent('');
        setPassword('');
        setSaid(`Your password is changed.${r.endedSessions ? ` ${r.endedSessions === 1 ? 'One other session was' : `${r.endedSessions} other sessions were`} signed out.` : ''}`);
        onChanged();
      },
      (err) => {
        const { message, fieldErrors } = toApiError(err);
        return { message, fields: fieldErrors, focus: fieldErrors[0]?.path === '/password' ? 'new-password' : 'current-password' };
      },
    );
  };
  const currentErr = fieldError('/current');
  const passErr = fieldError('/password');
  return html`<section class="card" aria-labelledby="password-h">
    <h2 id="password-h">Change your password</h2>
    <p class="muted">Every other place where you are signed in is signed out.</p>
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <form onSubmit=${submit} novalidate>
      <div class="field">
        <label for="current-password">Current password</label>
        <input id="current-password" type="password" autocomplete="current-password" required value=${current}
          aria-invalid=${currentErr ? 'true' : undefined} aria-describedby=${currentErr ? 'current-err' : undefined}
          onInput=${(e: Event) => setCurrent((e.target as HTMLInputElement).value)} />
        ${currentErr && html`<p class="error-text" id="current-err">${currentErr}</p>`}
      </div>
      <div class="field">
        <label for="new-password">New password</label>
        <input id="new-password" type="password" autocomplete="new-password" required minlength="10" value=${password}
          aria-invalid=${passErr ? 'true' : undefined} aria-describedby=${passErr ? 'new-password-err' : 'new-password-hint'}
          onInput=${(e: Event) => setPassword((e.target as HTMLInputElement).value)} />
        ${passErr ? html`<p class="error-text" id="new-password-err">${passErr}</p>` : html`<p class="hint" id="new-password-hint">At least 10 characters.</p>`}
      </div>
      <button class="btn btn-primary" type="submit" aria-disabled=${busy ? 'true' : undefined}>Change password</button>
    </form>
    <${LiveNotice}>${said}<//>
  </section>`;
}
