import type { Services } from '../services';
import { cancelled, deliverCall } from './deliver';
import type { CallJob, CallOutcome, Dispatcher } from './types';
import type { CancelSignal } from '../cancel';

/** The embedded default: calls run in this process, at most `concurrency` at a time. */
export function createInProcessDispatcher(svc: Services, opts: { concurrency?: number } = {}): Dispatcher & { depth(): number } {
  const limit = opts.concurrency ?? 64;
  let running = 0;
  let closed = false;
  const waiting: Array<{ take: () => void; giveUp: () => void }> = [];
  const inFlight = new Set<Promise<unknown>>();

  const release = () => {
    running--;
    waiting.shift()?.take();
  };

  /** Resolves true once a slot is ours, false if the caller gave up first. */
  const acquire = (signal?: CancelSignal) =>
    new Promise<boolean>((resolve) => {
      if (running < limit) {
        running++;
        return resolve(true);
      }
      const entry = {
        take: () => {
          signal?.removeEventListener('abort', entry.giveUp);
          running++;
          resolve(true);
        },
        giveUp: () => {
          const i = waiting.indexOf(entry);
          if (i >= 0) waiting.splice(i, 1);
          resolve(false);
        },
      };
      waiting.push(entry);
      signal?.addEventListener('abort', entry.giveUp, { once: true });
    });

  return {
    async dispatch(job: CallJob, signal?: CancelSignal): Promise<CallOutcome> {
      if (closed) return { kind: 'failure', errorClass: 'unavailable', message: 'Toolport is shutting down; try again.' };
      if (signal?.aborted || !(await acquire(signal))) return cancelled();
      const run = deliverCall(svc, job, { signal }).finally(release);
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run)).catch(() => {});
      return run;
    },
    /** Calls waiting for a free slot (the `toolport_queue_depth` gauge). */
    depth: () => waiting.length,
    async close() {
      closed = true;
      // Calls not started yet are not started at all.
      for (const entry of [...waiting]) entry.giveUp();
      await Promise.allSettled([...inFlight]);
    },
  };
}
