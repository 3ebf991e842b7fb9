import { useState } from 'preact/hooks';
import { browserSupportsWebAuthn, startAuthentication, startRegistration } from '@simplewebauthn/browser';
import { del, get, post, type AddPasskeyInput, type PasskeyOptionsInput, type PasskeySignInInput, type PasskeyView } from '../api';
import { ConfirmButton, html, LiveNotice, Notice, toApiError, useLoad, useSubmit, When } from '../ui';

/** What the browser's own refusals mean to a person (the prompt closed, the device has one already). */
export function passkeyProblem(err: unknown, adding: boolean): string {
  const name = (err as { name?: string; cause?: { name?: string } })?.cause?.name ?? (err as { name?: string })?.name;
  if (name === 'NotAllowedError' || name === 'AbortError') return `The passkey prompt was closed or timed out.${adding ? ' Nothing was added.' : ''}`;
  if (name === 'InvalidStateError' && adding) return 'This device already holds a passkey for your account.';
  if (name === 'SecurityError') return 'This browser refuses passkeys for this address. Open Toolport at its usual address (https, or localhost).';
  return toApiError(err).message;
}

/** Signs in with whichever passkey the person picks in the browser's prompt; resolves once signed in. */
export async function signInWithPasskey(): Promise<void> {
  const optionsJSON = await post<Parameters<typeof startAuthentication>[0]['optionsJSON']>('/api/session/passkey/options');
  const response = await startAuthentication({ optionsJSON });
  await post('/api/session/passkey', { response } as unknown as PasskeySignInInput);
}

export const passkeysWork = () => browserSupportsWebAuthn();

/** The person's passkeys: add one on this device, see where each was used, remove one. */
export function Passkeys() {
  const list = useLoad(() => get<PasskeyView[]>('/api/me/passkeys'), []);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, fieldError, run } = useSubmit();
  const [said, setSaid] = useState('');
  const add = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      setSaid('');
      const optionsJSON = await post<Parameters<typeof startRegistration>[0]['optionsJSON']>('/api/me/passkeys/options', { password } satisfies PasskeyOptionsInput);
      const response = await startRegistration({ optionsJSON });
      const added = await post<PasskeyView>('/api/me/passkeys', { name: name.trim() || 'Passkey', response } as unknown as AddPasskeyInput);
      setName('');
      setPassword('');
      setSaid(`The passkey “${added.name}” is added. Next time, sign in with it.`);
      await list.reload();
    }, (err) => {
      const fields = toApiError(err).fieldErrors;
      return { message: passkeyProblem(err, true), fields, ...(fields.length ? { focus: 'passkey-password' } : {}) };
    });
  };
  const passwordErr = fieldError('/password');
  const remove = async (p: PasskeyView) => {
    await del(`/api/me/passkeys/${encodeURIComponent(p.id)}`);
    setSaid(`The passkey “${p.name}” is removed.`);
    await list.reload();
  };
  return html`<section class="card" aria-labelledby="passkeys-h">
    <h2 id="passkeys-h">Passkeys</h2>
    <p class="muted">Sign in with your fingerprint, face or device PIN instead of your password. The key stays on your device.</p>
    ${list.error && html`<${Notice} kind="error">${list.error.message}<//>`}
    ${error && html`<${Notice} kind="error">${error}<//>`}
    ${list.data?.length
      ? html`<ul class="sign-ins" aria-label="Your passkeys">
          ${list.data.map(
            (p) => html`<li data-passkey=${p.id}>
              <div>
                <strong>${p.name}</strong>${p.synced ? html` <span class="badge badge-calm">Synced</span>` : null}
                <p class="small muted">Added <${When} iso=${p.createdAt} />${p.lastUsedAt ? html`, last used <${When} iso=${p.lastUsedAt} />` : ', not used yet'}.</p>
              </div>
              <${ConfirmButton} label="Remove" ariaLabel=${`Remove the passkey ${p.name}`} title=${`Remove the passkey “${p.name}”?`} danger
                body=${html`<p>It no longer signs you in. Your password and your other passkeys still do.</p>`}
                confirmLabel="Remove passkey" onConfirm=${() => remove(p)} />
            </li>`,
          )}
        </ul>`
      : list.data && html`<p class="small">No passkey yet.</p>`}
    ${passkeysWork()
      ? html`<form onSubmit=${add} novalidate>
          <div class="field">
            <label for="passkey-name">Name of the new passkey</label>
            <input id="passkey-name" type="text" maxlength="60" placeholder="For example: My laptop" value=${name}
              onInput=${(ev: Event) => setName((ev.target as HTMLInputElement).value)} />
          </div>
          <div class="field">
            <label for="passkey-password">Password, to confirm it is you</label>
            <input id="passkey-password" type="password" autocomplete="current-password" required value=${password}
              aria-invalid=${passwordErr ? 'true' : undefined} aria-describedby=${passwordErr ? 'passkey-password-err' : 'passkey-password-hint'}
              onInput=${(ev: Event) => setPassword((ev.target as HTMLInputElement).value)} />
            ${passwordErr ? html`<p class="error-text" id="passkey-password-err">${passwordErr}</p>` : html`<p class="hint" id="passkey-password-hint">A passkey signs in without it, so Toolport asks for it once more.</p>`}
          </div>
          <button class="btn" type="submit" aria-disabled=${busy ? 'true' : undefined}>Add a passkey</button>
        </form>`
      : html`<p class="small">This browser cannot make passkeys.</p>`}
    <${LiveNotice}>${said}<//>
  </section>`;
}
