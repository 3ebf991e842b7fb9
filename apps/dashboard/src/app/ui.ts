import { html } from 'htm/preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiError, type FieldError } from './api';
import { revealName, stopWaiting } from './unicode';

export { html };

/** Loads data for a page; keeps the error to show. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const seq = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await fn();
      if (mine === seq.current) setState({ data, loading: false });
    } catch (err) {
      if (mine === seq.current) setState({ error: toApiError(err), loading: false });
    }
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  const setData = (update: (d: T | undefined) => T) => setState((s) => ({ ...s, data: update(s.data) }));
  return { ...state, reload, setData };
}

/** Runs `read` one at a time: asked again while it runs, it runs once more after, not once per ask. */
export function oneAtATime(read: () => Promise<unknown>): () => void {
  let running = false;
  let again = false;
  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    void read()
      .catch(() => {})
      .finally(() => {
        running = false;
        if (again) {
          again = false;
          run();
        }
      });
  };
  return run;
}

export const toApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'Something went wrong in the dashboard.'));

/** What a failed form action shows: its sentence, the fields to fix, and the field to focus first. */
export interface Failure {
  message: string;
  fields?: FieldError[];
  focus?: string;
}
const asFailure = (err: unknown): Failure => {
  const e = toApiError(err);
  return { message: e.message, fields: e.fieldErrors };
};

/**
 * One action of a form at a time: busy while it runs, and once it fails its sentence and field
 * errors, with focus on the first field to fix rather than left on <body>.
 */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [fields, setFields] = useState<FieldError[]>([]);
  const run = async (action: () => Promise<void>, failed: (err: unknown) => Failure = asFailure) => {
    if (busy) return;
    setBusy(true);
    setError('');
    setFields([]);
    try {
      await action();
    } catch (err) {
      const f = failed(err);
      setError(f.message);
      setFields(f.fields ?? []);
      const focus = f.focus;
      if (focus) requestAnimationFrame(() => document.getElementById(focus)?.focus());
    } finally {
      setBusy(false);
    }
  };
  const fieldError = (path: string) => fields.find((f) => f.path === path)?.message;
  return { busy, error, setError, fieldError, run };
}

/**
 * Shows loading, "not available yet" when this server lacks the route, or the error (a 404 of an
 * object says it does not exist); otherwise the children.
 */
export function Loaded(props: { state: { loading: boolean; error?: ApiError; data?: unknown }; what: string; children: () => ComponentChildren }) {
  const { state, what } = props;
  if (state.error?.routeMissing) return html`<${NotAvailable} what=${what} />`;
  if (state.error) return html`<${Notice} kind="error">${state.error.message}<//>`;
  if (state.data === undefined) return html`<p class="muted" aria-busy="true">Loading ${what}…</p>`;
  return html`${props.children()}`;
}

export function NotAvailable({ what }: { what: string }) {
  return html`<div class="empty not-available" role="status">
    <strong>${what[0]?.toUpperCase()}${what.slice(1)} ${/s$/.test(what) ? 'are' : 'is'} not available yet.</strong>
    <span>This part of Toolport is still being set up on this server. Check back soon.</span>
  </div>`;
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'error' | 'success' | 'warning'; children: ComponentChildren }) {
  return html`<div class=${`notice notice-${kind}`} role=${kind === 'error' ? 'alert' : 'status'}>${children}</div>`;
}

/**
 * A notice in a live region that is on the page before its words: a region inserted together with
 * its text is not read out by every screen reader. Empty, it takes no space.
 */
export function LiveNotice({ kind = 'success', children }: { kind?: 'info' | 'success' | 'warning'; children?: ComponentChildren }) {
  return html`<div role="status" data-live-notice>${children ? html`<div class=${`notice notice-${kind}`}>${children}</div>` : null}</div>`;
}

export function FieldErrors({ errors }: { errors: FieldError[] }) {
  if (!errors.length) return null;
  return html`<ul class="field-errors">
    ${errors.map((e) => html`<li><code>${e.path || '/'}</code> ${e.message}</li>`)}
  </ul>`;
}

/**
 * An accessible on/off switch (a button with role="switch"). Its name never changes with its state
 * (aria-checked says on or off), and it is never disabled while it saves, so focus stays on it.
 */
export function Switch(props: { checked: boolean; label: string; onChange: (v: boolean) => void | Promise<void>; disabled?: boolean; hideLabel?: boolean; id?: string; describedBy?: string }) {
  const [busy, setBusy] = useState(false);
  const toggle = async () => {
    if (busy || props.disabled) return;
    setBusy(true);
    try {
      await props.onChange(!props.checked);
    } finally {
      setBusy(false);
    }
  };
  return html`<button
    type="button"
    role="switch"
    id=${props.id}
    class="switch"
    aria-checked=${props.checked ? 'true' : 'false'}
    aria-label=${props.hideLabel ? props.label : undefined}
    aria-describedby=${props.describedBy}
    aria-disabled=${props.disabled || busy ? 'true' : undefined}
    aria-busy=${busy ? 'true' : undefined}
    onClick=${toggle}
  ><span class="switch-track" aria-hidden="true"><span class="switch-thumb"></span></span>${props.hideLabel ? null : html`<span class="switch-label">${props.label}</span>`}</button>`;
}

