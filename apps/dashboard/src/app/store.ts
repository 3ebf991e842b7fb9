import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, type Approval, type LiveEvent, type Me } from './api';
import { revealText } from './unicode';

/** A tiny observable value, so the shell and the pages share the person and live approvals. */
class Store<T> {
  private subs = new Set<(v: T) => void>();
  constructor(private value: T) {}
  get() { return this.value; }
  set(v: T) {
    this.value = v;
    this.subs.forEach((fn) => fn(v));
  }
  update(fn: (v: T) => T) { this.set(fn(this.value)); }
  subscribe(fn: (v: T) => void) {
    this.subs.add(fn);
    return () => { this.subs.delete(fn); };
  }
}

export function useStore<T>(store: Store<T>): T {
  const [v, setV] = useState(store.get());
  useEffect(() => {
    setV(store.get());
    return store.subscribe(setV);
  }, [store]);
  return v;
}

/** undefined: not known yet; null: signed out. */
export const me = new Store<Me | null | undefined>(undefined);

type LiveStatus = 'connecting' | 'live' | 'polling' | 'unavailable';
interface Live {
  pending: Approval[];
  status: LiveStatus;
  /** Outcomes seen for approvals that left the pending list (decided here, elsewhere, or expired). */
  decided: Record<string, string>;
  /** What the shell's live region says: the newest approval that arrived. */
  announcement: string;
}
export const live = new Store<Live>({ pending: [], status: 'connecting', decided: {}, announcement: '' });

/** The sentence a screen reader hears when an approval arrives (the card's heading). */
function approvalSentence(a: Approval) {
  // Hidden characters are spelled out here too: a screen reader would otherwise say nothing of them.
  const name = (s: string) => revealText(s, true);
  return `${name(a.app)} wants to run ${name(a.toolTitle || a.tool)} · ${name(a.addonName || a.addon)}.`;
}

/** Pending approvals, with the newest arrival announced (none on the first load). */
function withPending(l: Live, pending: Approval[], first = false): Live {
  const known = new Set(l.pending.map((p) => p.id));
  const fresh = pending.filter((p) => !known.has(p.id) && !l.decided[p.id]);
  const sorted = sortByExpiry(pending.filter((p) => !l.decided[p.id]));
  if (first || !fresh.length) return { ...l, pending: sorted };
  const sentence = fresh.map(approvalSentence).join(' ');
  // The same words twice in a row would not be read again: a trailing space makes them new.
  return { ...l, pending: sorted, announcement: sentence === l.announcement.trim() ? `${sentence} ` : sentence };
}
let loadedOnce = false;

/** What changed: a call, the approval a call waited for, or null when anything may have (a reconnect). */
export type CallChange = { callId: string } | { approvalId: string } | null;
const callWatchers = new Set<(change: CallChange) => void>();
/** Pages showing calls hear them change, instead of reading them again on a timer. */
export function onCallChanged(fn: (change: CallChange) => void) {
  callWatchers.add(fn);
  return () => { callWatchers.delete(fn); };
}
const callChanged = (change: CallChange) => callWatchers.forEach((fn) => fn(change));

let source: EventSource | undefined;
let poll: ReturnType<typeof setInterval> | undefined;
/** Counts approvals that came over the feed, and when each came: a list asked for earlier cannot drop it. */
let arrivals = 0;
const arrivedAt = new Map<string, number>();

async function refreshPending() {
  const askedAt = arrivals;
  try {
    const listed = await get<Approval[]>('/api/approvals?status=pending');
    const first = !loadedOnce;
    loadedOnce = true;
    live.update((l) => {
      // An approval the feed brought after this list was asked for is newer than the list: it stays
      // (its decision or expiry, not an older list, takes it off).
      const ids = new Set(listed.map((a) => a.id));
      const newer = l.pending.filter((a) => !ids.has(a.id) && (arrivedAt.get(a.id) ?? -1) >= askedAt);
      return { ...withPending(l, [...listed, ...newer], first), status: l.status === 'unavailable' ? 'polling' : l.status };
    });
  } catch (err) {
    if (err instanceof ApiError && err.routeMissing) live.update((l) => ({ ...l, status: 'unavailable' }));
  }
}

const sortByExpiry = (list: Approval[]) => [...list].sort((a, b) => Date.parse(a.expiresAt) - Date.parse(b.expiresAt));

export function markDecided(id: string, status: string) {
  arrivedAt.delete(id);
  live.update((l) => ({ ...l, pending: l.pending.filter((a) => a.id !== id), decided: { ...l.decided, [id]: status } }));
}

/** Pending approvals, live from /api/events (EventSource reconnects by itself); polling if SSE is refused. */
export function startLive() {
  stopLive();
  loadedOnce = false;
  arrivedAt.clear();
  live.set({ pending: [], status: 'connecting', decided: {}, announcement: '' });
  void refreshPending();
  const es = new EventSource('/api/events');
  source = es;
  es.addEventListener('open', () => {
    if (poll) clearInterval(poll);
    poll = undefined;
    live.update((l) => ({ ...l, status: 'live' }));
    void refreshPending(); // catch up on anything that arrived while disconnected
    callChanged(null);
  });
  es.addEventListener('approval', (e) => {
    const a = JSON.parse((e as MessageEvent).data) as LiveEvent<'approval'>;
    arrivedAt.set(a.id, arrivals++);
    live.update((l) => (l.decided[a.id] ? l : withPending(l, [...l.pending.filter((p) => p.id !== a.id), a])));
  });
  es.addEventListener('approval.decided', (e) => {
    const d = JSON.parse((e as MessageEvent).data) as LiveEvent<'approval.decided'>;
    markDecided(d.id, d.status);
    callChanged({ approvalId: d.id });
  });
  es.addEventListener('call.changed', (e) => callChanged({ callId: (JSON.parse((e as MessageEvent).data) as LiveEvent<'call.changed'>).callId }));
  es.addEventListener('error', () => {
    if (source !== es) return;
    // While the stream is down, poll. CLOSED means the server refused it (signed out, too many
    // streams) and EventSource gives up; otherwise it reconnects by itself and 'open' stops the polling.
    poll ??= setInterval(() => {
      void refreshPending();
      callChanged(null);
    }, 10_000);
    if (es.readyState === EventSource.CLOSED) {
      source = undefined;
      live.update((l) => ({ ...l, status: l.status === 'unavailable' ? 'unavailable' : 'polling' }));
    } else live.update((l) => ({ ...l, status: 'connecting' }));
  });
}

export function stopLive() {
  source?.close();
  source = undefined;
  if (poll) clearInterval(poll);
  poll = undefined;
}
