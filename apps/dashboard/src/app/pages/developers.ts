import { rememberReturn } from '../router';
import { html } from '../ui';

/**
 * `/developers` for someone not signed in: what building an add-on takes, where the guides are, and
 * an account to start with (which lands on the developer page). Signed in, `/developers` is the
 * developer page itself (main.ts).
 */
export function DevelopersPage() {
  const toDeveloperPage = () => rememberReturn('/developer');
  return html`<main class="auth" id="main">
    <div class="auth-card auth-card-wide" data-developers>
      <div class="brand brand-lg"><img src="/icon.svg" alt="" width="32" height="32" /><span>Toolport</span></div>
      <h1 tabindex="-1" id="page-title">Build add-ons for Toolport</h1>
      <p class="muted">An add-on gives people's AI apps new tools. You describe each tool in a manifest and answer its calls at your webhook; Toolport takes care of sign-in, consent, and asking the person before anything destructive runs.</p>
      <ol class="steps">
        <li>Create an account, then an API key on its <b>Developers</b> page.</li>
        <li>Write the add-on with the kit: <code class="mono">npm install @toolport/addon-kit @toolport/cli</code> (or the Python kit, <code class="mono">toolport-addon-kit</code>).</li>
        <li>Register it: <code class="mono">npx toolport login</code>, then <code class="mono">npx toolport addon push addon.json</code>. <code class="mono">npx toolport dev addon.json</code> pushes each change and shows every call live.</li>
      </ol>
      <p class="small muted">The guides are in Toolport's source: <code class="mono">docs/quickstart.md</code> (your first add-on in five minutes), <code class="mono">docs/addons.md</code> (manifests, the webhook protocol, the kit, the CLI) and <code class="mono">docs/addons-python.md</code>.</p>
      <div class="auth-actions">
        <a class="btn btn-primary" href="/signup" onClick=${toDeveloperPage}>Create an account</a>
        <a class="btn" href="/signin" onClick=${toDeveloperPage}>Sign in</a>
      </div>
    </div>
  </main>`;
}
