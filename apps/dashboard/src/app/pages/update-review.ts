import { useState } from 'preact/hooks';
import type { ArgumentChange, PendingUpdate, ToolChange } from '../api';
import { html, Notice, Revealed } from '../ui';

const FIELD_LABEL: Record<string, string> = {
  title: 'Title', summary: 'Summary', destructive: 'Asks you first', readOnly: 'Read-only', confirm: 'Describes calls first', alwaysAsk: 'Always asks you',
  idempotent: 'Safe to repeat', openWorld: 'Reaches beyond its own data', outputSchema: 'What it returns (schema)',
};

const shown = (v: unknown) =>
  typeof v === 'boolean' ? (v ? 'yes' : 'no') : v === null || v === undefined ? 'not said' : typeof v === 'object' ? JSON.stringify(v) : String(v);

/** One argument as the person reads it: its description and its kind, hidden characters revealed. */
function ArgumentText({ schema }: { schema: unknown }) {
  const s = (schema ?? {}) as Record<string, unknown>;
  const { description, required, ...rest } = s;
  return html`${typeof description === 'string' && description ? html`<${Revealed} text=${description} /> ` : null}<span class="muted small">${required === false ? 'optional · ' : ''}<code class="mono"><${Revealed} text=${JSON.stringify(rest)} /></code></span>`;
}

function ArgumentRow({ a }: { a: ArgumentChange }) {
  const what = a.change === 'added' ? 'New argument' : a.change === 'removed' ? 'Argument removed' : 'Argument changed';
  return html`<li data-argument=${a.name}>
    <strong>${what}</strong> <code class="mono"><${Revealed} text=${a.name} identifier /></code>
    ${a.change === 'changed'
      ? html`<div class="diff"><div class="diff-old"><span class="visually-hidden">Before: </span><${ArgumentText} schema=${a.before} /></div><div class="diff-new"><span class="visually-hidden">After: </span><${ArgumentText} schema=${a.after} /></div></div>`
      : html`<div class=${a.change === 'added' ? 'diff-new' : 'diff-old'}><${ArgumentText} schema=${a.change === 'added' ? a.after : a.before} /></div>`}
  </li>`;
}

function ToolChangeView({ t }: { t: ToolChange }) {
  const name = t.after?.title ?? t.before?.title ?? t.name;
  if (t.change === 'added') {
    return html`<li class="change" data-change="added" data-tool=${t.name}><strong>New tool:</strong> <${Revealed} text=${name} /> <span class="muted small">· starts switched off</span></li>`;
  }
  if (t.change === 'removed') {
    return html`<li class="change" data-change="removed" data-tool=${t.name}><strong>Removed:</strong> <${Revealed} text=${name} /> <span class="muted small">· switched off; if it comes back it starts off</span></li>`;
  }
  return html`<li class="change" data-change="changed" data-tool=${t.name}>
    <strong>Changed:</strong> <${Revealed} text=${t.before?.title ?? t.name} />
    ${t.lessSafe.length ? html`<${Notice} kind="error"><strong>Less safe.</strong> ${t.lessSafe.join(' ')}<//>` : null}
    ${t.fields.length
      ? html`<table class="diff-table"><thead><tr><th scope="col">What</th><th scope="col">Now (what apps see)</th><th scope="col">In the update</th></tr></thead>
          <tbody>${t.fields.map((f) => html`<tr data-field=${f.field}><th scope="row">${FIELD_LABEL[f.field] ?? f.field}</th><td class="diff-old"><${Revealed} text=${shown(f.before)} /></td><td class="diff-new"><${Revealed} text=${shown(f.after)} /></td></tr>`)}</tbody></table>`
      : null}
    ${t.arguments.length ? html`<ul class="arguments">${t.arguments.map((a) => html`<${ArgumentRow} a=${a} />`)}</ul>` : null}
  </li>`;
}

/**
 * "Notes has an update": what the release changes in the tools this person switched on, field by
 * field. Until they accept, apps keep the definitions they accepted; keeping the old version only
 * folds this away (it comes back with the next visit).
 */
export function UpdateReview({ addonName, update, onAccept }: { addonName: string; update: PendingUpdate; onAccept: (version: number) => Promise<void> }) {
  const [kept, setKept] = useState(false);
  const [busy, setBusy] = useState(false);
  const lessSafe = update.tools.some((t) => t.lessSafe.length);
  if (kept) {
    return html`<p class="small muted" data-update-kept>Apps keep the version you accepted. <button type="button" class="btn btn-link" onClick=${() => setKept(false)}>Review the update</button></p>`;
  }
  return html`<section class=${`update ${lessSafe ? 'update-unsafe' : ''}`} data-update=${update.to} aria-label=${`${addonName} has an update`}>
    <h4><${Revealed} text=${addonName} /> has an update</h4>
    <p class="small muted">Release ${update.to}, published ${new Date(update.publishedAt).toLocaleDateString()}. Until you accept it, your apps keep what you switched on (release ${update.from}).</p>
    ${update.notes ? html`<blockquote class="release-notes"><${Revealed} text=${update.notes} /></blockquote>` : null}
    <ul class="changes">${update.tools.map((t) => html`<${ToolChangeView} t=${t} />`)}</ul>
    <div class="actions">
      <button type="button" class="btn btn-primary" disabled=${busy} onClick=${async () => {
        setBusy(true);
        try {
          await onAccept(update.to);
        } finally {
          setBusy(false);
        }
      }}>Accept update</button>
      <button type="button" class="btn" onClick=${() => setKept(true)}>Keep the old version</button>
    </div>
  </section>`;
}
