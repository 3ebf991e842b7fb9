/** What the call path uses of a signal: an `AbortSignal` is one, and so is a `CallCancel`. */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

export type AbortListener = ((event: Event) => unknown) | { handleEvent(event: Event): unknown };

/**
 * Not an AbortController: every call holds one for up to 30 s, and this is a tenth of the heap.
 * Listeners are called once, in order, on the first `abort`.
 */
export class CallCancel implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: AbortListener[] | undefined;

  addEventListener(_type: 'abort', listener: AbortListener) {
    if (this.aborted) return;
    if (!this.listeners) this.listeners = [listener];
    else if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener) {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners!.splice(at, 1);
  }

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')) {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    const event = new Event('abort');
    for (const listener of listeners) {
      try {
        if (typeof listener === 'function') listener.call(this, event);
        else listener.handleEvent(event);
      } catch (err) {
        // As an EventTarget does: a throwing listener does not stop the others, and is not swallowed.
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }

  /** Returns what stops following, for a signal that outlives this one. */
  follow(signal: CancelSignal): () => void {
    if (signal.aborted) {
      this.abort(signal.reason);
      return () => {};
    }
    const stop = () => this.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    return () => signal.removeEventListener('abort', stop);
  }
}
