import { render } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import './styles.css';
import { ApiError, get, onSignedOut, post, type Me, type SessionState } from './api';
import { AuthPage } from './pages/auth';
import { ForgotPasswordPage, ResetPasswordPage, VerifyEmailPage } from './pages/recovery';
import { HomePage } from './pages/home';
import { AddonsPage } from './pages/addons';
import { CatalogDetailPage } from './pages/catalog';
import { AppsPage } from './pages/apps';
import { ConnectedAccountsPage } from './pages/accounts';
import { ApprovalsPage } from './pages/approvals';
import { ApprovalPage } from './pages/approval';
import { ActivityPage } from './pages/activity';
import { CallLifePage } from './pages/call';
import { AddonDetailPage, DeveloperPage, KeysPage } from './pages/developer';
import { OperatorPage } from './pages/operator';
import { DevelopersPage } from './pages/developers';
import { interceptLinks, navigate, rememberReturn, takeReturn, usePath } from './router';
import { live, me, startLive, stopLive, useStore } from './store';
import { html, PageHeader } from './ui';

const nav = [
  { href: '/', label: 'Home' },
  { href: '/addons', label: 'Add-ons' },
  { href: '/approvals', label: 'Approvals' },
  { href: '/apps', label: 'Apps let in' },
  { href: '/accounts', label: 'Connected accounts' },
  { href: '/activity', label: 'Activity' },
  { href: '/developer', label: 'Developers' },
];

const titles: Record<string, string> = {
  '/signin': 'Sign in',
  '/signup': 'Create your account',
  '/forgot-password': 'Reset your password',
  '/reset-password': 'Choose a new password',
  '/verify-email': 'Confirm your email',
  '/developers': 'Build add-ons for Toolport',
};
/** Pages of a mailed link or of getting back in: shown signed in or not. */
const linkPages = new Set(['/forgot-password', '/reset-password', '/verify-email']);
/** What an add-on developer is sent to: public signed out; signed in, the developer page itself. */
const DEVELOPERS = '/developers';

function current(path: string, href: string) {
  // A call's own page belongs to Activity, where its row is.
  if (path.startsWith('/calls/')) path = '/activity';
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

/** On a phone the tabs scroll sideways: the current one is brought into view (the page itself does not move). */
function useCurrentTabInView(path: string) {
  useEffect(() => {
    const nav = document.querySelector<HTMLElement>('.sidebar nav');
    const tab = nav?.querySelector<HTMLElement>('a[aria-current="page"]');
    if (!nav || !tab || nav.scrollWidth <= nav.clientWidth) return;
    const fade = 32; // the nav fades out at its right edge
    const left = tab.offsetLeft - nav.offsetLeft;
    if (left < nav.scrollLeft) nav.scrollLeft = Math.max(0, left - 12);
    else if (left + tab.offsetWidth > nav.scrollLeft + nav.clientWidth - fade) nav.scrollLeft = left + tab.offsetWidth - nav.clientWidth + fade;
  }, [path]);
}

function Shell({ person, path }: { person: Me; path: string }) {
  const { pending, announcement } = useStore(live);
  useCurrentTabInView(path);
  const signOut = async () => {
    try {
      await post('/api/session/logout');
    } catch {
      /* the session may already be gone */
    }
    stopLive();
    me.set(null);
    navigate('/signin', true);
  };
  return html`<a class="skip" href="#main">Skip to content</a>
    <div class="layout">
      <header class="sidebar">
        <a class="brand" href="/"><img src="/icon.svg" alt="" width="28" height="28" /><span>Toolport</span></a>
        <nav aria-label="Main">
          <ul class="nav">${[...nav, ...(person.operator ? [{ href: '/operator', label: 'Listings' }] : [])].map(
            (n) => html`<li><a href=${n.href} aria-current=${current(path, n.href) ? 'page' : undefined}>${n.label}${n.href === '/approvals' && pending.length > 0
              ? html` <span class="count" aria-label=${`${pending.length} waiting`}>${pending.length}</span>`
              : null}</a></li>`,
          )}</ul>
        </nav>
        <div class="account">
          <span class="email" title=${person.email}>${person.email}</span>
          <button type="button" class="btn btn-small" onClick=${signOut}>Sign out</button>
        </div>
      </header>
      <main id="main" class="content">${page(path, person)}</main>
    </div>
    <div class="visually-hidden" role="status" aria-live="polite" aria-atomic="true" data-announcer>${announcement}</div>`;
}

function page(path: string, person: Me) {
  if (path === '/') return html`<${HomePage} person=${person} />`;
  if (path === '/addons') return html`<${AddonsPage} />`;
  if (path === '/approvals') return html`<${ApprovalsPage} />`;
  if (path === '/apps') return html`<${AppsPage} />`;
  if (path === '/accounts') return html`<${ConnectedAccountsPage} />`;
  if (path === '/activity') return html`<${ActivityPage} />`;
  if (path === '/developer' || path === DEVELOPERS) return html`<${DeveloperPage} />`;
  if (path === '/developer/keys') return html`<${KeysPage} />`;
  if (path === '/operator') return html`<${OperatorPage} />`;
  const call = /^\/calls\/([^/]+)$/.exec(path);
  if (call) return html`<${CallLifePage} id=${decodeURIComponent(call[1]!)} key=${call[1]} />`;
  const a = /^\/approvals\/([^/]+)$/.exec(path);
  if (a) return html`<${ApprovalPage} id=${decodeURIComponent(a[1]!)} key=${a[1]} />`;
  const c = /^\/addons\/([^/]+)$/.exec(path);
  if (c) return html`<${CatalogDetailPage} id=${decodeURIComponent(c[1]!)} key=${c[1]} />`;
  const m = /^\/developer\/addons\/([^/]+)$/.exec(path);
  if (m) return html`<${AddonDetailPage} id=${decodeURIComponent(m[1]!)} key=${m[1]} />`;
  return html`<${PageHeader} title="Page not found" lead=${html`There is nothing at this address. <a href="/">Go home</a>.`} />`;
}

/**
 * Who is signed in, from /api/session, which answers 200 either way (a signed-out load logs no
 * failed request). Any failure (a 503, a network blip) leaves the session alone and is retried,
 * backing off from 2 s to 30 s; a 401 still means signed out.
 */
function useWhoAmI() {
  const [unreachable, setUnreachable] = useState<ApiError | null>(null);
  const retry = useRef<() => void>(() => {});
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let failures = 0;
    let stopped = false;
    const load = () => {
      clearTimeout(timer);
      get<SessionState>('/api/session').then(
        (session) => {
          if (stopped) return;
          setUnreachable(null);
          me.set(session.person);
        },
        (err) => {
          if (stopped) return;
          const e = err instanceof ApiError ? err : new ApiError(0, 'Toolport could not be reached.');
          if (e.status === 401) return me.set(null);
          setUnreachable(e);
          timer = setTimeout(load, Math.min(30_000, 2_000 * 2 ** failures++));
        },
      );
    };
    retry.current = load;
    load();
    const off = onSignedOut(() => {
      stopLive();
      me.set(null);
    });
    return () => {
      stopped = true;
      clearTimeout(timer);
      off();
    };
  }, []);
  return { unreachable, retry: () => retry.current() };
}

