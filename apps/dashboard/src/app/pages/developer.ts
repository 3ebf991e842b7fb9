import { useState } from 'preact/hooks';
import {
  ApiError,
  del,
  get,
  post,
  put,
  type Addon,
  type AddonVersionView,
  type ApiKeyInput,
  type CheckReport,
  type CreatedAddon,
  type DeliveryPage,
  type FieldError,
  type Key,
  type NewApiKey,
  type NewSigningSecret,
  type UpdatedAddon,
} from '../api';
import { ConfirmButton, FieldErrors, html, Loaded, Notice, NotAvailable, PageHeader, Revealed, ShownOnce, toApiError, useLoad, When } from '../ui';

const sample = JSON.stringify(
  {
    id: 'notes',
    name: 'Notes',
    description: 'Your notes, searchable.',
    webhook: 'https://notes.example.com/toolport',
    tools: [
      {
        name: 'search_notes',
        title: 'Search notes',
        summary: 'Finds notes containing every word of the query and returns each note\'s id, title and preview.',
        arguments: [{ name: 'query', summary: 'Words to look for.', kind: { text: { maxLength: 200 } }, required: false }],
      },
    ],
  },
  null,
  2,
);

function Warnings({ warnings }: { warnings: FieldError[] }) {
  if (!warnings.length) return html`<p class="small text-ok">No lint warnings.</p>`;
  return html`<ul class="warnings">${warnings.map(({ path, message }) => html`<li>${path && html`<code class="mono">${path}</code> `}${message}</li>`)}</ul>`;
}

function DevNav({ at }: { at: 'addons' | 'keys' }) {
  return html`<nav class="subnav" aria-label="Developer">
    <a href="/developer" aria-current=${at === 'addons' ? 'page' : undefined}>Add-ons</a>
    <a href="/developer/keys" aria-current=${at === 'keys' ? 'page' : undefined}>API keys</a>
  </nav>`;
}

