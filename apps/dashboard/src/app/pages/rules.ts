import { useId, useState } from 'preact/hooks';
import { del, get, put, type Connection, type Rule, type RuleInput, type RuleMode } from '../api';
import { ConfirmButton, html, Loaded, Notice, Revealed, revealedText, toApiError, useLoad } from '../ui';

/**
 * The person's approval rules (`/api/rules`, docs/approvals.md "Rules you set"): what each tool does
 * when an app calls it, for every app or for one. An app's rule wins over the rule for every app.
 */
const MODE_LABEL: Record<RuleMode, string> = {
  ask_every_time: 'Ask every time',
  ask: 'Ask first if destructive (default)',
  allow: 'Allow without asking',
  never: 'Never: block it',
};
const DURATIONS: Array<[string, string]> = [['', 'Until I remove it'], ['1', 'For 1 hour'], ['8', 'For 8 hours'], ['24', 'For 24 hours'], ['168', 'For 7 days'], ['720', 'For 30 days']];

const until = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** One rule in words: "Asks every time", "Allowed without asking until 3 Dec 2026, 10:00". */
export function ruleText(r: Pick<Rule, 'mode' | 'expiresAt' | 'needsAcknowledge'>): string {
  if (r.needsAcknowledge) return 'Asks you again: the tool now changes or deletes things. Set the rule again to allow it without asking';
  if (r.mode === 'ask_every_time') return 'Asks you every time';
  if (r.mode === 'never') return 'Blocked';
  if (r.mode === 'allow') return r.expiresAt ? `Allowed without asking until ${until(r.expiresAt)}` : 'Allowed without asking until you remove it';
  return 'Asks you first if destructive';
}

/** The rules of one tool, with what happens by default, each rule removable. */
function RuleList({ rules, onRemove, label }: { rules: Rule[]; onRemove: (r: Rule) => Promise<void>; label: (r: Rule) => string }) {
  if (!rules.length) return null;
  return html`<ul class="rules">${rules.map(
    (r) => html`<li class="rule" data-rule=${r.id} data-mode=${r.mode} key=${r.id}>
      <span><strong>${r.app ? html`<${Revealed} text=${r.app.name} identifier />` : 'Every app'}</strong>: ${ruleText(r)}</span>
      <button type="button" class="btn btn-small" aria-label=${`Remove the rule ${label(r)}`} onClick=${() => onRemove(r)}>Remove</button>
    </li>`,
  )}</ul>`;
}

/**
 * An app as the rule form names it: its self-chosen name with hidden and look-alike characters
 * marked, and where it sends the person back, so two apps both called "Claude" can be told apart.
 */
const appLabel = (a: Connection) => `${revealedText(a.appName)}${a.redirectHost ? ` (${a.redirectHost})` : ''}`;

export interface RuleTool { name: string; title?: string; destructive?: boolean; alwaysAsk?: boolean }

/**
 * A switched-on tool's approval rules on the Add-ons page: what applies now, and a form to set a
 * rule for every app or for one. Allowing a destructive tool goes through a warning first; a tool
 * its add-on marks alwaysAsk cannot be allowed at all.
 */