/** A button that asks first, in a modal <dialog> (focus is trapped, Escape cancels). */
export function ConfirmButton(props: {
  label: string;
  title: string;
  body: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => Promise<void> | void;
  danger?: boolean;
  class?: string;
  ariaLabel?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const open = () => {
    setError('');
    ref.current?.showModal();
  };
  const confirm = async () => {
    setBusy(true);
    try {
      await props.onConfirm();
      ref.current?.close();
    } catch (err) {
      setError(toApiError(err).message);
    } finally {
      setBusy(false);
    }
  };
  return html`<button type="button" class=${props.class ?? (props.danger ? 'btn btn-danger-outline' : 'btn')} aria-label=${props.ariaLabel} onClick=${open}>${props.label}</button>
    <dialog ref=${ref} class="dialog" aria-labelledby=${titleId}>
      <form method="dialog" class="dialog-body" onSubmit=${(e: Event) => { e.preventDefault(); void confirm(); }}>
        <h2 class="dialog-title" id=${titleId}>${props.title}</h2>
        <div class="dialog-text">${props.body}</div>
        ${error && html`<${Notice} kind="error">${error}<//>`}
        <div class="dialog-actions">
          <button type="button" class="btn" onClick=${() => ref.current?.close()} autofocus>Cancel</button>
          <button type="submit" class=${props.danger ? 'btn btn-danger' : 'btn btn-primary'} disabled=${busy}>${props.confirmLabel}</button>
        </div>
      </form>
    </dialog>`;
}

/** Copies text; falls back to selecting it when the clipboard is not allowed. `primary`: the card's main action. */
export function CopyButton({ text, label = 'Copy', targetId, primary = false }: { text: string; label?: string; targetId?: string; primary?: boolean }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      const el = targetId ? document.getElementById(targetId) : null;
      if (el) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = window.getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
      }
      setState('failed');
    }
    setTimeout(() => setState('idle'), 2500);
  };
  return html`<button type="button" class=${primary ? 'btn btn-copy btn-primary' : 'btn btn-copy'} onClick=${copy}>
    ${state === 'copied' ? 'Copied' : label}
    <span class="visually-hidden" role="status">${state === 'copied' ? 'Copied to the clipboard' : state === 'failed' ? 'Copy is blocked; the text is selected, press Ctrl+C' : ''}</span>
  </button>`;
}

/**
 * Text with hidden characters, and in names look-alike letters, shown as ⟦U+XXXX⟧ markers; the
 * marker says which it is.
 */
export function Revealed({ text, identifier = false }: { text: string; identifier?: boolean }) {
  const [, setReady] = useState(0);
  const onReady = useRef(() => setReady((n) => n + 1)).current;
  useEffect(() => () => void stopWaiting(onReady), []);
  const segs = revealName(text, identifier, onReady);
  return html`${segs.map((s) =>
    'text' in s
      ? s.text
      : html`<mark class="suspicious" data-why=${s.why} title=${s.why === 'lookalike' ? `Looks like a letter of another script: ${s.code}` : `Hidden character ${s.code}`}>⟦${s.code}⟧</mark>`,
  )}`;
}

/**
 * `text` with the same ⟦U+XXXX⟧ markers as plain text, where no element can go (an `<option>`, a
 * dialog's title). A name mixing scripts has its minority script's letters marked.
 */
export function revealedText(text: string, identifier = true): string {
  return revealName(text, identifier, () => {})
    .map((s) => ('text' in s ? s.text : `⟦${s.code}⟧`))
    .join('');
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
function timeAgo(iso?: string | null): string {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((t - Date.now()) / 1000);
  const abs = Math.abs(s);
  if (abs < 45) return 'just now';
  if (abs < 3600) return rtf.format(Math.round(s / 60), 'minute');
  if (abs < 86400) return rtf.format(Math.round(s / 3600), 'hour');
  if (abs < 86400 * 30) return rtf.format(Math.round(s / 86400), 'day');
  return new Date(t).toLocaleDateString();
}

export function When({ iso }: { iso?: string | null }) {
  if (!iso) return html`<span class="muted">never</span>`;
  return html`<time datetime=${iso} title=${new Date(iso).toLocaleString()}>${timeAgo(iso)}</time>`;
}

/** `value` once it has stopped changing for `ms` (a search box's query). */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/** Re-renders every `ms` (countdowns, relative times). */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function PageHeader({ title, lead, children }: { title: string; lead?: ComponentChildren; children?: ComponentChildren }) {
  return html`<header class="page-header">
    <div>
      <h1 tabindex="-1" id="page-title">${title}</h1>
      ${lead && html`<p class="lead">${lead}</p>`}
    </div>
    ${children && html`<div class="page-actions">${children}</div>`}
  </header>`;
}

/** A secret shown once, with a copy button and a plain warning. */
export function ShownOnce({ label, value, id }: { label: string; value: string; id: string }) {
  return html`<div class="shown-once" role="status">
    <p><strong>${label}</strong> — copy it now. It is shown only once.</p>
    <div class="copy-row"><code id=${id} class="mono secret">${value}</code><${CopyButton} text=${value} targetId=${id} /></div>
  </div>`;
}
