import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` every 25 ms until it answers something (not undefined, null or false), or fails
 * the test saying what it waited for. For what a test reads behind the call it made (a log row,
 * an app's answer, a request the app received).
 */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && (v as unknown) !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** That `call` has not settled after a moment: it is waiting (for the person, say). */
export async function stillWaiting(call: Promise<unknown>, what = 'the call is still waiting for the person') {
  const raced = await Promise.race([call.then(() => 'settled', () => 'settled'), sleep(400).then(() => 'waiting')]);
  if (raced !== 'waiting') throw new Error(`expected ${what}, but it had already ended`);
}
