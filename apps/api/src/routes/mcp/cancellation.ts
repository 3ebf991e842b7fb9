import { CallCancel, REQUEST_CANCEL_CHANNEL, type Services } from '@toolport/core';

/**
 * A waiting call holds its entry for up to 30 s, so no per-call closures here, and a CallCancel
 * rather than an AbortController.
 */
export class InFlight {
  private readonly calls = new Map<string, CallCancel>();

  constructor(private readonly svc: Services) {}

  /** Hears the cancellations sent to the other processes: any of them may hold the call. */
  listen() {
    void this.svc.bus.subscribe(REQUEST_CANCEL_CHANNEL, (m) => this.abort(m.key));
  }

  key(grantId: string, requestId: string | number) {
    return `${grantId}:${typeof requestId}:${requestId}`;
  }

  add(key: string): CallCancel {
    const cancel = new CallCancel();
    this.calls.set(key, cancel);
    return cancel;
  }

  done(key: string, cancel: CallCancel) {
    if (this.calls.get(key) === cancel) this.calls.delete(key);
  }

  abort(key: string) {
    this.calls.get(key)?.abort(new Error('cancelled by the app'));
  }

  /**
   * An app's `notifications/cancelled`: this process first, as it may hold the call and a bus that
   * is down (Redis) must not keep it from hearing; then every other, without the app waiting for Redis.
   */
  cancel(grantId: string, requestId: string | number) {
    const key = this.key(grantId, requestId);
    this.abort(key);
    this.svc.bus.publish(REQUEST_CANCEL_CHANNEL, { key }).catch((err: unknown) => this.svc.log.warn('cannot pass a cancellation to the other processes', { err }));
  }
}
