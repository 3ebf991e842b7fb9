import { Redis } from 'ioredis';
import ipaddr from 'ipaddr.js';
import type { Config } from './config';
import { flatUuid } from './ids';

/** Shared counters for rate and concurrency limits: in this process, or across processes on Redis. */
export interface Limiter {
  /** Stops at the first window over its limit (`over`: its index, or -1). One round trip on Redis. */
  hit(windows: RateWindow[]): Promise<{ over: number; retryAfterMs: number }>;
  /** Takes one of `max` slots (released by the returned function), or undefined when all are taken. */
  acquire(key: string, max: number, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
  /** One Redis round trip. `release` undefined: the windows passed but every slot was taken. */
  hitAndAcquire(windows: RateWindow[], slot: Slot): Promise<{ over: number; retryAfterMs: number; release?: () => Promise<void> }>;
  /** A lease a crashed process stops renewing frees itself, which a counter cannot do. */
  lease(key: string, max: number, ttlMs: number): Promise<Lease | undefined>;
  /**
   * A place in `key`'s line, in the order of joining: 'first' (kept `holdMs` from now), 'waiting'
   * (kept `waitMs`: a waiter that stops asking drops out), or 'full' (`max` in line, not joined).
   */
  line(key: string, id: string, o: { waitMs: number; holdMs: number; max: number }): Promise<'first' | 'waiting' | 'full'>;
  leaveLine(key: string, id: string): Promise<void>;
  close(): Promise<void>;
}

export interface Lease {
  /** Pushes the expiry to `ttlMs` from now (re-taking the lease if it had already expired). */
  renew(): Promise<void>;
  release(): Promise<void>;
}

export interface RateWindow {
  key: string;
  limit: number;
  windowMs: number;
}

export interface Slot {
  key: string;
  max: number;
  ttlMs: number;
}

/** An object, not closures: thousands of waiting approvals each hold one for up to 40 s. */
class MemoryLease implements Lease {
  private released = false;
  constructor(
    private readonly leases: Map<string, Map<string, number>>,
    private readonly key: string,
    private readonly id: string,
    private readonly ttlMs: number,
  ) {}

  async renew() {
    if (this.released) return;
    let h = this.leases.get(this.key);
    if (!h) this.leases.set(this.key, (h = new Map()));
    h.set(this.id, performance.now() + this.ttlMs);
  }

  async release() {
    this.released = true;
    const h = this.leases.get(this.key);
    h?.delete(this.id);
    if (h && !h.size) this.leases.delete(this.key);
  }
}

/**
 * Windows and leases are durations, read with performance.now() like Redis's key TTLs: neither
 * follows the services' clock, so a test that moves it sees both limiters alike.
 */
function createMemoryLimiter(): Limiter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const slots = new Map<string, number>();
  const leases = new Map<string, Map<string, number>>();
  const lines = new Map<string, Map<string, number>>();
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
  }, 60_000);
  sweep.unref();
  const limiter: Limiter = {
    async hit(checks) {
      const now = performance.now();
      for (const [i, { key, limit, windowMs }] of checks.entries()) {
        let w = windows.get(key);
        if (!w || w.resetAt <= now) windows.set(key, (w = { count: 0, resetAt: now + windowMs }));
        w.count++;
        if (w.count > limit) return { over: i, retryAfterMs: w.resetAt - now };
      }
      return { over: -1, retryAfterMs: 0 };
    },
    async acquire(key, max) {
      const used = slots.get(key) ?? 0;
      if (used >= max) return undefined;
      slots.set(key, used + 1);
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        const left = (slots.get(key) ?? 1) - 1;
        if (left <= 0) slots.delete(key);
        else slots.set(key, left);
      };
    },
    async hitAndAcquire(checks, slot) {
      const hit = await limiter.hit(checks);
      return hit.over >= 0 ? hit : { ...hit, release: await limiter.acquire(slot.key, slot.max, slot.ttlMs) };
    },
    async lease(key, max, ttlMs) {
      const now = performance.now();
      let held = leases.get(key);
      if (!held) leases.set(key, (held = new Map()));
      // Pruned only when every place looks taken: pruning on each take is quadratic.
      if (held.size >= max) for (const [id, expiresAt] of held) if (expiresAt <= now) held.delete(id);
      if (held.size >= max) return undefined;
      const id = flatUuid();
      held.set(id, now + ttlMs);
      return new MemoryLease(leases, key, id, ttlMs);
    },
    async line(key, id, { waitMs, holdMs, max }) {
      const now = performance.now();
      let line = lines.get(key);
      if (!line) lines.set(key, (line = new Map()));
      for (const [other, until] of line) if (until <= now) line.delete(other);
      if (!line.has(id)) {
        if (line.size >= max) return 'full';
        line.set(id, now + waitMs);
      }
      // A Map keeps its order of insertion, and setting a present key keeps its place.
      const first = line.keys().next().value === id;
      line.set(id, now + (first ? holdMs : waitMs));
      return first ? 'first' : 'waiting';
    },
    async leaveLine(key, id) {
      const line = lines.get(key);
      line?.delete(id);
      if (line && !line.size) lines.delete(key);
    },
    async close() {
      clearInterval(sweep);
    },
  };
  return limiter;
}

