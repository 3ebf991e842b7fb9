import { useEffect, useId, useLayoutEffect, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiError, del, get, post, type AccountLink, type ConnectedAccount, type Disconnected, type InstallAccount } from '../api';
import { useQueryParam } from '../router';
import { ConfirmButton, html, LiveNotice, Loaded, Notice, PageHeader, Revealed, toApiError, useLoad } from '../ui';

/**
 * Connected accounts (manifest `accounts`): the person's accounts at other services that an add-on
 * acts on. The Accounts section of an add-on's page connects, reconnects and disconnects each one;
 * the Connected accounts page lists them all. No token ever reaches the dashboard.
 */

const enc = encodeURIComponent;
const accountPath = (addonId: string, provider: string) => `/api/installs/${enc(addonId)}/accounts/${enc(provider)}`;

/** Asks Toolport for the provider's authorization address and goes there; the provider sends the person back. */
async function goToProvider(addonId: string, provider: string) {
  const { authorizationUrl } = await post<AccountLink>(`${accountPath(addonId, provider)}/connect`, {});
  const url = new URL(authorizationUrl);
  // Only a web address: never a javascript: or data: URL, whatever the answer says.
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ApiError(0, 'Toolport answered with an address the dashboard cannot open. Try again later.');
  location.href = url.href;
}

/** Disconnects; an account already gone (another tab, an uninstall) counts as disconnected. */
async function disconnect(addonId: string, provider: string): Promise<Disconnected | 'gone'> {
  try {
    return await del<Disconnected>(accountPath(addonId, provider));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && !err.routeMissing) return 'gone';
    throw err;
  }
}

/** What disconnecting did at the provider, in a sentence. */
function disconnected(title: string, addonName: string, result: Disconnected | 'gone'): ComponentChildren {
  const t = html`<${Revealed} text=${title} identifier />`;
  const a = html`<${Revealed} text=${addonName} />`;
  if (result === 'gone') return html`${t} was already disconnected from ${a}.`;
  if (result.revoked === true) return html`${t} is disconnected from ${a}, and ${t} confirmed it revoked the access.`;
  if (result.revoked === false) {
    return html`${t} is disconnected from ${a}: Toolport no longer holds its token, but ${t} did not confirm it revoked the access. To be sure, remove the access in your ${t} account’s settings.`;
  }
  return html`${t} is disconnected from ${a}: Toolport no longer holds its token. ${t} offers no way to revoke it from here, so remove the access in your ${t} account’s settings.`;
}

function Since({ iso }: { iso: string | null }) {
  if (!iso) return null;
  const d = new Date(iso);
  return html` <span class="muted">since <time datetime=${iso} title=${d.toLocaleString()}>${d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}</time></span>`;
}

function Status({ status, connectedAt, failure }: { status: InstallAccount['status']; connectedAt: string | null; failure: string | null }) {
  if (status === 'connected') return html`<p class="small" data-account-status="connected"><span class="badge badge-ok">Connected</span><${Since} iso=${connectedAt} /></p>`;
  if (status === 'failed') {
    return html`<p class="small" data-account-status="failed"><span class="badge badge-warn">Needs reconnecting</span></p>
      ${failure ? html`<p class="small text-warn" data-account-failure>${failure}</p>` : null}`;
  }
  return html`<p class="small" data-account-status="none"><span class="badge">Not connected</span></p>`;
}

/** The scopes an add-on asks the provider for, as the person reads them. */
function Scopes({ title, scopes }: { title: string; scopes: string[] }) {
  const t = html`<${Revealed} text=${title} identifier />`;
  if (!scopes.length) return html`<p class="small muted">Asks ${t} for no particular permissions.</p>`;
  return html`<p class="small muted">Asks ${t} for: ${scopes.map((s, i) => html`${i ? ', ' : ''}<code class="mono">${s}</code>`)}.</p>`;
}

