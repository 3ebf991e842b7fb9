import { and, eq, isNull } from 'drizzle-orm';
import { cacheKind, type BoundedMap } from '../caches';
import type { Ctx } from '../context';
import { personId } from '../context';
import { limitExceeded, notFound } from '../errors';
import type { Lease } from '../limits';
import { addons } from '../db/schema/index';
import type { DeliveryRow } from '../db/log-writer';
import { DELIVERY_WATCH_ASK_CHANNEL, DELIVERY_WATCH_CHANNEL, liveDeliveryChannel, type LiveDelivery } from '../events/channels';
import type { CallJob } from '../queue/types';
import type { Services } from '../services';

/*
 * A worker publishes an add-on's attempts only while some API process announces a stream of it
 * (every ANNOUNCE_MS, expiring, so a crashed holder goes quiet), so calls cost nothing unwatched.
 * A new follower asks holders to announce again and waits SETTLE_MS before deciding.
 */

/** Open live delivery streams per developer, across every API process when Redis is configured. */
const MAX_LIVE_STREAMS_PER_DEVELOPER = 5;
/** Open live delivery streams per API process, whoever holds them. */
const MAX_LIVE_STREAMS_PER_PROCESS = 1_000;
/** A stream's place is a lease renewed while it is open: a crashed process's places free themselves. */
const LEASE_MS = 60_000;
const ANNOUNCE_MS = 20_000;
/** How long an announcement holds: two may be lost before a stream stops hearing attempts. */
const WATCH_TTL_MS = 3 * ANNOUNCE_MS;
/** The longest announcement a process believes (it comes from another process, maybe another release). */
const MAX_WATCH_TTL_MS = 5 * 60_000;
const MAX_WATCHED = 10_000;
const SETTLE_MS = 1_000;
const MAX_HELD = 1_000;
/** The arguments are what the add-on's webhook receives anyway; a stream shows the first 2,048 characters. */
const MAX_ARGUMENTS_CHARS = 2_048;

interface Watched {
  /** Add-on id → epoch ms (by the services' clock) until which its attempts are published. */
  until: BoundedMap<string, number>;
  /** Attempts waiting for the first answers, or undefined once settled. */
  held: Array<() => void> | undefined;
}

const WATCHED = cacheKind('watched add-ons', (svc, scope): Watched => {
  const watched: Watched = { until: scope.map(MAX_WATCHED, MAX_WATCH_TTL_MS), held: [] };
  const settle = () => {
    const held = watched.held ?? [];
    watched.held = undefined;
    for (const publish of held) publish();
  };
  const ask = () => svc.bus.publish(DELIVERY_WATCH_ASK_CHANNEL, {});
  scope
    .subscribe(DELIVERY_WATCH_CHANNEL, (m) => {
      const { addonId, ttlMs } = (m ?? {}) as { addonId?: unknown; ttlMs?: unknown };
      if (typeof addonId !== 'string' || typeof ttlMs !== 'number' || !(ttlMs > 0)) return;
      watched.until.set(addonId, svc.clock.now().getTime() + Math.min(ttlMs, MAX_WATCH_TTL_MS));
    })
    .then(ask)
    .then(
      () => setTimeout(settle, SETTLE_MS).unref(),
      (err) => {
        svc.log.warn('cannot follow live delivery streams; they may miss the attempts made here', { err });
        settle();
      },
    );
  // Announcements made while the bus was down were missed.
  scope.afterReconnect(() => void ask().catch(() => {}));
  return watched;
});

/** Cuts a text to `max` UTF-16 units without splitting a surrogate pair, "…" marking the cut. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/** What a stream's line names: a delivery's job, or a task's answer or progress (no arguments then). */
export type LiveCall = Pick<CallJob, 'addonId' | 'callId' | 'tool' | 'arguments' | 'subject'> & { type: string };

/** Without an announced stream this is one map lookup: nothing is built or sent. */
export function publishLiveDelivery(svc: Services, job: LiveCall, row: DeliveryRow, outcome: string) {
  const watched = svc.caches.get(WATCHED);
  if (!watched.held) publishIfWatched(svc, watched, job, row, outcome);
  else if (watched.held.length < MAX_HELD) watched.held.push(() => publishIfWatched(svc, watched, job, row, outcome));
}

function publishIfWatched(svc: Services, watched: Watched, job: LiveCall, row: DeliveryRow, outcome: string) {
  const until = watched.until.get(job.addonId);
  if (until === undefined || until < svc.clock.now().getTime()) return;
  const event: LiveDelivery = {
    at: (row.createdAt ?? svc.clock.now()).toISOString(),
    callId: job.callId,
    type: job.type,
    tool: job.tool,
    arguments: cut(job.arguments, MAX_ARGUMENTS_CHARS),
    attempt: row.attempt,
    outcome,
    status: row.status ?? null,
    errorClass: row.errorClass ?? null,
    detail: row.detail ?? null,
    latencyMs: row.latencyMs,
    subject: job.subject,
  };
  void svc.bus.publish(liveDeliveryChannel(job.addonId), event).catch(() => {});
}

/** A call Toolport answered itself, never sending it to its add-on (call-tool.ts). */
export interface LiveRefusal {
  addonId: string;
  /** The person who made the call: only the add-on's own developer's calls are shown. */
  userId: string;
  callId: string;
  tool: string;
  /** As the app sent them, unchecked. */
  arguments: unknown;
  /** The call log's outcome: `invalid_arguments`, `switched_off`, `not_reviewed`, `denied`... */
  outcome: string;
  /** What the app was told. */
  sentence: string;
  latencyMs: number;
}

