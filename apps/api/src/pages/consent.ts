import type { Context } from 'hono';
import type { ConsentView } from '@toolport/core';
import type { AppEnv } from '../http/env';
import { html } from 'hono/html';
import { identifier } from './identifier';
import { renderPage } from './layout';

/** One checkbox per switched-on tool, grouped by add-on; all ticked unless the person's own ticks are shown again. */
function toolChoices(view: ConsentView) {
  if (!view.addons.length) {
    return html`<p class="warn">You have no tools switched on yet. With the box below ticked, this app will get the tools you switch on later in the Toolport dashboard; untick it to choose them for this app on its Apps page instead.</p>`;
  }
  const ticked = (name: string) => view.ticked === 'all' || view.ticked.has(name);
  return html`<p>If you allow it, this app will be able to see and call the tools you tick below, on your behalf. Destructive tools still ask you before they run.</p>
${view.addons.map(
  (addon) => html`<fieldset class="tools"><legend>${identifier(addon.name)}</legend>
${addon.tools.map(
  (t) => html`<label class="check"><input type="checkbox" name="tool" value="${t.name}"${ticked(t.name) ? html` checked` : ''}><span>${identifier(t.title)} <code class="muted">${identifier(t.name.slice(addon.id.length + 2))}</code>${
    t.destructive ? html` <span class="badge">asks you first</span>` : ''
  }</span></label>`,
)}
</fieldset>`,
)}
<p class="muted">Untick every tool and the app is let in with none: it can use nothing until you choose tools for it on the Apps page.</p>`;
}

/** The consent page: who asks, where it will send you back, which tools it may use; Allow or Deny, no JavaScript. */
export function consentPage(c: Context<AppEnv>, view: ConsentView, status: 200 | 400 = 200) {
  const hidden = Object.entries(view.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return renderPage(
    c,
    status,
    'Connect an app',
    html`<h1>Let <strong>${identifier(view.appName)}</strong> use your Toolport tools?</h1>
<p><span class="badge">unverified</span> <span class="muted">This is the name the app gave itself; Toolport has not checked it.${
      view.clientHost ? html` It is published by <strong>${identifier(view.clientHost)}</strong>.` : ''
    }</span></p>
<p>After you answer, you will be sent to <strong>${identifier(view.redirectHost)}</strong>.</p>
${view.error ? html`<p class="error" role="alert">${view.error}</p>` : ''}
${view.aiApps ? '' : html`<p class="warn">AI apps are turned off for your account, so this app will not be able to do anything until you turn them on in the Toolport dashboard.</p>`}
<form method="post" action="/oauth/authorize/decision">
${hidden}
${toolChoices(view)}
<label class="check"><input type="checkbox" name="new_tools" value="yes"${view.newTools ? html` checked` : ''}><span>Also let it use tools I switch on later</span></label>
<label class="check"><input type="checkbox" name="ask_every_tool" value="yes"${view.askEveryTool ? html` checked` : ''}><span>Ask me before every tool call it makes</span></label>
<p class="muted">Unticked, a tool you switch on later is not given to this app until you add it on the Apps page. You can change these choices there, or disconnect the app, at any time.</p>
<p class="muted">Signed in as ${identifier(view.email)}.</p>
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="allow">Allow</button>
</div>
</form>`,
  );
}
