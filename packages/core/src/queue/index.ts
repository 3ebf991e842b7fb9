import type { Services } from '../services';
import { createBullDispatcher, startCallWorker } from './bullmq';
import { createInProcessDispatcher } from './in-process';
import type { Dispatcher } from './types';

export type { AttemptResult } from './deliver';
export { createInProcessDispatcher } from './in-process';
export { CALLS_QUEUE, checkEvictionPolicy } from './bullmq';
export type { CallWorker, CallWorkerOptions, LocalReplies, RedisSettings } from './bullmq';

export async function startQueue(svc: Services): Promise<Dispatcher> {
  const redis = svc.config.redis;
  if (!redis) {
    const dispatcher = createInProcessDispatcher(svc);
    svc.closers.push(() => dispatcher.close());
    return dispatcher;
  }
  const dispatcher = createBullDispatcher(svc, redis);
  svc.closers.push(() => dispatcher.close());
  svc.readiness.queue = () => dispatcher.ping();
  if (svc.config.role !== 'api') {
    const worker = await startCallWorker(svc, redis, { local: dispatcher.local });
    // Closed before the dispatcher and the bus (closers run last added first).
    svc.closers.push(() => worker.close());
  }
  return dispatcher;
}
