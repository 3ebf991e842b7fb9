import { useState } from 'preact/hooks';
import { get, patch, post, type AccountSettings, type AccountSettingsInput, type Connection, type Install, type Me, type PublicUser } from '../api';
import { me } from '../store';
import { useQueryParam } from '../router';
import { SignIns } from './sign-ins';
import { ConfirmButton, CopyButton, html, LiveNotice, Notice, PageHeader, Switch, toApiError, useLoad } from '../ui';

/** Until the person opens the link mailed at sign-up; a new one on request (three an hour). */
function ConfirmEmail({ person }: { person: Me }) {
  const [said, setSaid] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const resend = async () => {
    if (busy) return;
    setBusy(true);
    setError('');
    try {
      setSaid((await post<{ message: string }>('/api/me/verification')).message);
    } catch (err) {
      setError(toApiError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="notice notice-info" aria-labelledby="confirm-h" data-confirm-email>
    <h2 id="confirm-h" class="h-small">Confirm your email</h2>
    <p>We sent a link to <b>${person.email}</b>. Open it to confirm the address is yours: it is how you get back in if you forget your password.</p>
    <button type="button" class="btn btn-small" onClick=${resend} aria-disabled=${busy ? 'true' : undefined}>Send the link again</button>
    <${LiveNotice} kind="success">${said}<//>
    ${error && html`<${Notice} kind="error">${error}<//>`}
  </section>`;
}

/** The person's home: the MCP URL, the AI apps switch, how to connect each app, first-run steps, the account id. */
export function HomePage({ person }: { person: Me }) {
  const [error, setError] = useState('');
  const [rotated, setRotated] = useState(false);
  const passwordReset = useQueryParam('password') === 'reset';
  const installs = useLoad(() => get<Install[]>('/api/installs'), []);
  const anyToolOn = installs.data?.some((i) => i.tools.some((t) => t.enabled)) ?? false;
  const anyInstalled = (installs.data?.length ?? 0) > 0;
  const connections = useLoad(() => get<Connection[]>('/api/connections'), []);
  const anyApp = Array.isArray(connections.data) && connections.data.length > 0;

  const setAiApps = async (on: boolean) => {
    setError('');
    try {
      const s = await patch<AccountSettings>('/api/settings', { aiApps: on } satisfies AccountSettingsInput);
      me.set({ ...person, aiApps: s.aiApps });
    } catch (err) {
      setError(toApiError(err).message);
    }
  };
  const rotate = async () => {
    const r = await post<PublicUser>('/api/me/rotate-mcp-url');
    me.set({ ...person, mcpUrl: r.mcpUrl });
    setRotated(true);
  };
  const steps = [
    { done: person.aiApps, text: 'Turn AI apps on' },
    { done: anyInstalled, text: html`Install an add-on from the <a href="/addons">catalog</a>` },
    { done: anyToolOn, text: 'Switch on the tools you want apps to use' },
    { done: anyApp, text: html`Paste your MCP URL into an AI app and <a href="/apps">let it in</a>` },
  ];

  return html`<${PageHeader} title="Home" lead="Your AI apps reach your tools through one private address." />
    ${passwordReset && html`<${Notice} kind="success">Your new password is set. Every other place where you were signed in is signed out.<//>`}
    ${!person.emailVerified && html`<${ConfirmEmail} person=${person} />`}
    <section class="card" aria-labelledby="mcp-h">
      <h2 id="mcp-h">Your MCP URL</h2>
      <p class="muted">Paste this into Claude, ChatGPT, Cursor or any MCP client. Treat it like a username: apps still need your consent to use it.</p>
      <div class="copy-row">
        <code id="mcp-url" class="mono url" data-testid="mcp-url">${person.mcpUrl}</code>
        <${CopyButton} text=${person.mcpUrl} targetId="mcp-url" label="Copy URL" primary />
      </div>
      ${rotated && html`<${Notice} kind="success">You have a new MCP URL. Apps using the old one must be set up again.<//>`}
      <div class="row-between">
        <p class="hint">If the URL leaked, get a new one. Apps using the old URL stop working.</p>
        <${ConfirmButton} label="Get a new URL" title="Replace your MCP URL?" danger class="btn btn-quiet"
          body=${html`<p>Every app connected through the current URL will stop working until you paste the new URL into it and let it in again.</p>`}
          confirmLabel="Replace URL" onConfirm=${rotate} />
      </div>
    </section>

    <section class="card" aria-labelledby="ai-h">
      <div class="row-between">
        <div>
          <h2 id="ai-h">AI apps</h2>
          <p class="muted" id="ai-apps-state">${person.aiApps ? 'On: apps you let in can list and call the tools you switched on.' : 'Off: every app is refused and sees no tools.'}</p>
        </div>
        <${Switch} id="ai-apps-switch" checked=${person.aiApps} label="AI apps" describedBy="ai-apps-state" onChange=${setAiApps} />
      </div>
      ${error && html`<${Notice} kind="error">${error}<//>`}
    </section>

    <section class="card" aria-labelledby="start-h">
      <h2 id="start-h">Getting started</h2>
      <ol class="checklist">
        ${steps.map((s) => html`<li class=${s.done ? 'done' : ''}><span class="check" aria-hidden="true">${s.done ? '✓' : ''}</span><span>${s.text}</span>${s.done ? html`<span class="visually-hidden"> (done)</span>` : null}</li>`)}
      </ol>
    </section>

    <section class="card" aria-labelledby="howto-h">
      <h2 id="howto-h">Connect an app</h2>
      <div class="howtos">
        <details>
          <summary>Claude</summary>
          <ol>
            <li>Open <b>Settings → Connectors</b> and choose <b>Add custom connector</b>.</li>
            <li>Name it “Toolport” and paste your MCP URL.</li>
            <li>Choose <b>Connect</b>, sign in to Toolport and allow Claude in.</li>
          </ol>
        </details>
        <details>
          <summary>ChatGPT</summary>
          <ol>
            <li>Open <b>Settings → Apps & Connectors → Advanced</b> and turn on developer mode.</li>
            <li>Choose <b>Create</b>, paste your MCP URL and pick OAuth authentication.</li>
            <li>Sign in to Toolport when asked and allow ChatGPT in.</li>
          </ol>
        </details>
        <details>
          <summary>Cursor</summary>
          <ol>
            <li>Open <b>Cursor Settings → MCP → Add new MCP server</b>, or edit <code>~/.cursor/mcp.json</code>:</li>
          </ol>
          <pre class="mono">${JSON.stringify({ mcpServers: { toolport: { url: person.mcpUrl } } }, null, 2)}</pre>
          <p>Cursor opens a browser window to sign in; allow it there.</p>
        </details>
        <details>
          <summary>MCP Inspector</summary>
          <ol>
            <li>Run <code>npx @modelcontextprotocol/inspector</code>.</li>
            <li>Pick transport <b>Streamable HTTP</b>, paste your MCP URL and choose <b>Connect</b>.</li>
            <li>Complete the OAuth sign-in, then list and call your tools.</li>
          </ol>
        </details>
      </div>
    </section>

    <section class="card" aria-labelledby="account-h">
      <h2 id="account-h">Your account</h2>
      <dl class="facts">
        <div><dt>Email</dt><dd>${person.email} <span class="muted">(${person.emailVerified ? 'confirmed' : 'not confirmed yet'})</span></dd></div>
        <div><dt>Account id</dt><dd><code class="mono" data-testid="account-id">${person.id}</code></dd></div>
      </dl>
      <p class="hint">An operator names your account by this id in TOOLPORT_OPERATORS.</p>
    </section>
    <${SignIns} />`;
}
