import type { Ctx } from '../context';
import { personId } from '../context';
import { limitExceeded } from '../errors';
import type { Services } from '../services';
import { listDecidedSince, listPending } from './decide';
import { userChannel, type UserEvent } from './records';

/** Open dashboard streams per person, per process (each holds a socket and a bus handler). */
export const MAX_STREAMS_PER_PERSON = 10;
/** How far back a reconnecting stream is told about decisions it may have missed. */
const CATCH_UP_MS = 2 * 60_000;

const openByService = new WeakMap<Services, Map<string, number>>();

export interface ApprovalEvents {
  close(): Promise<void>;
}

/**
 * Follows the person's approvals for a live stream: the pending ones first (a reconnect catches
 * up), then every `approval` / `approval.decided` from any process, until `close`.
 */
export async function openApprovalEvents({
  ctx,
  send,
  lastEventId,
}: {
  ctx: Ctx;
  send: (e: UserEvent) => void;
  lastEventId?: string;
}): Promise<ApprovalEvents> {
  const { svc } = ctx;
  const userId = personId(ctx);
  let open = openByService.get(svc);
  if (!open) openByService.set(svc, (open = new Map()));
  const count = open.get(userId) ?? 0;
  if (count >= MAX_STREAMS_PER_PERSON) throw limitExceeded(`At most ${MAX_STREAMS_PER_PERSON} event streams may be open at once.`, 5);
  open.set(userId, count + 1);
  const release = () => {
    const n = (open.get(userId) ?? 1) - 1;
    if (n <= 0) open.delete(userId);
    else open.set(userId, n);
  };

  let unsubscribe: (() => Promise<void>) | undefined;
  try {
    // Subscribed before reading: an approval made meanwhile is sent twice at worst, never missed.
    unsubscribe = await svc.bus.subscribe(userChannel(userId), (m) => send(m as UserEvent));
    if (lastEventId) {
      for (const d of await listDecidedSince(svc, userId, new Date(Date.now() - CATCH_UP_MS))) {
        send({ event: 'approval.decided', id: `${d.id}.decided`, data: { id: d.id, status: d.status } });
      }
    }
    for (const view of await listPending(svc, userId)) send({ event: 'approval', id: view.id, data: view });
  } catch (err) {
    await unsubscribe?.().catch(() => {});
    release();
    throw err;
  }
  let closed = false;
  return {
    async close() {
      if (closed) return;
      closed = true;
      release();
      await unsubscribe!().catch(() => {});
    },
  };
}
