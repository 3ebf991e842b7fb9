import type { BusChannel, BusMessages } from './events/channels';
import type { ChangeKind, Changes } from './events/changes';
import type { Services } from './services';

/** A hit does not renew an entry, so the TTL bounds staleness even where a bus message was missed. */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, { value: V; at: number }>();

  /** `now`: epoch ms by the services' clock (tests move it), as the TTL is read. */
  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (this.now() - hit.at < this.ttlMs) return hit.value;
    this.entries.delete(key);
    return undefined;
  }

  has(key: K): boolean {
    const hit = this.entries.get(key);
    return !!hit && this.now() - hit.at < this.ttlMs;
  }

  /** `at` is when the value was read (before a lookup that raced a change), now by default. */
  set(key: K, value: V, at = this.now()) {
    this.entries.delete(key);
    this.entries.set(key, { value, at });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: K) {
    this.entries.delete(key);
  }

  deleteWhere(drop: (value: V, key: K) => boolean) {
    for (const [key, { value }] of this.entries) if (drop(value, key)) this.entries.delete(key);
  }

  clear() {
    this.entries.clear();
  }

  get size() {
    return this.entries.size;
  }
}

/** What a cache may hold on to, all of it let go when the services close. */
export interface CacheScope {
  /** A bounded map (BoundedMap), cleared on close; aged by the services' clock unless `now` is given. */
  map<K, V>(max: number, ttlMs?: number, now?: () => number): BoundedMap<K, V>;
  /** Follows a bus channel until close; resolves once live, rejects if the subscription fails. */
  subscribe<C extends BusChannel>(channel: C, handler: (message: BusMessages[C]) => void): Promise<void>;
  /** Hears a kind of change the cache declared (`cacheKind`'s `follows`) until close; resolves once live. */
  follow<K extends ChangeKind>(kind: K, handler: (change: Changes[K]) => void): Promise<void>;
  /** Runs after each bus reconnect (messages were missed meanwhile), until close. */
  afterReconnect(listener: () => void): void;
}

/** A kind of cache: made once per services, on first use. */
export interface CacheKind<T> {
  readonly name: string;
  /** The changes that drop its entries: the registry of who reads what (test/caches.test.ts holds every kind to it). */
  readonly follows: readonly ChangeKind[];
  create(svc: Services, scope: CacheScope): T;
}

/** Every kind of cache defined, in the order their modules loaded. */
export const CACHE_KINDS: Array<CacheKind<unknown>> = [];

export function cacheKind<T>(name: string, create: (svc: Services, scope: CacheScope) => T, follows: readonly ChangeKind[] = []): CacheKind<T> {
  const kind = { name, create, follows };
  CACHE_KINDS.push(kind);
  return kind;
}

/** Closed with the services: subscriptions end and maps are emptied. */
export class Caches {
  private readonly made = new Map<CacheKind<unknown>, unknown>();
  private readonly onClose: Array<() => unknown> = [];
  private closed = false;
  constructor(private readonly svc: Services) {}

  /** What a cache of `kind` may hold on to; it follows only the changes the kind declared. */
  private scopeOf(kind: CacheKind<unknown>): CacheScope {
    return {
      map: <K, V>(max: number, ttlMs = Infinity, now = () => this.svc.clock.now().getTime()) => {
        const map = new BoundedMap<K, V>(max, ttlMs, now);
        this.onClose.push(() => map.clear());
        return map;
      },
      subscribe: (channel, handler) => this.until(() => this.svc.bus.subscribe(channel, handler)),
      follow: async (change, handler) => {
        if (!kind.follows.includes(change)) throw new Error(`The ${kind.name} cache follows "${change}" changes without declaring them in cacheKind.`);
        return this.until(() => this.svc.changes.follow(change, handler));
      },
      afterReconnect: (listener) => {
        if (!this.closed) this.onClose.push(this.svc.bus.afterReconnect(listener));
      },
    };
  }

  /** Starts a subscription that ends on close; made after close (a late request of a stopping process), it follows nothing. */
  private async until(start: () => Promise<() => Promise<void>>): Promise<void> {
    if (this.closed) return;
    const started = start();
    this.onClose.push(() => started.then((off) => off(), () => {}));
    await started;
  }

  /** This services' cache of `kind`, made on first use. */
  get<T>(kind: CacheKind<T>): T {
    let cache = this.made.get(kind) as T | undefined;
    if (cache === undefined) {
      cache = kind.create(this.svc, this.scopeOf(kind as CacheKind<unknown>));
      this.made.set(kind, cache);
    }
    return cache;
  }

  /** The cache of `kind` if one was made: for dropping entries without making one. */
  peek<T>(kind: CacheKind<T>): T | undefined {
    return this.made.get(kind) as T | undefined;
  }

  async close() {
    this.closed = true;
    const closing = this.onClose.splice(0);
    await Promise.allSettled(closing.map(async (close) => close()));
    this.made.clear();
  }
}
