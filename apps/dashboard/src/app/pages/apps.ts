import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { del, get, put, type Connection, type ConnectionAskInput, type ConnectionTools, type ConnectionToolsInput, type FieldError, type Install } from '../api';
import { ConfirmButton, FieldErrors, html, Loaded, Notice, PageHeader, Revealed, toApiError, useLoad, When } from '../ui';
import { AppRules } from './rules';

/** A tool the person has switched on, as this page names it. */
interface Choosable { name: string; title: string; destructive: boolean }
interface ChoosableAddon { id: string; name: string; tools: Choosable[] }

/** The person's switched-on tools by add-on (held-off add-ons reach no app, so they are not offered). */
function switchedOn(installs: Install[]): ChoosableAddon[] {
  return installs
    .filter((i) => !i.heldOff)
    .map((i) => ({
      id: i.addon.id,
      name: i.addon.name,
      tools: i.tools.filter((t) => t.enabled).map((t) => ({ name: `${i.addon.id}__${t.name}`, title: t.title || t.name, destructive: !!t.destructive })),
    }))
    .filter((a) => a.tools.length > 0);
}

/** What the app may use, in a line per add-on. */
function ToolSummary({ connection, addons }: { connection: Connection; addons: ChoosableAddon[] }) {
  const mine = new Set(connection.tools);
  const groups = addons.map((a) => ({ addon: a, tools: a.tools.filter((t) => mine.has(t.name)) })).filter((g) => g.tools.length);
  const left = addons.reduce((n, a) => n + a.tools.filter((t) => !mine.has(t.name)).length, 0);
  const fresh = connection.addedSince?.length ?? 0;
  return html`<div class="small" data-tools-summary>
    ${groups.length === 0
      ? html`<p><strong>No tools.</strong> This app can use none of your tools until you choose some.</p>`
      : html`<p>Can use:</p><ul>${groups.map((g) => html`<li><strong><${Revealed} text=${g.addon.name} /></strong>: ${g.tools.map((t, i) => html`${i ? ', ' : ''}<${Revealed} text=${t.title} />`)}</li>`)}</ul>`}
    ${left ? html`<p class="muted">${left} switched-on tool${left === 1 ? ' is' : 's are'} not given to it${fresh ? html` (${fresh} new since you let it in)` : null}.</p>` : null}
    <p class="muted">${connection.newTools ? 'It also gets the tools you switch on later.' : 'Tools you switch on later are not given to it unless you add them here.'}</p>
  </div>`;
}

