import { EventEmitter } from 'node:events';
import type { BusChannel, BusMessages } from './channels';

/** Typed by channels.ts; `BusTransport` is the same for any channel name. */
export interface EventBus {
  publish<C extends BusChannel>(channel: C, message: BusMessages[C]): Promise<void>;
  /** Resolves once the subscription is live; the returned function ends it. */
  subscribe<C extends BusChannel>(channel: C, handler: (message: BusMessages[C]) => void): Promise<() => Promise<void>>;
  /** Messages published while disconnected are missed: listeners drop caches and recheck waits. */
  afterReconnect(listener: () => void): () => void;
  close(): Promise<void>;
}

/** The bus's two implementations (in-process, Redis): any channel name, any JSON message. */
export interface BusTransport {
  publish(channel: string, message: unknown): Promise<void>;
  subscribe(channel: string, handler: (message: unknown) => void): Promise<() => Promise<void>>;
  afterReconnect(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * The transport as the services use it. The cast is the one place the map is trusted: a message
 * is what its channel's publishers sent (handlers still check what crosses processes).
 */
export const typedBus = <T extends BusTransport>(transport: T) => transport as unknown as EventBus & Omit<T, keyof EventBus>;

export function createInProcessBus(): BusTransport {
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