export function ToolRules(props: { addonId: string; addonName: string; tool: RuleTool; rules: Rule[]; apps: Connection[]; onChanged: () => Promise<void> }) {
  const { addonId, addonName, tool, apps } = props;
  const id = useId();
  const name = tool.title || tool.name;
  const mine = props.rules.filter((r) => r.addon === addonId && r.tool === tool.name);
  const [app, setApp] = useState('');
  const [mode, setMode] = useState<RuleMode>(tool.alwaysAsk ? 'ask_every_time' : 'ask');
  const [hours, setHours] = useState('');
  const [error, setError] = useState('');
  const [message, setMessage] = useState('');
  const chosenApp = apps.find((a) => a.id === app);
  const appName = chosenApp ? appLabel(chosenApp) : '';
  const allowOffered = !tool.alwaysAsk;

  const save = async (acknowledge?: boolean) => {
    setError('');
    setMessage('');
    try {
      await put('/api/rules', {
        addon: addonId,
        tool: tool.name,
        ...(app ? { app } : {}),
        mode,
        ...(mode === 'allow' && hours ? { hours: Number(hours) } : {}),
        ...(acknowledge ? { acknowledge: 'destructive' } : {}),
      } satisfies RuleInput);
      const lasting = mode === 'allow' ? ` ${(DURATIONS.find(([v]) => v === hours)?.[1] ?? `for ${hours} hours`).toLowerCase()}` : '';
      setMessage(`Saved: ${name} for ${app ? appName : 'every app'}: ${MODE_LABEL[mode].toLowerCase()}${lasting}.`);
      await props.onChanged();
    } catch (err) {
      setError(toApiError(err).message);
      throw err;
    }
  };
  const remove = async (r: Rule) => {
    setError('');
    try {
      await del(`/api/rules/${encodeURIComponent(r.id)}`);
      setMessage(`Removed the rule for ${r.app ? r.app.name : 'every app'}.`);
      await props.onChanged();
    } catch (err) {
      setError(toApiError(err).message);
    }
  };
  const warn = mode === 'allow' && !!tool.destructive;
  const needsApp = mode === 'allow' && !app;

  return html`<details class="tool-rules" data-rules-for=${tool.name}>
    <summary>Approval rule${mine.length ? html` <span class="badge">${mine.length}</span>` : null}</summary>
    <p class="small muted">${tool.alwaysAsk
      ? html`<span class="badge badge-warn">The add-on asks every time</span> ${addonName} asks you before every call of this tool; no rule can let it run without asking.`
      : tool.destructive
        ? 'By default it asks you before every call.'
        : 'By default it runs without asking.'}</p>
    <${RuleList} rules=${mine} onRemove=${remove} label=${(r: Rule) => `for ${r.app ? r.app.name : 'every app'} on ${name}`} />
    <form class="rule-form" onSubmit=${(e: Event) => { e.preventDefault(); if (!warn) void save().catch(() => {}); }}>
      <div class="field">
        <label for=${`${id}-app`}>For</label>
        <select id=${`${id}-app`} value=${app} onChange=${(e: Event) => setApp((e.target as HTMLSelectElement).value)}>
          <option value="">Every app</option>
          ${apps.map((a) => html`<option value=${a.id}>${appLabel(a)}</option>`)}
        </select>
      </div>
      <div class="field">
        <label for=${`${id}-mode`}>Rule</label>
        <select id=${`${id}-mode`} value=${mode} onChange=${(e: Event) => setMode((e.target as HTMLSelectElement).value as RuleMode)}>
          ${(Object.keys(MODE_LABEL) as RuleMode[]).filter((m) => m !== 'allow' || allowOffered).map((m) => html`<option value=${m}>${MODE_LABEL[m]}</option>`)}
        </select>
      </div>
      ${mode === 'allow'
        ? html`<div class="field">
            <label for=${`${id}-hours`}>How long</label>
            <select id=${`${id}-hours`} value=${hours} onChange=${(e: Event) => setHours((e.target as HTMLSelectElement).value)}>
              ${DURATIONS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}
            </select>
          </div>`
        : null}
      ${needsApp ? html`<p class="small muted rule-hint">Allowing without asking is for one app: choose which.</p>` : null}
      <div class="rule-actions">
        ${warn && !needsApp
          ? html`<${ConfirmButton} label="Save rule" class="btn btn-primary" ariaLabel=${`Save rule for ${name}`} danger
              title=${`Let ${appName} run “${name}” without asking?`}
              body=${html`<p><strong>${name}</strong> changes or deletes things. With this rule ${appName} can run it whenever it wants${hours ? ` for the next ${DURATIONS.find(([v]) => v === hours)?.[1].replace(/^For /, '') ?? `${hours} hours`}` : ', until you remove the rule'}, and you will not be asked first.</p>
                <p>Other apps still ask. You can remove the rule at any time.</p>`}
              confirmLabel="Allow without asking" onConfirm=${() => save(true)} />`
          : html`<button type="submit" class="btn btn-primary" aria-label=${`Save rule for ${name}`} disabled=${needsApp}>Save rule</button>`}
      </div>
    </form>
    ${message && html`<${Notice} kind="success">${message}<//>`}
    ${error && html`<${Notice} kind="error">${error}<//>`}
  </details>`;
}

/** One app's rules, for the Apps page: what this app may run without asking, must always ask for, or may not run. */
export function AppRules({ grantId, appName }: { grantId: string; appName?: string }) {
  const rules = useLoad(() => get<Rule[]>('/api/rules'), [grantId]);
  const [error, setError] = useState('');
  const remove = async (r: Rule) => {
    setError('');
    try {
      await del(`/api/rules/${encodeURIComponent(r.id)}`);
      await rules.reload();
    } catch (err) {
      setError(toApiError(err).message);
    }
  };
  const id = useId();
  return html`<section class="app-rules" aria-labelledby=${id} data-app-rules=${grantId}>
    <h3 class="small-h" id=${id}>Rules for this app</h3>
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <${Loaded} state=${rules} what="rules">${() => {
      const mine = rules.data!.filter((r) => r.app?.id === grantId);
      if (!mine.length) return html`<p class="small muted">None: its calls follow your rules for every app, and destructive tools ask you first. Set rules on <a href="/addons">Add-ons</a>.</p>`;
      return html`<ul class="rules">${mine.map(
        (r) => html`<li class="rule" data-rule=${r.id} data-mode=${r.mode} key=${r.id}>
          <span><strong><${Revealed} text=${r.toolTitle ?? r.tool} /></strong> <span class="muted small">· <${Revealed} text=${r.addonName ?? r.addon} /></span>: ${ruleText(r)}</span>
          <button type="button" class="btn btn-small" aria-label=${`Remove the rule for ${appName ?? 'this app'} on ${r.toolTitle ?? r.tool}`} onClick=${() => remove(r)}>Remove</button>
        </li>`,
      )}</ul>`;
    }}<//>
  </section>`;
}