// Counts KEYS[1..last] in their fixed windows (ARGV: limit, window ms per key), setting a window's
// expiry when it opens; at the first over its limit, returns {its index, its PTTL, ...extra}.
const COUNT_WINDOWS = (last: string, extra = '') => `for i = 1, ${last} do
  local c = redis.call('INCR', KEYS[i])
  if c == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i]) end
  if c > tonumber(ARGV[2 * i - 1]) then return {i - 1, redis.call('PTTL', KEYS[i])${extra}} end
end`;
// One round trip for every window of a call: count, set each window's expiry, stop at the first over.
const HIT = `${COUNT_WINDOWS('#KEYS')}
return {-1, 0}`;
// HIT for KEYS[1..n-1], then, when none was over, ACQUIRE for KEYS[n]: {over, pttl, got the slot}.
const HIT_ACQUIRE = `local n = #KEYS - 1
${COUNT_WINDOWS('n', ', 0')}
local s = redis.call('INCR', KEYS[n + 1])
redis.call('PEXPIRE', KEYS[n + 1], ARGV[2 * n + 2])
if s > tonumber(ARGV[2 * n + 1]) then redis.call('DECR', KEYS[n + 1]) return {-1, 0, 0} end
return {-1, 0, 1}`;
// A crashed process's slots free themselves when the key expires (refreshed on every acquire).
const ACQUIRE = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) return 0 end
return 1`;

// Leases: a sorted set per key of lease ids scored by expiry (Redis's own clock, so processes'
// clocks do not matter). Taking one prunes the expired and counts in the same script.
const LEASE_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;
const LEASE_TAKE = `${LEASE_NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;
const LEASE_RENEW = `${LEASE_NOW}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// A line: KEYS[1] a sorted set of ids by when they joined (Redis's microseconds, then the id),
// KEYS[2] their expiries. ARGV: id, wait ms, hold ms, max. 1: first, 0: waiting, -1: full.
const LINE = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  redis.call('ZREM', KEYS[1], gone)
  redis.call('ZREM', KEYS[2], gone)
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return -1 end
  redis.call('ZADD', KEYS[1], tonumber(t[1]) * 1000000 + tonumber(t[2]), ARGV[1])
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0)[1] == ARGV[1]
local keep = tonumber(first and ARGV[3] or ARGV[2])
redis.call('ZADD', KEYS[2], now + keep, ARGV[1])
-- Only ever lengthened: a short waiter must not cut the life of a longer holder's line.
local longest = math.max(tonumber(ARGV[2]), tonumber(ARGV[3]))
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < longest then redis.call('PEXPIRE', KEYS[i], longest) end
end
return first and 1 or 0`;

/** The limiter's connection with its scripts (defineCommand sends EVALSHA, the text once per connection). */
type LimiterRedis = Redis & {
  tpHit(n: number, ...args: string[]): Promise<[number, number]>;
  tpAcquire(key: string, max: string, ttl: string): Promise<number>;
  tpHitAcquire(n: number, ...args: string[]): Promise<[number, number, number]>;
  tpLeaseTake(key: string, id: string, max: string, ttl: string): Promise<number>;
  tpLeaseRenew(key: string, id: string, ttl: string): Promise<number>;
  tpLine(line: string, expiries: string, id: string, waitMs: string, holdMs: string, max: string): Promise<number>;
};

/** One id in a lease set on Redis (see MemoryLease for why a class). */
class RedisLease implements Lease {
  private released = false;
  constructor(
    private readonly redis: LimiterRedis,
    private readonly set: string,
    private readonly id: string,
    private readonly ttlMs: number,
  ) {}

  async renew() {
    if (!this.released) await this.redis.tpLeaseRenew(this.set, this.id, String(this.ttlMs));
  }

  async release() {
    if (this.released) return;
    this.released = true;
    await this.redis.zrem(this.set, this.id).catch(() => {});
  }
}

function createRedisLimiter(url: string, prefix: string): Limiter {
  // Auto-pipelining: the checks of concurrent calls issued in one tick share one write to Redis.
  const redis = new Redis(url, { maxRetriesPerRequest: 2, connectionName: `${prefix}:limits`, enableAutoPipelining: true });
  // Reconnects are retried and each command's failure reaches its caller; without a listener
  // ioredis prints "[ioredis] Unhandled error event" on every reconnect while Redis is down.
  redis.on('error', () => {});
  // defineCommand sends EVALSHA, the script's text only once per connection.
  redis.defineCommand('tpHit', { lua: HIT });
  redis.defineCommand('tpAcquire', { numberOfKeys: 1, lua: ACQUIRE });
  redis.defineCommand('tpHitAcquire', { lua: HIT_ACQUIRE });
  redis.defineCommand('tpLeaseTake', { numberOfKeys: 1, lua: LEASE_TAKE });
  redis.defineCommand('tpLeaseRenew', { numberOfKeys: 1, lua: LEASE_RENEW });
  redis.defineCommand('tpLine', { numberOfKeys: 2, lua: LINE });
  const scripts = redis as LimiterRedis;
  const k = (key: string) => `${prefix}:limit:${key}`;
  const releaser = (key: string) => {
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await redis.decr(k(key)).catch(() => {});
    };
  };
  return {
    async hit(checks) {
      const args = [...checks.map((c) => k(c.key)), ...checks.flatMap((c) => [String(c.limit), String(c.windowMs)])];
      const [over, ttl] = await scripts.tpHit(checks.length, ...args);
      return over < 0 ? { over: -1, retryAfterMs: 0 } : { over, retryAfterMs: Math.max(ttl, 1) };
    },
    async acquire(key, max, ttlMs) {
      const got = await scripts.tpAcquire(k(key), String(max), String(ttlMs));
      return got ? releaser(key) : undefined;
    },
    async hitAndAcquire(checks, slot) {
      const keys = [...checks.map((c) => k(c.key)), k(slot.key)];
      const args = [...checks.flatMap((c) => [String(c.limit), String(c.windowMs)]), String(slot.max), String(slot.ttlMs)];
      const [over, ttl, got] = await scripts.tpHitAcquire(keys.length, ...keys, ...args);
      if (over >= 0) return { over, retryAfterMs: Math.max(ttl, 1) };
      return { over: -1, retryAfterMs: 0, release: got ? releaser(slot.key) : undefined };
    },
    async lease(key, max, ttlMs) {
      const id = flatUuid();
      const set = k(`lease:${key}`);
      if (!(await scripts.tpLeaseTake(set, id, String(max), String(ttlMs)))) return undefined;
      return new RedisLease(scripts, set, id, ttlMs);
    },
    async line(key, id, { waitMs, holdMs, max }) {
      const got = await scripts.tpLine(k(`line:${key}`), k(`line:${key}:until`), id, String(waitMs), String(holdMs), String(max));
      return got === 1 ? 'first' : got === 0 ? 'waiting' : 'full';
    },
    async leaveLine(key, id) {
      await redis.multi().zrem(k(`line:${key}`), id).zrem(k(`line:${key}:until`), id).exec();
    },
    async close() {
      redis.disconnect();
    },
  };
}

export const createLimiter = (config: Config): Limiter =>
  config.redis ? createRedisLimiter(config.redis.url, config.redis.prefix) : createMemoryLimiter();

/**
 * What an anonymous limit counts a client address by: an IPv4 address, or an IPv6 /64, which one
 * host usually has whole (counting each of its addresses gives one host 2^64 allowances).
 */
export function countedNetwork(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}
