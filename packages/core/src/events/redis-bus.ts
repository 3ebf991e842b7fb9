import { Redis } from 'ioredis';
import type { BusTransport } from './bus';

export interface RedisBus extends BusTransport {
  /** Round trip to Redis on the publishing connection: for readiness checks. */
  ping(): Promise<void>;
}

/** The Redis channel a bus channel is published on. */
const busChannel = (prefix: string, channel: string) => `${prefix}:${channel}`;

/** A bus message as it goes over Redis, channel and payload: for a publish sent on another connection. */
export const busMessage = (prefix: string, channel: string, message: unknown): [redisChannel: string, payload: string] => [
  busChannel(prefix, channel),
  JSON.stringify(message),
];

/**
 * Pub/sub over two connections (a subscribed connection can do nothing else). Every channel is
 * `${prefix}:${channel}`; handlers are multiplexed so Redis sees one SUBSCRIBE per channel.
 */
export function createRedisBus(url: string, prefix: string): RedisBus {
  const pub = new Redis(url, { maxRetriesPerRequest: 3, connectionName: `${prefix}:bus-pub` });
  // No ready check on the subscriber: ioredis 5.8.2+ can send its INFO after a SUBSCRIBE queued
  // while connecting, and the connection then refuses it (redis/ioredis#2037). 'ready' still fires.
  const sub = new Redis(url, { maxRetriesPerRequest: null, connectionName: `${prefix}:bus-sub`, enableReadyCheck: false });
  const handlers = new Map<string, Set<(message: unknown) => void>>();
  // Serialises SUBSCRIBE/UNSUBSCRIBE per channel so a quick unsubscribe + subscribe cannot cross.
  const pending = new Map<string, Promise<unknown>>();
  const full = (channel: string) => busChannel(prefix, channel);

  const serial = (channel: string, op: () => Promise<unknown>) => {
    const next = (pending.get(channel) ?? Promise.resolve()).then(op, op);
    pending.set(channel, next);
    void next.finally(() => {
      if (pending.get(channel) === next) pending.delete(channel);
    }).catch(() => {});
    return next;
  };

  sub.on('messageBuffer', (channelBuf: Buffer, payload: Buffer) => {
    const set = handlers.get(channelBuf.toString());
    if (!set?.size) return;
    let message: unknown;
    try {
      message = JSON.parse(payload.toString('utf8'));
    } catch {
      return;
    }
    for (const handler of [...set]) handler(message);
  });
  // ioredis re-subscribes by itself after a reconnect; errors are retried, not thrown at callers.
  sub.on('error', () => {});
  pub.on('error', () => {});

  const reconnected = new Set<() => void>();
  let readies = 0;
  sub.on('ready', () => {
    if (++readies === 1 || !reconnected.size) return;
    // ioredis resubscribes right after 'ready'; one more SUBSCRIBE on the next tick is answered after
    // them, so the listeners run once every subscription is live again.
    const held = handlers.keys().next().value;
    new Promise<void>((resolve) => process.nextTick(resolve)).then(() => (held ? sub.subscribe(held) : undefined)).then(
      () => {
        for (const listener of [...reconnected]) {
          try {
            listener();
          } catch {
            // One listener's failure is its own; the others still run.
          }
        }
      },
      // Lost again before that: the next 'ready' runs them.
      () => {},
    );
  });

  return {
    async publish(channel, message) {
      await pub.publish(...busMessage(prefix, channel, message));
    },
    async subscribe(channel, handler) {
      const name = full(channel);
      let set = handlers.get(name);
      if (!set) handlers.set(name, (set = new Set()));
      const first = set.size === 0;
      set.add(handler);
      if (first) await serial(name, () => sub.subscribe(name));
      else await pending.get(name);
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        const current = handlers.get(name);
        if (!current) return;
        current.delete(handler);
        if (current.size === 0) {
          handlers.delete(name);
          await serial(name, async () => {
            // A subscriber may have come back while we waited for our turn.
            if (!handlers.has(name) && sub.status === 'ready') await sub.unsubscribe(name);
          });
        }
      };
    },
    afterReconnect(listener) {
      reconnected.add(listener);
      return () => void reconnected.delete(listener);
    },
    async ping() {
      await pub.ping();
    },
    async close() {
      handlers.clear();
      await Promise.allSettled([pub.quit(), sub.quit()]);
    },
  };
}
