import { useState } from 'preact/hooks';
import { get, post, type ListingDecisionInput, type ListingView } from '../api';
import { html, Loaded, Notice, PageHeader, Revealed, toApiError, useLoad } from '../ui';

/** The review queue of public listings, for operators (TOOLPORT_OPERATORS): approve, reject, delist. */
export function OperatorPage() {
  const [all, setAll] = useState(false);
  const listings = useLoad(() => get<ListingView[]>(`/api/operator/listings${all ? '?status=all' : ''}`), [all]);
  const [reasons, setReasons] = useState<Record<string, string>>({});
  // The publisher's name as the operator checked it (the catalog shows it): the developer's own at first.
  const [names, setNames] = useState<Record<string, string>>({});
  const nameOf = (l: ListingView) => names[l.addonId] ?? l.publisher.name ?? '';
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  const decide = async (l: ListingView, decision: ListingDecisionInput['decision']) => {
    setError('');
    try {
      const reason = reasons[l.addonId]?.trim();
      const publisher = decision === 'approve' ? nameOf(l).trim() : '';
      await post(`/api/operator/listings/${encodeURIComponent(l.addonId)}/decision`, { decision, ...(reason ? { reason } : {}), ...(publisher ? { publisher } : {}) } satisfies ListingDecisionInput);
      setMessage(`${l.name}: ${decision === 'approve' ? `listed, by ${publisher}` : decision === 'reject' ? 'request rejected' : 'delisted; its tools are off for every app'}.`);
      await listings.reload();
    } catch (err) {
      setError(toApiError(err).message);
    }
  };
  return html`<${PageHeader} title="Listings" lead="Add-ons whose developers asked to list them publicly. Until you approve, only their developer can install them." />
    ${message && html`<${Notice} kind="success">${message}<//>`}
    ${error && html`<${Notice} kind="error">${error}<//>`}
    <p><label class="inline"><input type="checkbox" checked=${all} onChange=${(e: Event) => setAll((e.target as HTMLInputElement).checked)} /> Show decided listings too</label></p>
    <${Loaded} state=${listings} what="the listings">${() =>
      listings.data!.length === 0
        ? html`<div class="empty" data-empty="listings">No listing is waiting for review.</div>`
        : html`<div class="stack">${listings.data!.map(
            (l) => html`<article class="card" data-listing=${l.addonId} aria-labelledby=${`lst-${l.addonId}`}>
              <h2 id=${`lst-${l.addonId}`}><${Revealed} text=${l.name} /> <code class="mono small muted"><${Revealed} text=${l.addonId} identifier /></code> <span class="badge">${l.status}</span></h2>
              <p class="muted"><${Revealed} text=${l.description} /></p>
              <p class="small">${l.publisher.name ? html`Published by <strong><${Revealed} text=${l.publisher.name} /></strong>` : 'Published by a developer who gave no name: give it below to approve'}${l.publisher.emailConfirmed ? '' : ' (email not confirmed yet: the listing can be approved once it is)'}; webhook on <code class="mono">${l.publisher.webhookHost}</code>. Release ${l.version}, ${l.installs} install${l.installs === 1 ? '' : 's'}.</p>
              ${l.reason ? html`<p class="small muted">Reason given: <${Revealed} text=${l.reason} /></p>` : null}
              ${l.status === 'pending'
                ? html`<label class="small" for=${`name-${l.addonId}`}>Publisher name</label>
                  <input id=${`name-${l.addonId}`} class="input" maxlength="60" value=${nameOf(l)} aria-describedby=${`name-hint-${l.addonId}`}
                    onInput=${(e: Event) => setNames({ ...names, [l.addonId]: (e.target as HTMLInputElement).value })} />
                  <p class="hint" id=${`name-hint-${l.addonId}`}>Everyone reads it in the catalog as who makes this add-on: check it is the developer's real name.</p>`
                : null}
              ${l.status === 'pending' || l.status === 'approved'
                ? html`<label class="small" for=${`why-${l.addonId}`}>Reason (shown to the developer)</label>
                  <input id=${`why-${l.addonId}`} class="input" maxlength="500" value=${reasons[l.addonId] ?? ''} onInput=${(e: Event) => setReasons({ ...reasons, [l.addonId]: (e.target as HTMLInputElement).value })} />
                  <div class="actions">
                    ${l.status === 'pending'
                      ? html`<button type="button" class="btn btn-primary" aria-label=${`Approve ${l.name}`} onClick=${() => decide(l, 'approve')}>Approve</button>
                        <button type="button" class="btn" aria-label=${`Reject ${l.name}`} onClick=${() => decide(l, 'reject')}>Reject</button>`
                      : null}
                    <button type="button" class="btn btn-danger" aria-label=${`Delist ${l.name}`} onClick=${() => decide(l, 'delist')}>Delist</button>
                  </div>`
                : null}
            </article>`,
          )}</div>`}<//>`;
}