/**
 * A refused call goes on its add-on's stream beside the deliveries, with the sentence the app read,
 * but only when the developer made it: the add-on never received anyone else's, so neither does its
 * developer. Without an announced stream this is one map lookup.
 */
export function publishLiveRefusal(svc: Services, refusal: LiveRefusal) {
  const watched = svc.caches.get(WATCHED);
  const publish = () => void refuseIfWatched(svc, watched, refusal).catch((err) => svc.log.warn('cannot show a refused call on its live stream', { err }));
  if (!watched.held) publish();
  else if (watched.held.length < MAX_HELD) watched.held.push(publish);
}

async function refuseIfWatched(svc: Services, watched: Watched, r: LiveRefusal) {
  const until = watched.until.get(r.addonId);
  if (until === undefined || until < svc.clock.now().getTime()) return;
  const [own] = await svc.db
    .select({ id: addons.id })
    .from(addons)
    .where(and(eq(addons.id, r.addonId), eq(addons.ownerId, r.userId), isNull(addons.deletedAt)));
  if (!own) return;
  const event: LiveDelivery = {
    at: svc.clock.now().toISOString(),
    callId: r.callId,
    type: 'tool.call',
    tool: r.tool,
    arguments: cut(JSON.stringify(r.arguments ?? {}) ?? '', MAX_ARGUMENTS_CHARS),
    attempt: 0,
    outcome: 'not_sent',
    status: null,
    errorClass: r.outcome,
    detail: r.sentence,
    latencyMs: Math.max(0, Math.round(r.latencyMs)),
    subject: svc.secrets.pseudonym(r.addonId, r.userId),
  };
  await svc.bus.publish(liveDeliveryChannel(r.addonId), event);
}

interface Holders {
  byAddon: Map<string, number>;
  total: number;
  /** The answer to other processes' asks is live. */
  ready: Promise<void>;
}

const announce = (svc: Services, addonId: string) => svc.bus.publish(DELIVERY_WATCH_CHANNEL, { addonId, ttlMs: WATCH_TTL_MS });

const HOLDERS = cacheKind('live delivery streams', (svc, scope): Holders => {
  const holders: Holders = { byAddon: new Map(), total: 0, ready: Promise.resolve() };
  holders.ready = scope
    .subscribe(DELIVERY_WATCH_ASK_CHANNEL, () => {
      for (const addonId of holders.byAddon.keys()) void announce(svc, addonId).catch(() => {});
    })
    // Streams still work: a process that starts following meanwhile hears of them at the next announcement.
    .catch((err) => svc.log.warn('cannot answer the asks for live delivery streams', { err }));
  return holders;
});

export interface LiveDeliveries {
  close(): Promise<void>;
}

const isLiveDelivery = (m: unknown): m is LiveDelivery => {
  const d = m as Partial<LiveDelivery> | null;
  return !!d && typeof d.callId === 'string' && typeof d.tool === 'string' && typeof d.at === 'string' && typeof d.attempt === 'number';
};

/** Each finished attempt, from any process, until `close`. */
export async function openLiveDeliveries({
  ctx,
  addonId,
  send,
}: {
  ctx: Ctx;
  addonId: string;
  send: (d: LiveDelivery) => void;
}): Promise<LiveDeliveries> {
  const { svc } = ctx;
  const userId = personId(ctx);
  const [addon] = await svc.db
    .select({ id: addons.id })
    .from(addons)
    .where(and(eq(addons.id, addonId), eq(addons.ownerId, userId), isNull(addons.deletedAt)));
  if (!addon) throw notFound('That add-on');

  const holders = svc.caches.get(HOLDERS);
  if (holders.total >= MAX_LIVE_STREAMS_PER_PROCESS) {
    throw limitExceeded('This Toolport server holds as many live delivery streams as it can right now; try again in a minute.', 60);
  }
  // Taken before any wait, so streams opening at once cannot pass the bound together.
  holders.total++;
  let closed = false;
  let counted = false;
  let lease: Lease | undefined;
  let unsubscribe: (() => Promise<void>) | undefined;
  let renew: NodeJS.Timeout | undefined;
  const close = async () => {
    if (closed) return;
    closed = true;
    clearInterval(renew);
    holders.total--;
    if (counted) {
      const left = (holders.byAddon.get(addonId) ?? 1) - 1;
      if (left > 0) holders.byAddon.set(addonId, left);
      else holders.byAddon.delete(addonId);
    }
    await Promise.allSettled([lease?.release(), unsubscribe?.()]);
  };
  try {
    lease = await svc.limiter.lease(`live-deliveries:${userId}`, MAX_LIVE_STREAMS_PER_DEVELOPER, LEASE_MS);
    if (!lease) {
      throw limitExceeded(
        `At most ${MAX_LIVE_STREAMS_PER_DEVELOPER} live delivery streams may be open at once; stop another \`toolport dev\` first.`,
        5,
      );
    }
    await holders.ready;
    // Subscribed before announcing: no attempt published for this stream is missed.
    unsubscribe = await svc.bus.subscribe(liveDeliveryChannel(addonId), (m) => {
      if (!closed && isLiveDelivery(m)) send(m);
    });
    holders.byAddon.set(addonId, (holders.byAddon.get(addonId) ?? 0) + 1);
    counted = true;
    await announce(svc, addonId);
  } catch (err) {
    await close();
    throw err;
  }
  renew = setInterval(() => {
    lease!.renew().catch((err) => svc.log.warn('cannot renew a live delivery stream lease', { err }));
    announce(svc, addonId).catch((err) => svc.log.warn('cannot announce a live delivery stream', { err }));
  }, ANNOUNCE_MS);
  renew.unref();
  return { close };
}
