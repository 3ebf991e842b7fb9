import { useState } from 'preact/hooks';
import { del, get, type Connection } from '../api';
import { ConfirmButton, html, Loaded, Notice, PageHeader, Revealed, useLoad, When } from '../ui';

/** The AI apps the person let in (OAuth consents), each revocable at once. */
export function AppsPage() {
  const list = useLoad(() => get<Connection[]>('/api/connections'), []);
  const [message, setMessage] = useState('');
  const revoke = async (c: Connection) => {
    await del(`/api/connections/${encodeURIComponent(c.id)}`);
    setMessage(`${c.appName} can no longer reach your tools.`);
    list.setData((l) => (l ?? []).filter((x) => x.id !== c.id));
  };
  return html`<${PageHeader} title="Apps let in" lead="AI apps you allowed to use your MCP URL. Revoking one ends its access at once." />
    ${message && html`<${Notice} kind="success">${message}<//>`}
    <${Loaded} state=${list} what="connected apps">${() =>
      list.data!.length === 0
        ? html`<div class="empty">No app is let in yet. Paste your MCP URL into an app from <a href="/">Home</a>; it will ask for your consent.</div>`
        : html`<ul class="list">${list.data!.map(
            (c) => html`<li class="card list-item" data-connection=${c.id}>
              <div>
                <h2 class="h3"><${Revealed} text=${c.appName} identifier /> ${c.unverified !== false ? html`<span class="badge badge-warn" title="Toolport has not verified who made this app; the name is what the app says about itself">Unverified</span>` : null}</h2>
                <p class="small muted">
                  ${c.redirectHost ? html`Returns to <code class="mono"><${Revealed} text=${c.redirectHost} identifier /></code> · ` : null}
                  Let in <${When} iso=${c.createdAt} /> · Last used <${When} iso=${c.lastUsedAt} />
                </p>
              </div>
              <${ConfirmButton} label="Revoke" ariaLabel=${`Revoke ${c.appName}`} danger title=${`Revoke ${c.appName}?`}
                body=${html`<p>The app's access ends now: its tokens stop working and it must ask for your consent again to come back.</p>`}
                confirmLabel="Revoke access" onConfirm=${() => revoke(c)} />
            </li>`,
          )}</ul>`}<//>`;
}
