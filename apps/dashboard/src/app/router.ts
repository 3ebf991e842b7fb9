import { useEffect, useState } from 'preact/hooks';

/** A small history router: links are plain <a href>, clicks on same-origin links are intercepted. */
const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** One query parameter of the address, kept current as the router moves (same page, new `?`). */
export function useQueryParam(name: string): string | null {
  const read = () => new URLSearchParams(location.search).get(name);
  const [value, setValue] = useState(read);
  useEffect(() => {
    const update = () => setValue(read());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, [name]);
  return value;
}

/**
 * Where a person who was not signed in was going (a link to an approval's page, say): they land
 * there once signed in. A same-origin path only; kept for this tab.
 */
const RETURN_KEY = 'toolport.returnTo';
export function rememberReturn(path: string) {
  if (path === '/' || !path.startsWith('/') || path.startsWith('//')) return;
  try {
    sessionStorage.setItem(RETURN_KEY, path + location.search);
  } catch {
    /* storage refused: they land on Home */
  }
}
export function takeReturn(): string | null {
  try {
    const to = sessionStorage.getItem(RETURN_KEY);
    sessionStorage.removeItem(RETURN_KEY);
    return to && to.startsWith('/') && !to.startsWith('//') ? to : null;
  } catch {
    return null;
  }
}

/** Where the person will land once signed in, without forgetting it (the sign-in page says why they are asked). */
export function peekReturn(): string | null {
  try {
    return sessionStorage.getItem(RETURN_KEY);
  } catch {
    return null;
  }
}

export function interceptLinks() {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.startsWith('/oauth/')) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}
