/**
 * The dashboard's service worker, served at /sw.js with Service-Worker-Allowed: /. It only shows
 * approval pushes and answers their Allow/Deny actions and their dismissal; it caches nothing, so
 * a new build is never hidden behind a stale cache.
 */
import type { ApprovalPushPayload as PushPayload } from '@toolport/core/api';

type Ask = Exclude<PushPayload, { kind: 'outcome' }>;
/** A push asking for a decision; anything else (what came of an allowed call) only informs. */
const asks = (p: PushPayload | undefined): p is Ask => !!p && p.kind !== 'outcome' && typeof p.approvalId === 'string';

// The DOM lib is loaded for the rest of the dashboard; declare the few worker APIs used here.
type ExtendableEvent = Event & { waitUntil(p: Promise<unknown>): void };
type PushEvent = ExtendableEvent & { data: { json(): unknown } | null };
type NotificationEvent = ExtendableEvent & { action: string; notification: Notification & { data: unknown; close(): void } };
interface WorkerScope {
  registration: ServiceWorkerRegistration;
  clients: { matchAll(o: object): Promise<Array<{ url: string; focus(): Promise<unknown>; navigate?(u: string): Promise<unknown> }>>; openWindow(u: string): Promise<unknown>; claim(): Promise<void> };
  skipWaiting(): Promise<void>;
  addEventListener(type: string, fn: (e: any) => void): void;
}
const sw = self as unknown as WorkerScope;

sw.addEventListener('install', () => void sw.skipWaiting());
sw.addEventListener('activate', (e: ExtendableEvent) => e.waitUntil(sw.clients.claim()));

sw.addEventListener('push', (e: PushEvent) => {
  let p: PushPayload | undefined;
  try {
    p = e.data?.json() as PushPayload;
  } catch {
    p = undefined;
  }
  if (!p || typeof p.approvalId !== 'string') return;
  if (p.kind === 'outcome') {
    // Replaces the approval's notification, if still shown: nothing to answer any more.
    e.waitUntil(sw.registration.showNotification(p.title, { body: p.body, tag: p.approvalId, icon: '/icon.svg', data: p }));
    return;
  }
  const options: NotificationOptions & { actions?: Array<{ action: string; title: string }>; requireInteraction?: boolean } = {
    body: p.body ?? 'An AI app is waiting for your answer.',
    tag: p.approvalId,
    icon: '/icon.svg',
    data: p,
    requireInteraction: true,
    actions: [
      { action: 'allow', title: 'Allow' },
      { action: 'deny', title: 'Deny' },
    ],
  };
  e.waitUntil(sw.registration.showNotification(p.title ?? 'Approve a tool call?', options));
});

async function decide(p: Ask, decision: 'allow' | 'deny' | 'dismiss') {
  const res = await fetch('/api/push/decision', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ approvalId: p.approvalId, decision, token: p.actionToken }),
  });
  if (!res.ok && res.status !== 409) throw new Error(`decision refused: ${res.status}`);
}

/**
 * Opens the call's own page (its details, time left, Deny with a reason) in a dashboard window,
 * or the approvals list when the notification names no approval. Only a path of this origin is
 * built here: nothing in the payload chooses where the window goes.
 */
async function openApproval(p: PushPayload | undefined) {
  const where =
    p?.kind === 'outcome' && typeof p.callId === 'string'
      ? `/calls/${encodeURIComponent(p.callId)}`
      : p && typeof p.approvalId === 'string'
        ? `/approvals/${encodeURIComponent(p.approvalId)}`
        : '/approvals';
  const [existing] = await sw.clients.matchAll({ type: 'window', includeUncontrolled: true });
  if (existing?.navigate) {
    try {
      await existing.navigate(where);
      return await existing.focus();
    } catch {
      // A window this worker does not control cannot be navigated by it: open a new one instead.
    }
  }
  return sw.clients.openWindow(where);
}

/**
 * Approvals whose notification this worker closed itself after a click. The spec fires no
 * notificationclose for that close(); a browser that did must not race the Allow just sent.
 */
const answered = new Set<string>();

sw.addEventListener('notificationclick', (e: NotificationEvent) => {
  const p = e.notification.data as PushPayload | undefined;
  if (p && typeof p.approvalId === 'string') answered.add(p.approvalId);
  e.notification.close();
  if (asks(p) && (e.action === 'allow' || e.action === 'deny')) {
    // If the decision cannot be sent, open the dashboard so the person can answer there.
    e.waitUntil(decide(p, e.action).catch(() => openApproval(p)));
  } else e.waitUntil(openApproval(p));
});

// Closing the notification (a swipe, its close button, "clear all") answers it: the call ends as
// dismissed at once instead of waiting out its 30 s. The request starts before waitUntil, which
// only keeps the worker alive for it.
sw.addEventListener('notificationclose', (e: NotificationEvent) => {
  const p = e.notification.data as PushPayload | undefined;
  if (!asks(p) || typeof p.actionToken !== 'string' || answered.has(p.approvalId)) return;
  e.waitUntil(decide(p, 'dismiss').catch(() => {}));
});
