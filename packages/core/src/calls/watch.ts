import type { Services } from '../services';
import type { CallEvent, CallWatcher } from './types';

/** Tells the app's exchange how its call goes; a watcher that fails to show it never fails the call. */
export function tell(svc: Services, watcher: CallWatcher, event: CallEvent) {
  try {
    watcher.on(event);
  } catch (err) {
    svc.log.warn('cannot show the app how its call goes', { err, event: event.kind });
  }
}
