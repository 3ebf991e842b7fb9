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

/**
 * The person's dashboards hear that a call of theirs changed (Running now, the call's page), once
 * its rows are written, so what they read back shows the change.
 */
export async function announceCallChange(svc: Services, userId: string, callId: string): Promise<void> {
  try {
    await svc.logs.flushed();
    await svc.bus.publish(userChannel(userId), { event: 'call.changed', id: `${callId}.changed`, data: { callId } });
  } catch (err) {
    svc.log.warn('cannot announce a call change', { err, callId });
  }
}