/** "Choose tools": a checkbox per switched-on tool, grouped by add-on, and the later-tools setting. */
function ToolChooser(props: { connection: Connection; addons: ChoosableAddon[]; onSaved: (c: Connection) => void; onCancel: () => void }) {
  const { connection, addons } = props;
  const [picked, setPicked] = useState(() => new Set(connection.tools));
  const [newTools, setNewTools] = useState(connection.newTools);
  const [error, setError] = useState<{ message: string; fields: FieldError[] } | null>(null);
  const [busy, setBusy] = useState(false);
  const fresh = new Set(connection.addedSince ?? []);
  const toggle = (name: string, on: boolean) =>
    setPicked((p) => {
      const next = new Set(p);
      if (on) next.add(name);
      else next.delete(name);
      return next;
    });
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const tools = addons.flatMap((a) => a.tools.map((t) => t.name)).filter((n) => picked.has(n));
      const saved = await put<ConnectionTools>(`/api/connections/${encodeURIComponent(connection.id)}/tools`, { tools, newTools } satisfies ConnectionToolsInput);
      props.onSaved({ ...connection, ...saved, addedSince: (connection.addedSince ?? []).filter((n) => !saved.tools.includes(n)) });
    } catch (err) {
      const apiError = toApiError(err);
      setError({ message: apiError.message, fields: apiError.fieldErrors });
    } finally {
      setBusy(false);
    }
  };
  const formId = `choose-${connection.id}`;
  return html`<form class="tool-chooser" id=${formId} onSubmit=${save} aria-label=${`Tools ${connection.appName} may use`}>
    ${addons.length === 0
      ? html`<p class="muted">You have no tools switched on. Switch some on in <a href="/addons">Add-ons</a>, then choose them here.</p>`
      : addons.map(
          (a) => html`<fieldset key=${a.id} data-addon=${a.id}>
            <legend><strong><${Revealed} text=${a.name} /></strong></legend>
            ${a.tools.map(
              (t) => html`<p key=${t.name} data-tool=${t.name}><label class="inline">
                <input type="checkbox" checked=${picked.has(t.name)} onChange=${(ev: Event) => toggle(t.name, (ev.target as HTMLInputElement).checked)} />
                <${Revealed} text=${t.title} />
                ${fresh.has(t.name) ? html`<span class="badge badge-calm">New</span>` : null}
                ${t.destructive ? html`<span class="badge badge-danger">asks you first</span>` : null}
              </label></p>`,
            )}
          </fieldset>`,
        )}
    <p><label class="inline">
      <input type="checkbox" checked=${newTools} onChange=${(ev: Event) => setNewTools((ev.target as HTMLInputElement).checked)} />
      Also let it use tools I switch on later
    </label></p>
    ${error && html`<${Notice} kind="error">${error.message}<//><${FieldErrors} errors=${error.fields} />`}
    <div class="actions">
      <button type="button" class="btn" onClick=${props.onCancel}>Cancel</button>
      <button type="submit" class="btn btn-primary" disabled=${busy}>Save tools</button>
    </div>
  </form>`;
}

/** One switch: every tool call of this app waits for the person, whatever the tool and their rules. */
function AskEveryTool({ connection, onSaved }: { connection: Connection; onSaved: (c: Connection) => void }) {
  const [on, setOn] = useState(connection.askEveryTool);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const change = async (ev: Event) => {
    const askEveryTool = (ev.target as HTMLInputElement).checked;
    setOn(askEveryTool);
    setBusy(true);
    setProblem(null);
    try {
      await put(`/api/connections/${encodeURIComponent(connection.id)}/ask`, { askEveryTool } satisfies ConnectionAskInput);
      onSaved({ ...connection, askEveryTool });
    } catch (err) {
      setOn(!askEveryTool);
      setProblem(toApiError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="ask-every-tool">
    <p><label class="inline">
      <input type="checkbox" checked=${on} disabled=${busy} onChange=${change} />
      Ask me before every tool call it makes
    </label></p>
    ${problem && html`<${Notice} kind="error">${problem}<//>`}
  </div>`;
}

function AppCard(props: { connection: Connection; addons: ChoosableAddon[]; onRevoke: (c: Connection) => Promise<void>; onSaved: (c: Connection) => void }) {
  const { connection: c, addons } = props;
  const [choosing, setChoosing] = useState(false);
  const card = useRef<HTMLLIElement>(null);
  const opened = useRef(false);
  // Focus follows the list: into it (its first checkbox) when it opens, back to "Choose tools" when
  // it closes (saved or cancelled), so the keyboard is never sent back to the top of the page.
  useLayoutEffect(() => {
    if (choosing) {
      opened.current = true;
      card.current?.querySelector<HTMLElement>('.tool-chooser input, .tool-chooser button')?.focus();
    } else if (opened.current) {
      opened.current = false;
      card.current?.querySelector<HTMLElement>('[data-choose-tools]')?.focus();
    }
  }, [choosing]);
  return html`<li class="card" data-connection=${c.id} ref=${card}>
    <div>
      <h2 class="h3"><${Revealed} text=${c.appName} identifier /> ${c.unverified ? html`<span class="badge badge-warn" title="Toolport has not verified who made this app; the name is what the app says about itself">Unverified</span>` : null}</h2>
      <p class="small muted">
        ${c.redirectHost ? html`Returns to <code class="mono"><${Revealed} text=${c.redirectHost} identifier /></code> · ` : null}
        Let in <${When} iso=${c.createdAt} /> · Last used <${When} iso=${c.lastUsedAt} />
      </p>
    </div>
    ${choosing
      ? html`<${ToolChooser} connection=${c} addons=${addons} onCancel=${() => setChoosing(false)} onSaved=${(saved: Connection) => { setChoosing(false); props.onSaved(saved); }} />`
      : html`<${ToolSummary} connection=${c} addons=${addons} />`}
    <${AskEveryTool} connection=${c} onSaved=${props.onSaved} />
    <${AppRules} grantId=${c.id} appName=${c.appName} />
    <div class="card-actions">
      ${choosing ? null : html`<button type="button" class="btn" data-choose-tools aria-label=${`Choose tools for ${c.appName}`} onClick=${() => setChoosing(true)}>Choose tools</button>`}
      <${ConfirmButton} label="Revoke" ariaLabel=${`Revoke ${c.appName}`} danger title=${`Revoke ${c.appName}?`}
        body=${html`<p>The app's access ends now: its tokens stop working and it must ask for your consent again to come back.</p>`}
        confirmLabel="Revoke access" onConfirm=${() => props.onRevoke(c)} />
    </div>
  </li>`;
}

/** The AI apps the person let in (OAuth consents): which tools each may use, each revocable at once. */
export function AppsPage() {
  const list = useLoad(() => get<Connection[]>('/api/connections'), []);
  const installs = useLoad(() => get<Install[]>('/api/installs'), []);
  const [message, setMessage] = useState('');
  const revoke = async (c: Connection) => {
    await del(`/api/connections/${encodeURIComponent(c.id)}`);
    setMessage(`${c.appName} can no longer reach your tools.`);
    list.setData((l) => (l ?? []).filter((x) => x.id !== c.id));
  };
  const saved = (c: Connection) => {
    setMessage(`${c.appName} can now use ${c.tools.length === 0 ? 'none of your tools' : `${c.tools.length} tool${c.tools.length === 1 ? '' : 's'}`}.`);
    list.setData((l) => (l ?? []).map((x) => (x.id === c.id ? c : x)));
  };
  const addons = switchedOn(installs.data ?? []);
  return html`<${PageHeader} title="Apps let in" lead="AI apps you allowed to use your MCP URL, and the tools each may use. Revoking one ends its access at once." />
    ${message && html`<${Notice} kind="success">${message}<//>`}
    <${Loaded} state=${list} what="connected apps">${() =>
      list.data!.length === 0
        ? html`<div class="empty">No app is let in yet. Paste your MCP URL into an app from <a href="/">Home</a>; it will ask for your consent.</div>`
        : html`<${Loaded} state=${installs} what="your tools">${() =>
            html`<ul class="list stack">${list.data!.map((c) => html`<${AppCard} key=${c.id} connection=${c} addons=${addons} onRevoke=${revoke} onSaved=${saved} />`)}</ul>`}<//>`}<//>`;
}
