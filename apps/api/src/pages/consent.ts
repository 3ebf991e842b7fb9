import type { Context } from 'hono';
import type { ConsentView } from '@toolport/core';
import type { AppEnv } from '../http/env';
import { html } from 'hono/html';
import { renderPage } from './layout';

/** The consent page: who asks, where it will send you back, what it may do; Allow or Deny, no JavaScript. */
export function consentPage(c: Context<AppEnv>, view: ConsentView) {
  const hidden = Object.entries(view.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return renderPage(
    c,
    200,
    'Connect an app',
    html`<h1>Let <strong>${view.appName}</strong> use your Toolport tools?</h1>
<p><span class="badge">unverified</span> <span class="muted">This is the name the app gave itself; Toolport has not checked it.${
      view.clientHost ? html` It is published by <strong>${view.clientHost}</strong>.` : ''
    }</span></p>
<p>After you answer, you will be sent to <strong>${view.redirectHost}</strong>.</p>
<p>If you allow it, this app will be able to:</p>
<ul>
<li>see the list of tools you have switched on in Toolport;</li>
<li>call those tools on your behalf. Destructive tools still ask you before they run.</li>
</ul>
${view.aiApps ? '' : html`<p class="warn">AI apps are turned off for your account, so this app will not be able to do anything until you turn them on in the Toolport dashboard.</p>`}
<p class="muted">Signed in as ${view.email}. You can disconnect this app at any time in the dashboard.</p>
<form method="post" action="/oauth/authorize/decision">
${hidden}
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="allow">Allow</button>
</div>
</form>`,
  );
}
