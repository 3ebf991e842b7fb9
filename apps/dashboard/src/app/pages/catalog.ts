import { useState } from 'preact/hooks';
import { get, type CatalogDetail, type CatalogTool } from '../api';
import { html, Loaded, Notice, PageHeader, Revealed, useLoad } from '../ui';
import { Icon, ToolBadges } from './addons';
import { InstallButton, InstallSettings } from './addon-settings';
import { InstallAccounts } from './accounts';

/** What a tool may do, in the words a person decides by; a hint the developer did not give is not shown. */
function SafetyFlags({ tool }: { tool: CatalogTool }) {
  return html`<ul class="flags">
    ${tool.destructive ? html`<li>Changes or deletes things: <strong>asks you before every call</strong>${tool.confirm ? ', describing what it will do' : ''}.</li>` : null}
    ${tool.alwaysAsk ? html`<li><strong>The add-on asks every time</strong>: every call waits for your approval, and no rule of yours can let it run without asking.</li>` : null}
    ${tool.readOnly ? html`<li>Only reads: it changes nothing.</li>` : null}
    ${tool.idempotent === true ? html`<li>Safe to repeat: calling it twice does what once does.</li>` : null}
    ${tool.openWorld === true ? html`<li>Reaches beyond its own data (the web, other services).</li>` : tool.openWorld === false ? html`<li>Stays within its own data.</li>` : null}
    ${!tool.destructive && !tool.readOnly && !tool.alwaysAsk ? html`<li>Runs without asking you once you switch it on (unless you set a rule that asks).</li>` : null}
  </ul>`;
}

/** One catalog add-on before installing: who publishes it, its release, and every tool with its safety flags. */
/**
 * An approved listing always has its publisher's name (an operator gives it); an add-on without one
 * is the person's own, or listed before names were asked for: then where it runs says who runs it.
 */
const publisherUnnamed = (a: CatalogDetail) => (a.mine ? 'You' : html`<span class="muted">No name given; it runs on the host below</span>`);

export function CatalogDetailPage({ id }: { id: string }) {
  const entry = useLoad(() => get<CatalogDetail>(`/api/catalog/${encodeURIComponent(id)}`), [id]);
  const [message, setMessage] = useState('');
  const installed = async (a: CatalogDetail) => {
    setMessage(`${a.name} is installed. Its tools start switched off: turn on the ones you want in Add-ons.`);
    await entry.reload();
  };
  return html`<${PageHeader} title=${entry.data?.name ?? 'Add-on'} lead=${html`<a href="/addons">← Add-ons</a>`} />
    ${message && html`<${Notice} kind="success">${message}<//>`}
    <${Loaded} state=${entry} what="this add-on">${() => {
      const a = entry.data!;
      const asking = a.tools.filter((t) => t.destructive).length;
      return html`<section class="card" aria-labelledby="about-h" data-catalog=${a.id}>
          <div class="row-between">
            <h2 id="about-h" class="h3"><${Icon} src=${a.icon} /> <${Revealed} text=${a.name} /></h2>
            ${a.installed
              ? html`<a class="btn" href="/addons">Installed · manage its tools</a>`
              : html`<${InstallButton} addon=${a} settings=${a.settings ?? []} onInstalled=${() => installed(a)} />`}
          </div>
          ${a.description && html`<p class="muted"><${Revealed} text=${a.description} /></p>`}
          <dl class="facts">
            <div><dt>Publisher</dt><dd>${a.publisher?.name ? html`<${Revealed} text=${a.publisher.name} />` : publisherUnnamed(a)}</dd></div>
            <div><dt>Runs on</dt><dd class="mono">${a.publisher?.webhookHost ?? '—'}</dd></div>
            <div><dt>Release</dt><dd>${a.release ? `${a.release.version}, published ${new Date(a.release.publishedAt).toLocaleDateString()}` : '—'}</dd></div>
            <div><dt>Id</dt><dd class="mono"><${Revealed} text=${a.id} identifier /></dd></div>
          </dl>
          <p class="small muted">${a.tools.length} tool${a.tools.length === 1 ? '' : 's'}${asking ? `, ${asking} of them ask${asking === 1 ? 's' : ''} you before each call` : ''}. Every tool starts switched off.</p>
        </section>
        ${a.installed ? html`<${InstallSettings} addonId=${a.id} addonName=${a.name} /><${InstallAccounts} addonId=${a.id} addonName=${a.name} />` : null}
        <section aria-labelledby="tools-h">
          <h2 id="tools-h">Tools</h2>
          <ul class="list">${a.tools.map((t) => html`<li class=${`card catalog-tool ${t.destructive ? 'tool-destructive' : ''}`} data-tool=${t.name} key=${t.name}>
            <h3 class="tool-title"><${Icon} src=${t.icon} /><${Revealed} text=${t.title || t.name} /> <code class="mono small muted"><${Revealed} text=${t.name} identifier /></code> <${ToolBadges} tool=${t} /></h3>
            ${t.summary && html`<p class="muted"><${Revealed} text=${t.summary} /></p>`}
            <${SafetyFlags} tool=${t} />
            ${t.arguments.length
              ? html`<h4 class="small-h">Arguments</h4><dl class="facts">${t.arguments.map((arg) => html`<div><dt class="mono"><${Revealed} text=${arg.name} identifier />${arg.required ? '' : html` <span class="muted">(optional)</span>`}</dt><dd>${arg.summary ? html`<${Revealed} text=${arg.summary} />` : html`<span class="muted">—</span>`}</dd></div>`)}</dl>`
              : html`<p class="small muted">No arguments.</p>`}
          </li>`)}</ul>
        </section>`;
    }}<//>`;
}
