import type { Toolport } from './target';

/**
 * Holds what `svc` publishes on `channel` until `release` sends it on: a bus slower than the
 * person's next request (with Redis the message comes back to the publishing process a moment
 * after the route answered). What that process does in the moment must not depend on it.
 */
export function holdBus(svc: Toolport['svc'], channel: string) {
  const bus = svc.bus as { publish: (channel: string, message: unknown) => Promise<void> };
  const publish = bus.publish;
  const messages: unknown[] = [];
  bus.publish = async (c, m) => {
    if (c === channel) messages.push(m);
    else await publish.call(bus, c, m);
  };
  return {
    messages,
    async release() {
      bus.publish = publish;
      for (const m of messages) await publish.call(bus, channel, m);
    },
  };
}
