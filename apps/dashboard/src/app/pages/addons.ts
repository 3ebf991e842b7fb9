import { useState } from 'preact/hooks';
import { del, get, patch, post, query, type AcceptUpdateInput, type CatalogDetail, type CatalogEntry, type Connection, type Install, type Rule, type Tool, type ToolSwitchesInput } from '../api';
import { ConfirmButton, html, Loaded, Notice, PageHeader, Revealed, Switch, toApiError, useDebounced, useLoad } from '../ui';
import { me } from '../store';
import { UpdateReview } from './update-review';
import { ruleText, ToolRules } from './rules';
import { InstallButton, SettingsReminder } from './addon-settings';

export function ToolBadges({ tool }: { tool: { destructive?: boolean; readOnly?: boolean; alwaysAsk?: boolean } }) {
  return html`${tool.destructive ? html`<span class="badge badge-danger" title="Changes or deletes things; you approve each call">⚠ Destructive · asks you first</span>` : null}
    ${tool.alwaysAsk ? html`<span class="badge badge-warn" title="The add-on requires your approval of every call; no rule can let it run without asking">The add-on asks every time</span>` : null}
    ${tool.readOnly ? html`<span class="badge badge-calm">Read-only</span>` : null}`;
}

/**
 * An add-on's or a tool's icon beside its name: decorative (the name says it all). Only Toolport's
 * own `/icons/` path is used: the image was checked when the add-on was pushed, and the CSP allows
 * no other origin anyway.
 */
export function Icon({ src }: { src?: string }) {
  return src && src.startsWith('/icons/') ? html`<img class="icon" src=${src} alt="" width="20" height="20" loading="lazy" />` : null;
}

interface RulesContext { rules: Rule[]; apps: Connection[]; onChanged: () => Promise<void> }

/** Which of the person's apps have this switched-on tool: switching a tool on gives it only to the apps that take later tools. */
function AppsWithTool({ name, apps }: { name: string; apps: Connection[] }) {
  const having = apps.filter((a) => a.tools.includes(name));
  if (!apps.length) return null;
  return html`<p class="small muted" data-apps-with-tool>
    ${having.length ? html`Apps with it: ${having.map((a, i) => html`${i ? ', ' : ''}<${Revealed} text=${a.appName} />`)}.` : 'No app has it yet.'}
    ${having.length < apps.length ? html` <a href="/apps">Give it to ${having.length ? 'other apps' : 'an app'}</a>` : null}
  </p>`;
}

function ToolRow({ addonId, addonName, tool, onSet, rules }: { addonId: string; addonName: string; tool: Tool; onSet: (name: string, on: boolean) => Promise<void>; rules: RulesContext | null }) {
  const label = `${tool.title || tool.name} · ${addonName}`;
  const own = rules?.rules.filter((r) => r.addon === addonId && r.tool === tool.name) ?? [];
  return html`<li class=${`tool ${tool.destructive ? 'tool-destructive' : ''}`} data-tool=${tool.name}>
    <div class="tool-text">
      <div class="tool-title"><${Icon} src=${tool.icon} /><strong><${Revealed} text=${tool.title || tool.name} /></strong> <code class="mono small"><${Revealed} text=${tool.name} identifier /></code> <${ToolBadges} tool=${tool} /></div>
      ${tool.summary && html`<p class="muted small"><${Revealed} text=${tool.summary} /></p>`}
      ${tool.updatePending ? html`<p class="small"><span class="badge">Update to review</span> <span class="muted">apps see this version until you accept the update</span></p>` : null}
      ${tool.enabled && rules ? html`<${AppsWithTool} name=${`${addonId}__${tool.name}`} apps=${rules.apps} />` : null}
      ${tool.enabled && own.length ? html`<p class="small rule-summary">${own.map((r, i) => html`${i ? ' · ' : ''}<span data-rule-summary=${r.mode}>${r.app ? r.app.name : 'Every app'}: ${ruleText(r)}</span>`)}</p>` : null}
      ${tool.enabled && rules ? html`<${ToolRules} addonId=${addonId} addonName=${addonName} tool=${tool} rules=${rules.rules} apps=${rules.apps} onChanged=${rules.onChanged} />` : null}
    </div>
    <${Switch} checked=${tool.enabled} label=${label} hideLabel onChange=${(v: boolean) => onSet(tool.name, v)} />
  </li>`;
}

