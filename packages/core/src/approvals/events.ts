import type { Ctx } from '../context';
import { personId } from '../context';
import { limitExceeded } from '../errors';
import { listDecidedSince, listPending } from './decide';
import { withNames } from './names';
import { userChannel } from '../events/channels';
import type { UserEvent } from './records';

/** Open dashboard streams per person, across every API process when Redis is configured. */
export const MAX_STREAMS_PER_PERSON = 10;
/** A stream's place is a lease renewed while it is open: a crashed process's places free themselves after this. */
const STREAM_LEASE_MS = 60_000;
const STREAM_RENEW_MS = STREAM_LEASE_MS / 3;
/** How far back a reconnecting stream is told about decisions it may have missed. */
const CATCH_UP_MS = 2 * 60_000;

export interface ApprovalEvents {
  close(): Promise<void>;
}

/** Pending ones first, so a reconnect catches up; then every event from any process. */
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
  const lease = await svc.limiter.lease(`streams:${userId}`, MAX_STREAMS_PER_PERSON, STREAM_LEASE_MS);
  if (!lease) throw limitExceeded(`At most ${MAX_STREAMS_PER_PERSON} event streams may be open at once.`, 5);
  const renew = setInterval(() => {
    lease.renew().catch((err) => svc.log.warn('cannot renew an event stream lease', { err }));
  }, STREAM_RENEW_MS);
  renew.unref();
  const release = () => {
    clearInterval(renew);
    void lease.release().catch(() => {});
  };

  let closed = false;
  // A new approval on the bus carries the row's ids: its names are looked up before it is sent,
  // and every event waits for the one before, so a decision never overtakes its approval.
  let order = Promise.resolve();
  const forward = (e: UserEvent) => {
    order = order.then(async () => {
      let out = e;
      if (e.event === 'approval') {
        try {
          out = { ...e, data: (await withNames(svc, userId, [e.data]))[0]! };
        } catch (err) {
          svc.log.warn('cannot name an approval; sending its ids', { err, approvalId: e.id });
        }
      }
      if (!closed) send(out);
    }).catch((err) => svc.log.warn('cannot send an approval event', { err }));
  };
  let unsubscribe: (() => Promise<void>) | undefined;
  try {
    // Subscribed before reading: an approval made meanwhile is sent twice at worst, never missed.
    unsubscribe = await svc.bus.subscribe(userChannel(userId), (m) => forward(m as UserEvent));
    if (lastEventId) {
      for (const d of await listDecidedSince(svc, userId, new Date(svc.clock.now().getTime() - CATCH_UP_MS))) {
        send({ event: 'approval.decided', id: `${d.id}.decided`, data: { id: d.id, status: d.status } });
      }
    }
    for (const view of await listPending(svc, userId)) send({ event: 'approval', id: view.id, data: view });
  } catch (err) {
    await unsubscribe?.().catch(() => {});
    release();
    throw err;
  }
  return {
    async close() {
      if (closed) return;
      closed = true;
      release();
      await unsubscribe!().catch(() => {});
    },
  };
}
