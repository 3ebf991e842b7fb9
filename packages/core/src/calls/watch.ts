import type { Services } from '../services';
import type { CallEvent, CallWatcher } from './types';
import { userChannel } from '../events/channels';

/** Tells the app's exchange how its call goes; a watcher that fails to show it never fails the call. */
export function tell(svc: Services, watcher: CallWatcher, event: CallEvent) {
  try {
    watcher.on(event);
  } catch (err) {
    svc.log.warn('cannot show the app how its call goes', { err, event: event.kind });
  }
}

/** A call's changes within this long go out as one: an add-on may report progress as often as it likes. */
const ANNOUNCE_AFTER_MS = 250;
const announcing = new WeakMap<Services, Set<string>>();

/**
 * The person's dashboards hear that a call of theirs changed (Running now, the call's page): a
 * moment later, once this process's rows of it are written, so what they read back shows it.
 */
export function announceCallChange(svc: Services, userId: string, callId: string): void {
  let calls = announcing.get(svc);
  if (!calls) announcing.set(svc, (calls = new Set()));
  if (calls.has(callId)) return;
  calls.add(callId);
  setTimeout(() => {
    calls.delete(callId);
    svc.logs
      .flushed()
      .then(() => svc.bus.publish(userChannel(userId), { event: 'call.changed', id: `${callId}.changed`, data: { callId } }))
      .catch((err: unknown) => svc.log.warn('cannot announce a call change', { err, callId }));
  }, ANNOUNCE_AFTER_MS).unref();
}
