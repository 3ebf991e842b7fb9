import { useState } from 'preact/hooks';
import type { ArgumentChange, PendingUpdate, ToolChange } from '../api';
import { schemaInWords } from '../schema-words';
import { html, Notice, Revealed } from '../ui';

const FIELD_LABEL: Record<string, string> = {
  title: 'Title', summary: 'Summary', destructive: 'Asks you first', readOnly: 'Read-only', confirm: 'Describes calls first', alwaysAsk: 'Always asks you',
  idempotent: 'Safe to repeat', openWorld: 'Reaches beyond its own data', outputSchema: 'What it returns',
};

/** A field's value in words: a schema (what it returns) as schemaInWords says it, never as JSON. */
const shown = (field: string, v: unknown) =>
  typeof v === 'boolean' ? (v ? 'yes' : 'no') : v === null || v === undefined ? 'not said' : field === 'outputSchema' || typeof v === 'object' ? schemaInWords(v) : String(v);

/** One argument as the person reads it: its description and its kind in words, hidden characters revealed. */
function ArgumentText({ schema, required }: { schema: unknown; required?: boolean }) {
  const description = (schema as { description?: unknown } | null)?.description;
  return html`${typeof description === 'string' && description ? html`<${Revealed} text=${description} /> ` : null}<span class="muted small" data-kind>${required === false ? 'optional · ' : ''}<${Revealed} text=${schemaInWords(schema)} /></span>`;
}

function ArgumentRow({ a }: { a: ArgumentChange }) {
  // `(schema)`: what changed is not one argument but the rules of them all (which extra keys are taken).
  const whole = a.name === '(schema)';
  const what = whole ? 'The arguments as a whole changed' : a.change === 'added' ? 'New argument' : a.change === 'removed' ? 'Argument removed' : 'Argument changed';
  return html`<li data-argument=${a.name}>
    <strong>${what}</strong>${whole ? null : html` <code class="mono"><${Revealed} text=${a.name} identifier /></code>`}
    ${a.change === 'changed'
      ? html`<div class="diff"><div class="diff-old"><span class="visually-hidden">Before: </span><${ArgumentText} schema=${a.before} required=${a.requiredBefore} /></div><div class="diff-new"><span class="visually-hidden">After: </span><${ArgumentText} schema=${a.after} required=${a.requiredAfter} /></div></div>`
      : a.change === 'added'
        ? html`<div class="diff-new"><${ArgumentText} schema=${a.after} required=${a.requiredAfter} /></div>`
        : html`<div class="diff-old"><${ArgumentText} schema=${a.before} required=${a.requiredBefore} /></div>`}
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
          <tbody>${t.fields.map((f) => html`<tr data-field=${f.field}><th scope="row">${FIELD_LABEL[f.field] ?? f.field}</th><td class="diff-old"><${Revealed} text=${shown(f.field, f.before)} /></td><td class="diff-new"><${Revealed} text=${shown(f.field, f.after)} /></td></tr>`)}</tbody></table>`
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
