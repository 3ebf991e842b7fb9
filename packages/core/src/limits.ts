import { Redis } from 'ioredis';
import type { Config } from './config';

/** Shared counters for rate and concurrency limits: in this process, or across processes on Redis. */
export interface Limiter {
  /** Counts one event in a fixed window; `retryAfterMs` > 0 when over `limit`. */
  hit(key: string, limit: number, windowMs: number): Promise<{ ok: boolean; retryAfterMs: number }>;
  /** Takes one of `max` slots (released by the returned function), or undefined when all are taken. */
  acquire(key: string, max: number, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
  close(): Promise<void>;
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
    async hit(key, limit, windowMs) {
      const now = Date.now();
      let w = windows.get(key);
      if (!w || w.resetAt <= now) windows.set(key, (w = { count: 0, resetAt: now + windowMs }));
      w.count++;
      return w.count <= limit ? { ok: true, retryAfterMs: 0 } : { ok: false, retryAfterMs: w.resetAt - now };
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

// One round trip each: count and set the window's expiry atomically.
const HIT = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;
// A crashed process's slots free themselves when the key expires (refreshed on every acquire).
const ACQUIRE = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) return 0 end
return 1`;

export function createRedisLimiter(url: string, prefix: string): Limiter {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, connectionName: `${prefix}:limits` });
  const k = (key: string) => `${prefix}:limit:${key}`;
  return {
    async hit(key, limit, windowMs) {
      const [n, ttl] = (await redis.eval(HIT, 1, k(key), String(windowMs))) as [number, number];
      return n <= limit ? { ok: true, retryAfterMs: 0 } : { ok: false, retryAfterMs: Math.max(ttl, 1) };
    },
    async acquire(key, max, ttlMs) {
      const got = (await redis.eval(ACQUIRE, 1, k(key), String(max), String(ttlMs))) as number;
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