function Unreachable({ error, retry }: { error: ApiError; retry: () => void }) {
  return html`<main class="boot" id="main">
    <div class="notice notice-error" role="alert">
      <p><strong>Toolport cannot be reached right now.</strong> You are still signed in; the dashboard keeps retrying.</p>
      <p class="small">${error.message}</p>
    </div>
    <button type="button" class="btn btn-primary" onClick=${retry}>Try again</button>
  </main>`;
}

function App() {
  const path = usePath();
  const person = useStore(me);
  const { unreachable, retry } = useWhoAmI();
  useEffect(() => {
    if (person) startLive();
    return () => stopLive();
  }, [person?.id]);

  const authPath = path === '/signin' || path === '/signup';
  useEffect(() => {
    if (linkPages.has(path)) return;
    if (person && path === DEVELOPERS) navigate('/developer', true);
    else if (person === null && path === DEVELOPERS) return;
    else if (person === null && !authPath) {
      rememberReturn(path);
      navigate('/signin', true);
    } else if (person && authPath) navigate(takeReturn() ?? '/', true);
    else if (person) {
      const back = takeReturn();
      if (back) navigate(back, true);
    }
  }, [person, authPath, path]);

  // The tab names the page shown: none while loading, the sign-in form wherever a signed-out
  // person is asked to sign in. Focus moves to its heading so screen readers announce navigation.
  // Before paint: the page's heading never shows under the previous page's title.
  useLayoutEffect(() => {
    const signingIn = person === null && !linkPages.has(path) && path !== DEVELOPERS;
    const label = person === undefined ? undefined
      : signingIn ? titles[path === '/signup' ? '/signup' : '/signin']
      : nav.find((n) => current(path, n.href))?.label ?? titles[path];
    document.title = label ? `${label} · Toolport` : 'Toolport';
    const h = document.getElementById('page-title');
    if (h && document.activeElement?.tagName !== 'INPUT') h.focus({ preventScroll: true });
  }, [path, person === undefined, person === null]);

  if (person === undefined && unreachable) return html`<${Unreachable} error=${unreachable} retry=${retry} />`;
  if (person === undefined) return html`<p class="boot muted" aria-busy="true">Loading…</p>`;
  if (path === '/forgot-password') return html`<${ForgotPasswordPage} />`;
  if (path === '/reset-password') return html`<${ResetPasswordPage} />`;
  if (path === '/verify-email') return html`<${VerifyEmailPage} person=${person} />`;
  if (path === DEVELOPERS && person === null) return html`<${DevelopersPage} />`;
  if (authPath || person === null) return html`<${AuthPage} mode=${path === '/signup' ? 'signup' : 'signin'} key=${path} />`;
  return html`<${Shell} person=${person} path=${path} />`;
}

interceptLinks();
render(html`<${App} />`, document.getElementById('root')!);