function AccountRow({ addonId, addonName, account: a, asked, onDisconnect }: {
  addonId: string;
  addonName: string;
  account: InstallAccount;
  /** A tool's error linked here (`?connect=`): the person came for this account. */
  asked: boolean;
  onDisconnect: (a: InstallAccount) => Promise<void>;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const headingId = useId();
  const unreadyId = useId();
  // Back from the provider's page with the browser's Back button, this page may be restored as it was left.
  useEffect(() => {
    const shown = (e: PageTransitionEvent) => e.persisted && setBusy(false);
    window.addEventListener('pageshow', shown);
    return () => window.removeEventListener('pageshow', shown);
  }, []);
  const linked = a.status !== null;
  // The button is never disabled outright (aria-disabled): focus stays on it while it works, and a
  // screen reader still finds it, with the reason it cannot be used.
  const verb = linked ? 'Reconnect' : 'Connect';
  const start = async () => {
    if (busy || !a.ready) return;
    setBusy(true);
    setError('');
    try {
      await goToProvider(addonId, a.provider);
    } catch (err) {
      setError(toApiError(err).message);
      setBusy(false);
    }
  };
  return html`<li class=${`provider${asked ? ' provider-asked' : ''}`} data-account=${a.provider} aria-labelledby=${headingId}>
    <div class="provider-text">
      <h3 class="h4" id=${headingId} tabindex="-1"><${Revealed} text=${a.title} identifier /></h3>
      ${asked && a.status !== 'connected' ? html`<p class="small"><strong>A tool you used needs this account.</strong> ${linked ? 'Reconnect' : 'Connect'} it, then ask your AI app to try again.</p>` : null}
      <${Status} status=${a.status} connectedAt=${a.connectedAt} failure=${a.failure} />
      <${Scopes} title=${a.title} scopes=${a.scopes} />
      ${a.ready ? null : html`<p class="small text-warn" id=${unreadyId}>The developer of <${Revealed} text=${addonName} /> has not set up <${Revealed} text=${a.title} identifier /> yet.</p>`}
      ${error && html`<${Notice} kind="error">${error}<//>`}
    </div>
    <div class="provider-actions">
      <button type="button" class=${a.status === 'connected' ? 'btn' : 'btn btn-primary'} data-primary
        aria-label=${`${verb} ${a.title}`} aria-describedby=${a.ready ? undefined : unreadyId}
        aria-disabled=${!a.ready || busy ? 'true' : undefined} aria-busy=${busy ? 'true' : undefined} onClick=${start}>${busy ? `${verb}ing…` : verb}</button>
      ${linked
        ? html`<${ConfirmButton} label="Disconnect" ariaLabel=${`Disconnect ${a.title}`} danger title=${`Disconnect ${a.title}?`}
            body=${html`<p><${Revealed} text=${addonName} /> can no longer act on your <${Revealed} text=${a.title} identifier /> account, and its tools that need it stop until you connect it again. Toolport asks <${Revealed} text=${a.title} identifier /> to revoke the access.</p>`}
            confirmLabel="Disconnect" onConfirm=${() => onDisconnect(a)} />`
        : null}
    </div>
  </li>`;
}

/**
 * The Accounts section of an installed add-on's page, one row per provider its release declares;
 * nothing when it declares none. `?connect=` (the link a tool's error gives) scrolls to, focuses and
 * highlights that provider; `?connected=` (back from the provider) says it worked.
 */
export function InstallAccounts({ addonId, addonName }: { addonId: string; addonName: string }) {
  const state = useLoad(() => get<InstallAccount[]>(`/api/installs/${enc(addonId)}/accounts`), [addonId]);
  const asked = useQueryParam('connect');
  const back = useQueryParam('connected');
  const [message, setMessage] = useState<ComponentChildren>(null);
  const [refocus, setRefocus] = useState<string | null>(null);
  const headingId = useId();
  const list = state.data;
  const loaded = list !== undefined;
  const target = asked ?? back;

  useEffect(() => {
    if (!list || !back) return;
    const a = list.find((x) => x.provider === back);
    if (a?.status === 'connected') setMessage(html`<${Revealed} text=${a.title} identifier /> is connected. <${Revealed} text=${addonName} /> can now use your <${Revealed} text=${a.title} identifier /> account.`);
    // Said once: a reload of the page does not say it again.
    const url = new URL(location.href);
    url.searchParams.delete('connected');
    history.replaceState(history.state, '', url.pathname + url.search);
  }, [loaded, back]);

  useEffect(() => {
    if (!list || !target) return;
    const row = document.querySelector<HTMLElement>(`[data-account="${CSS.escape(target)}"]`);
    if (!row) return;
    row.scrollIntoView({ block: 'center' });
    row.querySelector<HTMLElement>('h3')?.focus({ preventScroll: true });
  }, [loaded, target]);

  // Focus moves in the same task that replaced the Disconnect button, never resting on <body>.
  useLayoutEffect(() => {
    if (!refocus) return;
    document.querySelector<HTMLElement>(`[data-account="${CSS.escape(refocus)}"] [data-primary]`)?.focus();
    setRefocus(null);
  }, [refocus]);

  const onDisconnect = async (a: InstallAccount) => {
    const result = await disconnect(addonId, a.provider);
    setMessage(disconnected(a.title, addonName, result));
    state.setData((l) => (l ?? []).map((x) => (x.provider === a.provider ? { ...x, connected: false, status: null, failure: null, connectedAt: null, refreshedAt: null } : x)));
    setRefocus(a.provider);
  };

  // An older API (mid-deploy) or an add-on no longer installed: no section at all.
  const quiet = state.error && (state.error.routeMissing || state.error.status === 404);
  const unknown = asked && list && !list.some((a) => a.provider === asked);
  return html`<${LiveNotice}>${message}<//>
    ${unknown ? html`<${Notice} kind="warning"><${Revealed} text=${addonName} /> no longer asks for an account called “${asked}”. If a tool still says it needs one, its developer has to fix the add-on.<//>` : null}
    ${state.error && !quiet
      ? html`<section class="card" aria-labelledby=${headingId}><h2 id=${headingId} class="h3">Accounts</h2><${Notice} kind="error">${state.error.message}<//></section>`
      : list?.length
        ? html`<section class="card" aria-labelledby=${headingId} data-accounts=${addonId}>
            <div class="row-between">
              <h2 id=${headingId} class="h3">Accounts</h2>
              <a class="small" href="/accounts">All your connected accounts</a>
            </div>
            <p class="small muted">Connect your account at each service <${Revealed} text=${addonName} /> works with. Your password stays with the service; Toolport keeps the access encrypted and gives the add-on a fresh token with each call that needs it.</p>
            <ul class="providers">${list.map((a) => html`<${AccountRow} key=${a.provider} addonId=${addonId} addonName=${addonName} account=${a} asked=${a.provider === asked} onDisconnect=${onDisconnect} />`)}</ul>
          </section>`
        : null}`;
}

/** Every account the person connected, across add-ons: what each is for, its state, and Disconnect. */
export function ConnectedAccountsPage() {
  const list = useLoad(() => get<ConnectedAccount[]>('/api/accounts'), []);
  const [message, setMessage] = useState<ComponentChildren>(null);
  const [refocus, setRefocus] = useState<number | null>(null);

  // The row is gone: focus goes to the one that took its place, the one before, or the heading.
  useLayoutEffect(() => {
    if (refocus === null) return;
    const rows = [...document.querySelectorAll<HTMLElement>('[data-connected-account]')];
    const row = rows[Math.min(refocus, rows.length - 1)];
    (row?.querySelector<HTMLElement>('[data-disconnect] button') ?? document.getElementById('page-title'))?.focus();
    setRefocus(null);
  }, [refocus]);

  const onDisconnect = async (c: ConnectedAccount, index: number) => {
    const result = await disconnect(c.addonId, c.provider);
    setMessage(disconnected(c.title, c.addonName, result));
    list.setData((l) => (l ?? []).filter((x) => !(x.addonId === c.addonId && x.provider === c.provider)));
    setRefocus(index);
  };

  return html`<${PageHeader} title="Connected accounts" lead="Your accounts at other services that add-ons act on for you. Disconnecting one ends the add-on’s access at once and asks the service to revoke it." />
    <${LiveNotice}>${message}<//>
    <${Loaded} state=${list} what="connected accounts">${() =>
      list.data!.length === 0
        ? html`<div class="empty" data-empty="accounts">No account is connected. When an add-on works with your account at another service, such as your calendar or your repositories, you connect it on the add-on’s page in <a href="/addons">Add-ons</a>.</div>`
        : html`<ul class="list stack">${list.data!.map((c, i) => html`<li class="card linked-account" key=${`${c.addonId}/${c.provider}`} data-connected-account=${`${c.addonId}/${c.provider}`}>
            <div class="provider-text">
              <h2 class="h3"><${Revealed} text=${c.title} identifier /></h2>
              <p class="small">For <a href=${`/addons/${enc(c.addonId)}`}><${Revealed} text=${c.addonName} /></a></p>
              <${Status} status=${c.status} connectedAt=${c.connectedAt} failure=${c.failure} />
              ${c.scope ? html`<p class="small muted">Access granted: ${c.scope.split(' ').filter(Boolean).map((s, j) => html`${j ? ', ' : ''}<code class="mono">${s}</code>`)}.</p>` : null}
            </div>
            <div class="provider-actions" data-disconnect>
              ${c.status === 'failed' ? html`<a class="btn btn-primary" href=${`/addons/${enc(c.addonId)}?connect=${enc(c.provider)}`} aria-label=${`Reconnect ${c.title} for ${c.addonName}`}>Reconnect</a>` : null}
              <${ConfirmButton} label="Disconnect" ariaLabel=${`Disconnect ${c.title} from ${c.addonName}`} danger title=${`Disconnect ${c.title}?`}
                body=${html`<p><${Revealed} text=${c.addonName} /> can no longer act on your <${Revealed} text=${c.title} identifier /> account, and its tools that need it stop until you connect it again. Toolport asks <${Revealed} text=${c.title} identifier /> to revoke the access.</p>`}
                confirmLabel="Disconnect" onConfirm=${() => onDisconnect(c, i)} />
            </div>
          </li>`)}</ul>`}<//>`;
}