/** Push a manifest: POST for a new add-on, PUT for one of yours (by its id). */
function ManifestForm({ existing, onSaved }: { existing: string[]; onSaved: () => void }) {
  const [text, setText] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [problem, setProblem] = useState('');
  const [result, setResult] = useState<{ id: string; secret?: string; warnings: FieldError[]; updated: boolean } | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setErrors([]);
    setProblem('');
    setResult(null);
    let manifest: any;
    try {
      manifest = JSON.parse(text);
    } catch (err) {
      setProblem(`This is not valid JSON: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const id = manifest && typeof manifest.id === 'string' ? manifest.id : '';
      if (existing.includes(id)) {
        const r = await put<UpdatedAddon>(`/api/addons/${encodeURIComponent(id)}`, manifest);
        setResult({ id, warnings: r.warnings, updated: true });
      } else {
        const r = await post<CreatedAddon>('/api/addons', manifest);
        setResult({ id: r.id, secret: r.signingSecret, warnings: r.warnings, updated: false });
      }
      onSaved();
    } catch (err) {
      const e2 = toApiError(err);
      setProblem(e2.routeMissing ? 'Publishing add-ons is not available yet on this server.' : e2.message);
      setErrors(e2.fieldErrors);
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="push-manifest-h">
    <h2 id="push-manifest-h" class="h3">Push a manifest</h2>
    <p class="muted small">Paste <code>addon.json</code>. A new id creates the add-on; the id of one of yours publishes a new version. Toolport pings the webhook before accepting it.</p>
    <form onSubmit=${submit}>
      <div class="field">
        <label for="manifest">Manifest (JSON)</label>
        <textarea id="manifest" class="mono" rows="14" spellcheck="false" placeholder=${sample} value=${text}
          aria-describedby=${errors.length || problem ? 'manifest-errors' : undefined}
          onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}></textarea>
      </div>
      <div class="row">
        <button class="btn btn-primary" type="submit" disabled=${busy || !text.trim()}>Push manifest</button>
        <button class="btn" type="button" onClick=${() => setText(sample)}>Insert an example</button>
      </div>
    </form>
    <div id="manifest-errors">
      ${problem && html`<${Notice} kind="error">${problem}<${FieldErrors} errors=${errors} /><//>`}
    </div>
    ${result && html`<${Notice} kind="success">${result.updated ? `A new version of ${result.id} is published.` : `${result.id} is created.`}<//>`}
    ${result?.secret && html`<${ShownOnce} label="Signing secret" value=${result.secret} id="new-secret" />`}
    ${result && html`<${Warnings} warnings=${result.warnings} />`}
  </section>`;
}

export function DeveloperPage() {
  const addons = useLoad(() => get<Addon[]>('/api/addons'), []);
  return html`<${PageHeader} title="Developers" lead="Publish add-ons, check them, and read what Toolport delivered to your webhook." />
    <${DevNav} at="addons" />
    <section aria-labelledby="your-addons-h">
      <h2 id="your-addons-h">Your add-ons</h2>
      <${Loaded} state=${addons} what="your add-ons">${() =>
        addons.data!.length === 0
          ? html`<div class="empty">You have not published an add-on yet. Push a manifest below.</div>`
          : html`<ul class="list">${addons.data!.map(
              (a) => html`<li class="card list-item" data-addon=${a.id}>
                <div>
                  <h3><a href=${`/developer/addons/${encodeURIComponent(a.id)}`}><${Revealed} text=${a.name} /></a> <code class="mono small muted">${a.id}</code></h3>
                  <p class="small muted">Version ${a.version} · ${a.visibility} · <span class="mono">${a.webhook}</span></p>
                  ${a.warnings.length ? html`<p class="small text-warn">${a.warnings.length} lint warning${a.warnings.length === 1 ? '' : 's'}</p>` : null}
                </div>
                <a class="btn" href=${`/developer/addons/${encodeURIComponent(a.id)}`} aria-label=${`Open ${a.name}`}>Open</a>
              </li>`,
            )}</ul>`}<//>
    </section>
    <${ManifestForm} existing=${(addons.data ?? []).map((a) => a.id)} onSaved=${() => void addons.reload()} />`;
}

/** What each delivery was, in words (its `type` stays in its details). */
const DELIVERY_KIND: Record<string, string> = {
  'tool.confirm': 'describe the call',
  'tool.progress': 'progress report',
  'tool.answer': 'answer sent later',
  'tools.list': 'which tools to offer a person',
};

/** What a failed attempt came to, by its error class. */
const FAILURE_WORDS: Record<string, string> = {
  timeout: 'No answer in time',
  deadline: 'No answer in time',
  connect: 'Could not connect',
  dns: 'Address not found',
  tls: 'Secure connection failed',
  too_large: 'Answer too large',
  gone: 'Not delivered: webhook off',
  cancelled: 'Cancelled by the app',
  blocked_address: 'Address not allowed',
  bad_url: 'Address not valid',
  redirect: 'Redirected (not followed)',
  protocol: 'Answer not readable',
  bad_answer: 'Answer not readable',
  unavailable: 'Unavailable',
  internal: 'Toolport failed to send it',
  addon_failed: 'Your code failed',
};

type DeliveryRow = DeliveryPage['deliveries'][number];

/** A delivery's outcome in words, and whether it went well: a 200 is not always a success. */
function deliveryOutcome(d: Pick<DeliveryRow, 'type' | 'outcome' | 'errorClass' | 'status'>): { words: string; kind: 'ok' | 'warn' | 'danger' } {
  switch (d.outcome) {
    case 'result': return { words: 'Answered', kind: 'ok' };
    case 'accepted': return { words: 'Took it; answers later', kind: 'ok' };
    case 'confirm': return { words: 'Described the call', kind: 'ok' };
    case 'progress': return { words: 'Reported progress', kind: 'ok' };
    case 'tool_error': return { words: 'The tool reported an error', kind: 'warn' };
    case 'refusal': return { words: 'Refused the call', kind: 'warn' };
    case 'late': return { words: 'Answered too late', kind: 'danger' };
    case 'addon_failed': return { words: 'Your code failed', kind: 'danger' };
    case 'refused': return { words: d.type === 'tools.list' ? 'Its list was not taken' : 'Toolport refused it', kind: 'danger' };
  }
  if (d.errorClass === 'http_status' || (!d.errorClass && d.status && d.status >= 300)) return { words: `Answered HTTP ${d.status ?? 'error'}`, kind: 'danger' };
  if (d.errorClass) return { words: FAILURE_WORDS[d.errorClass] ?? 'Failed', kind: 'danger' };
  return d.status ? { words: 'Answered', kind: 'ok' } : { words: 'No answer', kind: 'danger' };
}

/** What a delivery was, beside its tool: nothing for a call's first attempt, the usual case. */
function kindOf(d: Pick<DeliveryRow, 'type' | 'attempt'>): string {
  const kind = d.type === 'tool.call' ? '' : (DELIVERY_KIND[d.type] ?? 'a delivery');
  const attempt = d.attempt > 1 ? `attempt ${d.attempt}` : '';
  return [kind, attempt].filter(Boolean).join(', ');
}

/** A delivery's time to the second (several come within a minute), with the date when not today. */
function Clock({ iso }: { iso: string }) {
  const t = new Date(iso);
  const today = t.toDateString() === new Date().toDateString();
  const shown = today
    ? t.toLocaleTimeString(undefined, { hour: 'numeric', minute: '2-digit', second: '2-digit' })
    : t.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', second: '2-digit' });
  return html`<time datetime=${iso} title=${t.toLocaleString()}>${shown}</time>`;
}

/** Rows shown at first and added by "Show more": a log of hundreds stays a page a phone can scroll past. */
const DELIVERIES_SHOWN = 10;

function Deliveries({ id }: { id: string }) {
  const [shown, setShown] = useState(DELIVERIES_SHOWN);
  const [more, setMore] = useState<{ rows: DeliveryRow[]; cursor: string | null } | null>(null);
  const [moreError, setMoreError] = useState('');
  const list = useLoad(() => get<DeliveryPage>(`/api/addons/${encodeURIComponent(id)}/deliveries`), [id]);
  const rows = [...(list.data?.deliveries ?? []), ...(more?.rows ?? [])];
  const cursor = more ? more.cursor : (list.data?.nextCursor ?? null);
  const refresh = () => {
    setShown(DELIVERIES_SHOWN);
    setMore(null);
    void list.reload();
  };
  const [fetching, setFetching] = useState(false);
  const showMore = async () => {
    setMoreError('');
    // The next page is read only once the rows loaded are all shown.
    if (shown + DELIVERIES_SHOWN > rows.length && cursor) {
      setFetching(true);
      try {
        const page = await get<DeliveryPage>(`/api/addons/${encodeURIComponent(id)}/deliveries?cursor=${encodeURIComponent(cursor)}`);
        setMore({ rows: [...(more?.rows ?? []), ...page.deliveries], cursor: page.nextCursor });
      } catch (err) {
        setMoreError(toApiError(err).message);
        return;
      } finally {
        setFetching(false);
      }
    }
    setShown((n) => n + DELIVERIES_SHOWN);
  };
  return html`<section class="card" aria-labelledby="deliveries-h">
    <div class="row-between"><h2 id="deliveries-h" class="h3">Delivery log</h2><button type="button" class="btn btn-small" onClick=${refresh}>Refresh</button></div>
    <${Loaded} state=${list} what="the delivery log">${() =>
      rows.length === 0
        ? html`<p class="muted">No deliveries yet.</p>`
        : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Deliveries"><table class="deliveries">
            <caption class="visually-hidden">What Toolport delivered to your webhook, newest first</caption>
            <thead><tr><th scope="col">When</th><th scope="col">Tool</th><th scope="col">Outcome</th><th scope="col" class="num">Latency</th><th scope="col"><span class="visually-hidden">Details</span></th></tr></thead>
            <tbody>${rows.slice(0, shown).map((d) => {
              const o = deliveryOutcome(d);
              return html`<tr data-delivery=${d.id} data-call=${d.callId}>
                <td class="d-when"><${Clock} iso=${d.createdAt} /></td>
                <td class="d-tool"><strong>${d.toolTitle ? html`<${Revealed} text=${d.toolTitle} identifier />` : 'Tool list'}</strong>
                  ${kindOf(d) ? html` <span class="small muted d-kind">${kindOf(d)}</span>` : null}</td>
                <td class="d-outcome"><span class=${`badge badge-${o.kind}`} data-outcome=${d.outcome ?? d.errorClass ?? ''}>${o.words}</span>${d.detail ? html`<div class="small muted d-detail"><${Revealed} text=${d.detail} /></div>` : null}</td>
                <td class="num d-latency">${typeof d.latencyMs === 'number' ? `${d.latencyMs} ms` : '—'}</td>
                <td class="d-more"><details class="fold delivery-more"><summary class="small">Details</summary>
                  <dl class="facts small">
                    <div><dt>Call id</dt><dd class="mono break">${d.callId}</dd></div>
                    <div><dt>Type</dt><dd class="mono">${d.type}</dd></div>
                    <div><dt>Attempt</dt><dd>${d.attempt}</dd></div>
                    ${d.status ? html`<div><dt>HTTP status</dt><dd>${d.status}</dd></div>` : null}
                    ${d.errorClass ? html`<div><dt>Error class</dt><dd class="mono">${d.errorClass}</dd></div>` : null}
                    ${d.tool ? html`<div><dt>Tool name</dt><dd class="mono">${d.tool}</dd></div>` : null}
                    ${d.subject ? html`<div><dt>Person</dt><dd class="mono break">${d.subject}</dd></div>` : null}
                    ${d.detail ? html`<div><dt>Detail</dt><dd><${Revealed} text=${d.detail} /></dd></div>` : null}
                  </dl></details></td>
              </tr>`;
            })}</tbody></table></div>
            ${moreError ? html`<${Notice} kind="error">${moreError}<//>` : null}
            ${shown < rows.length || cursor ? html`<button type="button" class="btn btn-block deliveries-more" disabled=${fetching} onClick=${showMore}>Show older deliveries</button>` : null}`}<//>
  </section>`;
}

const sampleScript = (tool: string) => JSON.stringify([{ tool, arguments: {} }], null, 2);

function CheckRunner({ addon }: { addon: Addon }) {
  const first = addon.tools[0]?.name ?? 'tool_name';
  const [text, setText] = useState(sampleScript(first));
  const [report, setReport] = useState<CheckReport | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setReport(null);
    let script: unknown;
    try {
      script = JSON.parse(text);
    } catch (err) {
      setError(new ApiError(0, `The script is not valid JSON: ${(err as Error).message}`));
      return;
    }
    setBusy(true);
    try {
      setReport(await post<CheckReport>(`/api/addons/${encodeURIComponent(addon.id)}/check`, script));
    } catch (err) {
      setError(toApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="check-h">
    <h2 id="check-h" class="h3">Check script</h2>
    <p class="muted small">Calls your tools the way an app would — same validation, approval and delivery — as your own test user. Steps: <code>{"tool", "arguments", "approve": "allow" | "deny" | "timeout"}</code> or <code>{"wait": seconds}</code>.</p>
    <form onSubmit=${run}>
      <div class="field"><label for="check-script">Script (JSON)</label>
        <textarea id="check-script" class="mono" rows="8" spellcheck="false" value=${text} onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}></textarea></div>
      <button class="btn btn-primary" type="submit" disabled=${busy}>${busy ? 'Running…' : 'Run check'}</button>
    </form>
    ${error && (error.routeMissing ? html`<${NotAvailable} what="the check runner" />` : html`<${Notice} kind="error">${error.message}<${FieldErrors} errors=${error.fieldErrors} /><//>`)}
    ${report && html`<ol class="report">${report.tools.map((r) => html`<li class=${'refused' in r ? 'refused' : 'passed'}>
      <code class="mono">${r.tool}</code> ${'refused' in r ? html`<span class="badge badge-danger">refused</span> <${Revealed} text=${r.refused} />` : html`<span class="badge badge-ok">result</span>`}
      ${'result' in r && html`<pre class="mono small"><${Revealed} text=${JSON.stringify(r.result, null, 2) ?? ''} /></pre>`}
    </li>`)}</ol>`}
  </section>`;
}

/** Versions listed before "older versions". */
const VERSIONS_SHOWN = 3;

export function AddonDetailPage({ id }: { id: string }) {
  const addon = useLoad(() => get<Addon>(`/api/addons/${encodeURIComponent(id)}`), [id]);
  const versions = useLoad(() => get<AddonVersionView[]>(`/api/addons/${encodeURIComponent(id)}/versions`), [id]);
  const [secret, setSecret] = useState('');
  const rotate = async () => {
    const r = await post<NewSigningSecret>(`/api/addons/${encodeURIComponent(id)}/secret`);
    setSecret(r.signingSecret);
  };
  return html`<${PageHeader} title=${addon.data?.name ?? id} lead=${html`<a href="/developer">← All your add-ons</a>`} />
    <${Loaded} state=${addon} what="this add-on">${() => {
      const a = addon.data!;
      return html`<section class="card" aria-labelledby="about-h">
          <h2 id="about-h" class="h3">About</h2>
          <dl class="facts">
            <div><dt>Id</dt><dd class="mono">${a.id}</dd></div>
            <div><dt>Version</dt><dd>${a.version}</dd></div>
            <div><dt>Visibility</dt><dd>${a.visibility}</dd></div>
            <div><dt>Webhook</dt><dd class="mono break">${a.webhook}</dd></div>
            <div><dt>Tools</dt><dd>${a.tools.map((t) => html`<code class="mono tag">${t.name}</code>${t.destructive ? html`<span class="badge badge-danger">destructive</span>` : null} `)}</dd></div>
          </dl>
          <h3 class="small-h">Lint</h3>
          <${Warnings} warnings=${a.warnings} />
        </section>
        <section class="card" aria-labelledby="secret-h">
          <div class="row-between">
            <div><h2 id="secret-h" class="h3">Signing secret</h2><p class="muted small">A new secret signs from now on; the old one keeps signing alongside for 24 hours.</p></div>
            <${ConfirmButton} label="Rotate secret" title="Rotate the signing secret?" body=${html`<p>Update your webhook to accept the new secret within 24 hours; after that only the new one signs.</p>`} confirmLabel="Rotate" onConfirm=${rotate} />
          </div>
          ${secret && html`<${ShownOnce} label="New signing secret" value=${secret} id="rotated-secret" />`}
        </section>
        <section class="card" aria-labelledby="versions-h">
          <h2 id="versions-h" class="h3">Versions</h2>
          <${Loaded} state=${versions} what="versions">${() => {
            const version = (v: AddonVersionView) => html`<li class="list-item small" data-version=${v.version}><span>Version ${v.version}${v.notes ? html` · <span class="muted">${v.notes}</span>` : null}</span><span class="muted"><${When} iso=${v.createdAt} /> · ${v.warnings.length} warnings · accepted by ${v.acceptedBy} install${v.acceptedBy === 1 ? '' : 's'}</span></li>`;
            const all = versions.data!;
            // A dev loop pushes a release at every save: the newest few, the rest folded.
            return html`<ul class="list compact">${all.slice(0, VERSIONS_SHOWN).map(version)}</ul>
              ${all.length > VERSIONS_SHOWN ? html`<details class="fold older-versions"><summary class="small">${all.length - VERSIONS_SHOWN} older version${all.length - VERSIONS_SHOWN === 1 ? '' : 's'}</summary><ul class="list compact">${all.slice(VERSIONS_SHOWN).map(version)}</ul></details>` : null}`;
          }}<//>
        </section>
        <${CheckRunner} addon=${a} />
        <${Deliveries} id=${a.id} />`;
    }}<//>`;
}

export function KeysPage() {
  const keys = useLoad(() => get<Key[]>('/api/keys'), []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState('');
  const create = async (e: Event) => {
    e.preventDefault();
    setError('');
    setErrors([]);
    try {
      const r = await post<NewApiKey>('/api/keys', { name } satisfies ApiKeyInput);
      setCreated(r);
      setName('');
      await keys.reload();
    } catch (err) {
      const e2 = toApiError(err);
      setError(e2.message);
      setErrors(e2.fieldErrors);
    }
  };
  const revoke = async (k: Key) => {
    await del(`/api/keys/${encodeURIComponent(k.id)}`);
    if (created?.id === k.id) setCreated(null);
    keys.setData((l) => (l ?? []).filter((x) => x.id !== k.id));
  };
  return html`<${PageHeader} title="Developers" lead="API keys let the CLI and your scripts use the developer API." />
    <${DevNav} at="keys" />
    <section class="card" aria-labelledby="new-key-h">
      <h2 id="new-key-h" class="h3">Create an API key</h2>
      <form class="row" onSubmit=${create}>
        <div class="field grow"><label for="key-name">Name</label>
          <input id="key-name" name="name" maxlength="60" required placeholder="e.g. laptop CLI" value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} /></div>
        <button class="btn btn-primary align-end" type="submit" disabled=${!name.trim()}>Create key</button>
      </form>
      ${error && html`<${Notice} kind="error">${error}<${FieldErrors} errors=${errors} /><//>`}
      ${created && html`<${ShownOnce} label="Your new API key" value=${created.key} id="new-key" />`}
      ${created && html`<p class="small muted">Use it as <code class="mono">Authorization: Bearer ${created.key.slice(0, 8)}…</code></p>`}
    </section>
    <section aria-labelledby="keys-h">
      <h2 id="keys-h">Active keys</h2>
      <${Loaded} state=${keys} what="API keys">${() =>
        keys.data!.length === 0
          ? html`<div class="empty">No keys yet.</div>`
          : html`<ul class="list">${keys.data!.map((k) => html`<li class="card list-item" data-key=${k.id}>
              <div><h3 class="h4"><${Revealed} text=${k.name} /></h3>
                <p class="small muted"><code class="mono">${k.hint ?? 'tpk_'}…</code> · created <${When} iso=${k.createdAt} /> · last used <${When} iso=${k.lastUsedAt} /></p></div>
              <${ConfirmButton} label="Revoke" ariaLabel=${`Revoke key ${k.name}`} danger title=${`Revoke “${k.name}”?`} body=${html`<p>Anything using this key stops working at once.</p>`} confirmLabel="Revoke key" onConfirm=${() => revoke(k)} />
            </li>`)}</ul>`}<//>
    </section>`;
}