export function AddonsPage() {
  const installs = useLoad(() => get<Install[]>('/api/installs'), []);
  const [search, setSearch] = useState('');
  const q = useDebounced(search.trim(), 250);
  const catalog = useLoad(() => get<CatalogEntry[]>(`/api/catalog${query({ q })}`), [q]);
  // The person's approval rules and apps, for the rules of each switched-on tool.
  const rules = useLoad(() => Promise.all([get<Rule[]>('/api/rules'), get<Connection[]>('/api/connections')]), []);
  const rulesContext: RulesContext | null = rules.data ? { rules: rules.data[0], apps: rules.data[1], onChanged: rules.reload } : null;
  const [error, setError] = useState('');
  const [message, setMessage] = useState('');

  const setTool = async (addonId: string, name: string, on: boolean) => {
    setError('');
    try {
      const updated = await patch<Install>(`/api/installs/${encodeURIComponent(addonId)}`, { tools: { [name]: on } } satisfies ToolSwitchesInput);
      installs.setData((list) => (list ?? []).map((i) => (i.addon.id === addonId ? { ...i, tools: updated.tools } : i)));
      // A tool switched on went to the apps that take later tools: which apps have it is read again.
      if (on) rules.reload();
    } catch (err) {
      setError(toApiError(err).message);
    }
  };
  // The catalog card's Install asks for the add-on's settings first, as its page does (InstallButton).
  const installed = async (entry: CatalogEntry) => {
    setError('');
    setMessage(`${entry.name} is installed. Its tools start switched off: turn on the ones you want.`);
    await Promise.all([installs.reload(), catalog.reload()]);
  };
  const accept = async (i: Install, version: number) => {
    setError('');
    try {
      await post(`/api/installs/${encodeURIComponent(i.addon.id)}/accept`, { version } satisfies AcceptUpdateInput);
      setMessage(`${i.addon.name} is updated. Your apps now see release ${version}.`);
      await installs.reload();
    } catch (err) {
      setError(toApiError(err).message);
      await installs.reload();
    }
  };
  const uninstall = async (id: string) => {
    await del(`/api/installs/${encodeURIComponent(id)}`);
    setMessage('The add-on is removed. Apps can no longer use its tools.');
    await Promise.all([installs.reload(), catalog.reload()]);
  };

  const installedIds = new Set((installs.data ?? []).map((i) => i.addon.id));
  const available = (catalog.data ?? []).filter((c) => !c.installed && !installedIds.has(c.id));

  return html`<${PageHeader} title="Add-ons" lead="Tools are off until you switch them on. Destructive tools ask you before they run, unless a rule of yours says otherwise." />
    ${message && html`<${Notice} kind="success">${message}<//>`}
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <section aria-labelledby="installed-h">
      <h2 id="installed-h">Installed</h2>
      <${Loaded} state=${installs} what="installed add-ons">${() =>
        installs.data!.length === 0
          ? html`<div class="empty">Nothing installed yet. Pick an add-on from the catalog below.</div>`
          : html`<div class="stack">${installs.data!.map(
              (i) => html`<article class="card addon" key=${i.addon.id} data-addon=${i.addon.id} aria-labelledby=${`inst-${i.addon.id}`}>
                <div class="row-between">
                  <div>
                    <h3 id=${`inst-${i.addon.id}`}><${Icon} src=${i.addon.icon} /> <${Revealed} text=${i.addon.name} /> <code class="mono small muted"><${Revealed} text=${i.addon.id} identifier /></code></h3>
                    ${i.addon.description && html`<p class="muted"><${Revealed} text=${i.addon.description} /></p>`}
                  </div>
                  <div class="card-actions">
                    <a class="btn" href=${`/addons/${encodeURIComponent(i.addon.id)}`} aria-label=${`Details of ${i.addon.name}: its settings and accounts`}>Details</a>
                    <${ConfirmButton} label="Uninstall" ariaLabel=${`Uninstall ${i.addon.name}`} danger title=${`Uninstall ${i.addon.name}?`}
                      body=${html`<p>Its tools disappear from every app at once. You can install it again later; its tools will start switched off.</p>`}
                      confirmLabel="Uninstall" onConfirm=${() => uninstall(i.addon.id)} />
                  </div>
                </div>
                ${i.heldOff
                  ? html`<${Notice} kind="error">${i.heldOff === 'delisted'
                      ? 'Toolport’s operators took this add-on off the catalog, so its tools are off for all your apps. You can uninstall it.'
                      : 'Its developer took this add-on off the catalog, so its tools are off for all your apps. You can uninstall it.'}<//>`
                  : null}
                <${SettingsReminder} addonId=${i.addon.id} addonName=${i.addon.name} />
                ${i.update ? html`<${UpdateReview} addonName=${i.addon.name} update=${i.update} onAccept=${(v: number) => accept(i, v)} />` : null}
                <p class="small muted">${i.tools.filter((t) => t.enabled).length} of ${i.tools.length} tools on</p>
                <ul class="tools">${i.tools.map((t) => html`<${ToolRow} key=${t.name} addonId=${i.addon.id} addonName=${i.addon.name} tool=${t} rules=${rulesContext} onSet=${(n: string, v: boolean) => setTool(i.addon.id, n, v)} />`)}</ul>
              </article>`,
            )}</div>`}<//>
    </section>
    <section aria-labelledby="catalog-h">
      <div class="row-between catalog-head">
        <h2 id="catalog-h">Catalog</h2>
        <form role="search" class="catalog-search" onSubmit=${(e: Event) => e.preventDefault()}>
          <label for="catalog-q" class="visually-hidden">Search the catalog</label>
          <input id="catalog-q" type="search" placeholder="Search by name, publisher or what it does" value=${search} autocomplete="off"
            aria-describedby="catalog-count" onInput=${(e: Event) => setSearch((e.target as HTMLInputElement).value)} />
        </form>
      </div>
      <p id="catalog-count" class="visually-hidden" role="status">${catalog.data ? `${available.length} add-on${available.length === 1 ? '' : 's'}${q ? ` match “${q}”` : ''}` : ''}</p>
      <${Loaded} state=${catalog} what="the catalog">${() =>
        available.length === 0
          ? html`<div class="empty">${q ? `Nothing in the catalog matches “${q}”.` : (catalog.data ?? []).length ? 'You have installed everything in the catalog.' : 'The catalog is empty for now.'}</div>`
          : html`<div class="grid">${available.map(
              (c) => html`<article class="card catalog-item" key=${c.id} data-addon=${c.id} aria-labelledby=${`cat-${c.id}`}>
                <h3 id=${`cat-${c.id}`}><${Icon} src=${c.icon} /> <${Revealed} text=${c.name} /></h3>
                <p class="small"><code class="mono muted"><${Revealed} text=${c.id} identifier /></code>${c.visibility === 'private' ? html` <span class="badge">Private · yours</span>` : null}</p>
                ${c.description && html`<p class="muted"><${Revealed} text=${c.description} /></p>`}
                <p class="small muted publisher">${c.publisher?.name ? html`By <strong><${Revealed} text=${c.publisher.name} /></strong> · ` : c.mine ? 'By you · ' : null}${c.publisher?.webhookHost ? html`${c.publisher?.name || c.mine ? 'runs' : 'Runs'} on <code class="mono">${c.publisher.webhookHost}</code>` : null}${c.release ? html` · release ${c.release.version}, ${new Date(c.release.publishedAt).toLocaleDateString()}` : null}</p>
                ${c.mine && c.listing === 'pending' ? html`<p class="small"><span class="badge">Waiting for review</span> only you can install it until Toolport approves the listing${me.get()?.emailVerified === false ? ', which it does only once you confirm your email (see Home)' : ''}</p>` : null}
                ${c.tools?.length ? html`<p class="small muted">${c.tools.length} tool${c.tools.length === 1 ? '' : 's'}${c.tools.some((t) => t.destructive) ? html` · <span class="text-danger">some destructive</span>` : null}</p>` : null}
                <div class="card-actions">
                  <a class="btn" href=${`/addons/${encodeURIComponent(c.id)}`} aria-label=${`Details of ${c.name}`}>Details</a>
                  <${InstallButton} addon=${c} ariaLabel=${`Install ${c.name}`} onInstalled=${() => installed(c)}
                    loadSettings=${() => get<CatalogDetail>(`/api/catalog/${encodeURIComponent(c.id)}`).then((d) => d.settings ?? [])} />
                </div>
              </article>`,
            )}</div>`}<//>
    </section>`;
}
