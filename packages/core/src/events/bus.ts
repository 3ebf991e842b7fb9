import { EventEmitter } from 'node:events';

/** Cross-process messages: approvals decided, caches to drop, results to hand back. */
export interface EventBus {
  publish(channel: string, message: unknown): Promise<void>;
  /** Resolves once the subscription is live; the returned function ends it. */
  subscribe(channel: string, handler: (message: unknown) => void): Promise<() => Promise<void>>;
  /**
   * Runs `listener` each time the bus is back after losing its connection, once its subscriptions
   * are live again: whatever was published meanwhile was missed, so caches kept fresh by messages
   * are dropped and waits for a message look up what they waited for. Returns its removal.
   */
  afterReconnect(listener: () => void): () => void;
  close(): Promise<void>;
}

export function createInProcessBus(): EventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    async publish(channel, message) {
      // Copy, as Redis would: a subscriber never shares an object with the publisher.
      emitter.emit(channel, structuredClone(message));
    },
    async subscribe(channel, handler) {
      emitter.on(channel, handler);
      return async () => {
        emitter.off(channel, handler);
      };
    },
    // One process, no connection: nothing is ever missed.
    afterReconnect: () => () => {},
    async close() {
      emitter.removeAllListeners();
    },
  };
}
