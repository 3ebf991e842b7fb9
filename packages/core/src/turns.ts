import { EventEmitter } from 'node:events';
import type { CancelSignal } from './cancel';
import type { Limiter } from './limits';

/** How often a waiter asks again when no turn in this process ended (one in another process may have). */
const ASK_EVERY_MS = 200;
/** A waiter that stops asking this long (its process died) loses its place. */
const WAITER_KEPT_MS = 5_000;

/** Turns ended in this process wake its waiters at once; other processes' are heard by asking. */
const ended = new EventEmitter().setMaxListeners(0);

export type TurnWait = { kind: 'turn' } | { kind: 'full' } | { kind: 'late' } | { kind: 'cancelled' };

/**
 * Waits until `id` is first in `key`'s line, in the order of asking, across processes. The turn
 * lasts until endTurn, or `holdMs` after it began. Leaves the line when `waitMs` passes or the
 * signal fires first.
 */
export async function waitTurn(
  limiter: Limiter,
  key: string,
  id: string,
  o: { waitMs: number; holdMs: number; max: number; signal?: CancelSignal },
): Promise<TurnWait> {
  const until = performance.now() + o.waitMs;
  for (let joined = false; ; joined = true) {
    // A cancelled call is never given the turn, even if its place came up meanwhile.
    if (o.signal?.aborted) return leave(limiter, key, id, joined, 'cancelled');
    const place = await limiter.line(key, id, { waitMs: WAITER_KEPT_MS, holdMs: o.holdMs, max: o.max });
    if (place === 'first') return { kind: 'turn' };
    if (place === 'full') return { kind: 'full' };
    const left = until - performance.now();
    if (left <= 0) return leave(limiter, key, id, true, 'late');
    await nextChance(key, Math.min(ASK_EVERY_MS, left), o.signal);
  }
}

/** The line of one person's calls of one add-on's exclusive tools. */
export const exclusiveLine = (userId: string, addonId: string) => `exclusive:${userId}:${addonId}`;

async function leave(limiter: Limiter, key: string, id: string, joined: boolean, kind: 'cancelled' | 'late'): Promise<TurnWait> {
  if (joined) {
    await limiter.leaveLine(key, id);
    // Leaving may make the next one first.
    ended.emit(key);
  }
  return { kind };
}

export async function endTurn(limiter: Limiter, key: string, id: string): Promise<void> {
  await limiter.leaveLine(key, id);
  ended.emit(key);
}

function nextChance(key: string, ms: number, signal?: CancelSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ended.off(key, done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    ended.on(key, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
