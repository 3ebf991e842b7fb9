import { useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { get, post, put, type FieldError, type InstallInput, type InstallSettingsView, type SettingDecl, type SettingValue } from '../api';
import { FieldErrors, html, Notice, Revealed, toApiError, useLoad } from '../ui';

/**
 * An add-on's per-install settings (manifest `settings`): the form in the install dialog and on
 * the add-on's page. A secret is write-only: once saved the page only says so, and offers to
 * replace it; its value never comes back from the server.
 */

type Value = SettingValue;

/** What each field holds while the person edits: text as typed (numbers too), booleans as they are. */
type Draft = Record<string, string | boolean>;

const draftOf = (list: Array<SettingDecl & { value?: Value | null }>, fromDefaults: boolean): Draft =>
  Object.fromEntries(
    list.map((s) => {
      const v = fromDefaults ? s.default : s.value;
      if (s.kind === 'boolean') return [s.name, v === true];
      if (s.kind === 'secret') return [s.name, ''];
      return [s.name, v === undefined || v === null ? '' : String(v)];
    }),
  );

/**
 * The values to send: numbers read, an emptied optional field cleared (`null`), and a secret only
 * when the person typed one (an omitted secret keeps its value). `all`: every field (installing).
 */
function valuesOf(list: SettingDecl[], draft: Draft, initial: Draft, all: boolean): Record<string, Value | null> {
  const out: Record<string, Value | null> = {};
  for (const s of list) {
    const v = draft[s.name];
    if (s.kind === 'secret') {
      if (typeof v === 'string' && v !== '') out[s.name] = v;
      continue;
    }
    if (!all && v === initial[s.name]) continue;
    if (s.kind === 'boolean') out[s.name] = v === true;
    else if (v === '') {
      if (!all) out[s.name] = null;
    } else if (s.kind === 'number') out[s.name] = Number(v);
    else out[s.name] = String(v);
  }
  return out;
}

function SettingField({ s, draft, setDraft, saved, replacing, onReplace, idBase }: {
  s: SettingDecl;
  draft: Draft;
  setDraft: (fn: (d: Draft) => Draft) => void;
  /** A secret already saved (shown as saved until replaced). */
  saved: boolean;
  replacing: boolean;
  onReplace: () => void;
  idBase: string;
}) {
  const id = `${idBase}-${s.name}`;
  const hint = s.summary ? `${id}-hint` : undefined;
  const set = (v: string | boolean) => setDraft((d) => ({ ...d, [s.name]: v }));
  const value = draft[s.name];
  const summary = s.summary ? html`<span id=${hint} class="small muted"><${Revealed} text=${s.summary} /></span>` : null;
  const optional = s.required ? null : html` <span class="muted">(optional)</span>`;
  if (s.kind === 'boolean') {
    return html`<div class="field" data-setting=${s.name}>
      <label class="inline"><input id=${id} type="checkbox" checked=${value === true} aria-describedby=${hint}
        onChange=${(e: Event) => set((e.target as HTMLInputElement).checked)} /> <${Revealed} text=${s.title} /></label>
      ${summary}
    </div>`;
  }
  if (s.kind === 'secret' && saved && !replacing) {
    return html`<div class="field" data-setting=${s.name}>
      <strong class="small" id=${`${id}-label`}><${Revealed} text=${s.title} /></strong>
      <span class="row"><span class="badge badge-calm" data-saved>Saved</span>
        <button type="button" class="btn btn-small" aria-label=${`Replace ${s.title}`} aria-describedby=${`${id}-label`} onClick=${onReplace}>Replace</button></span>
      ${summary}
    </div>`;
  }
  const label = html`<label for=${id}><${Revealed} text=${s.title} />${optional}</label>`;
  if (s.kind === 'choice') {
    return html`<div class="field" data-setting=${s.name}>${label}
      <select id=${id} required=${s.required} aria-describedby=${hint} onChange=${(e: Event) => set((e.target as HTMLSelectElement).value)}>
        ${s.required && value !== '' ? null : html`<option value="" selected=${value === ''}>${s.required ? 'Choose one' : 'None'}</option>`}
        ${(s.choices ?? []).map((c) => html`<option value=${c} selected=${value === c}>${c}</option>`)}
      </select>${summary}</div>`;
  }
  return html`<div class="field" data-setting=${s.name}>${label}
    <input id=${id} type=${s.kind === 'secret' ? 'password' : s.kind === 'number' ? 'number' : 'text'} value=${value as string}
      step=${s.kind === 'number' ? 'any' : undefined} required=${s.required && !saved} aria-describedby=${hint}
      autocomplete=${s.kind === 'secret' ? 'new-password' : 'off'} maxlength=${s.kind === 'secret' ? 4096 : s.kind === 'text' ? 2000 : undefined}
      spellcheck=${s.kind === 'secret' ? false : undefined}
      onInput=${(e: Event) => set((e.target as HTMLInputElement).value)} />${summary}</div>`;
}

/**
 * The Install button of an add-on (its page, and its catalog card). An add-on that declares
 * settings opens the install dialog with its form (defaults filled in); one without installs at
 * once. The catalog card does not know the settings: it gives `loadSettings`, asked on the click.
 */
export function InstallButton({ addon, settings: given, loadSettings, ariaLabel, onInstalled }: {
  addon: { id: string; name: string };
  settings?: SettingDecl[];
  loadSettings?: () => Promise<SettingDecl[]>;
  ariaLabel?: string;
  onInstalled: () => Promise<void> | void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const idBase = useId();
  const [settings, setSettings] = useState<SettingDecl[] | null>(given ?? null);
  const [draft, setDraft] = useState<Draft>(() => draftOf(given ?? [], true));
  const [opening, setOpening] = useState(false);
  const loading = useRef(false);
  const [error, setError] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [busy, setBusy] = useState(false);
  // Opened once its form is drawn, so focus lands on the first field (and goes back to Install on close).
  useLayoutEffect(() => {
    if (!opening) return;
    setOpening(false);
    ref.current?.showModal();
  }, [opening]);
  const install = async (values?: Record<string, Value | null>) => {
    setBusy(true);
    setError('');
    setErrors([]);
    try {
      await post('/api/installs', { addon: addon.id, ...(values ? { settings: values } : {}) } satisfies InstallInput);
      ref.current?.close();
      await onInstalled();
    } catch (err) {
      const e = toApiError(err);
      setError(e.message);
      setErrors(e.fieldErrors);
    } finally {
      setBusy(false);
    }
  };
  const start = async () => {
    setError('');
    let list = settings;
    if (list === null) {
      // Not `busy`: a disabled button drops the focus, and the dialog would give it back to <body>.
      if (loading.current) return;
      loading.current = true;
      try {
        list = (await loadSettings?.()) ?? [];
      } catch (err) {
        setError(toApiError(err).message);
        return;
      } finally {
        loading.current = false;
      }
      setSettings(list);
      setDraft(draftOf(list, true));
    }
    if (!list.length) return install();
    setOpening(true);
  };
  const list = settings ?? [];
  return html`<span class="install">
    ${error && !list.length ? html`<${Notice} kind="error">${error}<//>` : null}
    <button type="button" class="btn btn-primary" aria-label=${ariaLabel} disabled=${busy} onClick=${() => void start()}>Install</button>
    ${list.length
      ? html`<dialog ref=${ref} class="dialog" aria-labelledby=${titleId}>
          <form class="dialog-body" onSubmit=${(e: Event) => { e.preventDefault(); void install(valuesOf(list, draft, {}, true)); }}>
            <h2 class="dialog-title" id=${titleId}>Install <${Revealed} text=${addon.name} /></h2>
            <p class="dialog-text small">${addon.name} asks for these settings. They are sent to the add-on with every call; secrets are stored encrypted and never shown again.</p>
            ${list.map((s) => html`<${SettingField} key=${s.name} s=${s} draft=${draft} setDraft=${setDraft} saved=${false} replacing=${true} onReplace=${() => {}} idBase=${idBase} />`)}
            ${error && html`<${Notice} kind="error">${error}<${FieldErrors} errors=${errors} /><//>`}
            <div class="dialog-actions">
              <button type="button" class="btn" onClick=${() => ref.current?.close()}>Cancel</button>
              <button type="submit" class="btn btn-primary" disabled=${busy}>Install</button>
            </div>
          </form>
        </dialog>`
      : null}
  </span>`;
}

/** The settings of an installed add-on, on its page: edited and saved; nothing when it declares none. */
export function InstallSettings({ addonId, addonName }: { addonId: string; addonName: string }) {
  const state = useLoad(() => get<InstallSettingsView>(`/api/installs/${encodeURIComponent(addonId)}/settings`), [addonId]);
  const data = state.data;
  if (!data || !data.settings.length) return null;
  return html`<${SettingsForm} key=${JSON.stringify(data)} view=${data} addonName=${addonName} onSaved=${(v: InstallSettingsView) => state.setData(() => v)} />`;
}

function SettingsForm({ view, addonName, onSaved }: { view: InstallSettingsView; addonName: string; onSaved: (v: InstallSettingsView) => void }) {
  const idBase = useId();
  const headingId = useId();
  const initial = draftOf(view.settings, false);
  const [draft, setDraft] = useState<Draft>(initial);
  const [replacing, setReplacing] = useState<Set<string>>(new Set());
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [busy, setBusy] = useState(false);
  const titles = new Map(view.settings.map((s) => [s.name, s.title]));
  const save = async () => {
    setBusy(true);
    setMessage('');
    setError('');
    setErrors([]);
    try {
      const saved = await put<InstallSettingsView>(`/api/installs/${encodeURIComponent(view.addon)}/settings`, { values: valuesOf(view.settings, draft, initial, false) });
      onSaved({ ...saved, savedNotice: true } as InstallSettingsView);
    } catch (err) {
      const e = toApiError(err);
      setError(e.message);
      setErrors(e.fieldErrors);
    } finally {
      setBusy(false);
    }
  };
  const justSaved = (view as InstallSettingsView & { savedNotice?: boolean }).savedNotice;
  // The form is drawn anew from what the server saved: Save gets the focus back, not <body>.
  const saveButton = useRef<HTMLButtonElement>(null);
  useLayoutEffect(() => {
    if (justSaved) saveButton.current?.focus();
  }, []);
  return html`<section class="card" aria-labelledby=${headingId} data-settings=${view.addon}>
    <h2 id=${headingId} class="h3">Settings</h2>
    ${view.missing.length
      ? html`<${Notice} kind="warning">Calls to ${addonName} answer with a reminder until you set ${view.missing.map((n, i) => html`${i ? ', ' : ''}<strong>${titles.get(n) ?? n}</strong>`)}.<//>`
      : null}
    ${(message || justSaved) && html`<${Notice} kind="success">${message || 'Settings saved. The next call uses them.'}<//>`}
    <form aria-label=${`Settings of ${addonName}`} onSubmit=${(e: Event) => { e.preventDefault(); void save(); }}>
      ${view.settings.map((s) => html`<${SettingField} key=${s.name} s=${s} draft=${draft} setDraft=${setDraft} saved=${s.kind === 'secret' && s.set}
        replacing=${replacing.has(s.name)} onReplace=${() => { setReplacing((r) => new Set(r).add(s.name)); requestAnimationFrame(() => document.getElementById(`${idBase}-${s.name}`)?.focus()); }} idBase=${idBase} />`)}
      ${error && html`<${Notice} kind="error">${error}<${FieldErrors} errors=${errors} /><//>`}
      <div class="actions"><button type="submit" class="btn btn-primary" disabled=${busy} ref=${saveButton}>Save settings</button></div>
    </form>
  </section>`;
}

/** On the Add-ons page: a reminder, when a required setting is unset, with the way to its form. */
export function SettingsReminder({ addonId, addonName }: { addonId: string; addonName: string }) {
  const state = useLoad(() => get<InstallSettingsView>(`/api/installs/${encodeURIComponent(addonId)}/settings`), [addonId]);
  if (!state.data?.missing.length) return null;
  return html`<${Notice} kind="warning">${addonName} needs settings before its tools can run. <a href=${`/addons/${encodeURIComponent(addonId)}`}>Set them up</a><//>`;
}
