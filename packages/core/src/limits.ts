import { Redis } from 'ioredis';
import type { Config } from './config';

/** Shared counters for rate and concurrency limits: in this process, or across processes on Redis. */
export interface Limiter {
  /**
   * Counts one event in each fixed window, in order, stopping at the first that is over its limit:
   * `over` is that window's index (or -1), `retryAfterMs` when it resets. One round trip on Redis.
   */
  hit(windows: RateWindow[]): Promise<{ over: number; retryAfterMs: number }>;
  /** Takes one of `max` slots (released by the returned function), or undefined when all are taken. */
  acquire(key: string, max: number, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
  close(): Promise<void>;
}

export interface RateWindow {
  key: string;
  limit: number;
  windowMs: number;
}

export function createMemoryLimiter(): Limiter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const slots = new Map<string, number>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k);
  }, 60_000);
  sweep.unref();
  return {
    async hit(checks) {
      const now = Date.now();
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
    async close() {
      clearInterval(sweep);
    },
  };
}

// One round trip for every window of a call: count, set each window's expiry, stop at the first over.
const HIT = `for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
  if n > tonumber(ARGV[2 * i - 1]) then return {i - 1, redis.call('PTTL', key)} end
end
return {-1, 0}`;
// A crashed process's slots free themselves when the key expires (refreshed on every acquire).
const ACQUIRE = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) return 0 end
return 1`;

export function createRedisLimiter(url: string, prefix: string): Limiter {
  // Auto-pipelining: the checks of concurrent calls issued in one tick share one write to Redis.
  const redis = new Redis(url, { maxRetriesPerRequest: 2, connectionName: `${prefix}:limits`, enableAutoPipelining: true });
  // defineCommand sends EVALSHA, the script's text only once per connection.
  redis.defineCommand('tpHit', { lua: HIT });
  redis.defineCommand('tpAcquire', { numberOfKeys: 1, lua: ACQUIRE });
  const scripts = redis as unknown as {
    tpHit(n: number, ...args: string[]): Promise<[number, number]>;
    tpAcquire(key: string, max: string, ttl: string): Promise<number>;
  };
  const k = (key: string) => `${prefix}:limit:${key}`;
  return {
    async hit(checks) {
      const args = [...checks.map((c) => k(c.key)), ...checks.flatMap((c) => [String(c.limit), String(c.windowMs)])];
      const [over, ttl] = await scripts.tpHit(checks.length, ...args);
      return over < 0 ? { over: -1, retryAfterMs: 0 } : { over, retryAfterMs: Math.max(ttl, 1) };
    },
    async acquire(key, max, ttlMs) {
      const got = await scripts.tpAcquire(k(key), String(max), String(ttlMs));
      if (!got) return undefined;
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await redis.decr(k(key)).catch(() => {});
      };
    },
    async close() {
      redis.disconnect();
    },
  };
}

export const createLimiter = (config: Config): Limiter =>
  config.redis ? createRedisLimiter(config.redis.url, config.redis.prefix) : createMemoryLimiter();
