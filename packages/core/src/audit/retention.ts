import { CompactSign } from 'jose';
import { keyStore } from '../oauth/keys';
import type { Services } from '../services';
import { canonicalJson, checkpointPayload, type AuditCheckpoint } from './chain';

/** Events per statement, as the calls' removal: on the embedded default a statement holds the one thread the calls share. */
const BATCH = 1_000;
/** At most this many events a sweep; what is left waits for the next one. */
const MAX_PER_SWEEP = 100_000;
/** Chains looked at per statement: each is two index probes. */
const CHAINS_PER_PAGE = 500;
/**
 * A chain is cut once its oldest event is this much past its time, then back to the retention
 * exactly: each chain costs a signature and two statements about once a day, not every sweep.
 */
const SLACK_MS = 86_400_000;
/** Serialises the removals of every process, statement by statement: no two lock one chain's rows in opposite orders. */
const RETENTION_LOCK = 7_486_133;

interface ChainStart {
  chain: string;
  /** The chain's first row, when it is a checkpoint. */
  checkpoint: string | null;
  /** Whether its first event (after any checkpoint) is past its time by more than SLACK_MS. */
  old: boolean;
}

/**
 * Removes the audit events older than the operator keeps them (config.retention.auditDays), within
 * a day of their time (SLACK_MS). Each
 * chain's removed stretch 1..n leaves one checkpoint at seq n: event n's hash, signed with the
 * deployment's current key (docs/audit.md), so event n + 1 still links to something verifiable. A
 * later removal merges into it. Checkpoints signed by a key that is no longer the signing one are
 * signed again, so they verify against the JWKS published now. Answers how many events it removed.
 */
export async function forgetOldAuditEvents(svc: Services): Promise<number> {
  const cutoff = svc.clock.now().getTime() - svc.config.retention.auditDays * 86_400_000;
  const before = new Date(cutoff).toISOString();
  const due = new Date(cutoff - SLACK_MS).toISOString();
  let removed = 0;
  let after = '';
  for (;;) {
    const page = await svc.database.all<ChainStart>(
      `select h.chain, case when f.kind = 'checkpoint' then f.event end as checkpoint, coalesce(o.at < $2::timestamptz, false) as old
       from (select chain from audit_heads where chain > $1 order by chain limit ${CHAINS_PER_PAGE}) h
       left join lateral (select kind, event from audit_events e where e.chain = h.chain order by seq limit 1) f on true
       left join lateral (select at from audit_events e where e.chain = h.chain and e.kind <> 'checkpoint' order by seq limit 1) o on true
       order by h.chain`,
      [after, due],
    );
    for (const start of page) {
      if (start.old) {
        for (;;) {
          const n = await removeStretch(svc, start.chain, before);
          removed += n;
          if (n < BATCH || removed >= MAX_PER_SWEEP) break;
          await new Promise((resolve) => setImmediate(resolve));
        }
      } else if (start.checkpoint) {
        await signAgainIfRetired(svc, start.chain, start.checkpoint);
      }
      if (removed >= MAX_PER_SWEEP) break;
    }
    if (page.length < CHAINS_PER_PAGE || removed >= MAX_PER_SWEEP) break;
    after = page[page.length - 1]!.chain;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return removed;
}

/** The checkpoint line that stands for event `seq` of the chain (the last removed) and everything before it. */
async function checkpointFor(svc: Services, chain: string, seq: number, standsFor: { at: string; hash: string }): Promise<string> {
  const { kid, key } = await keyStore(svc).signingKey();
  const body: Omit<AuditCheckpoint, 'sig'> = { v: 1, chain, seq, at: standsFor.at, kind: 'checkpoint', hash: standsFor.hash };
  const sig = await new CompactSign(new TextEncoder().encode(checkpointPayload(body))).setProtectedHeader({ alg: 'ES256', kid, typ: 'toolport-audit-checkpoint' }).sign(key);
  return canonicalJson({ ...body, sig });
}

/**
 * The chain's oldest events, up to BATCH, through the last one past its time (n), go; event n's
 * row becomes the checkpoint. One statement, so the chain is never without its link; it changes
 * nothing if event n is not what was read (another process got there first). Answers the events removed.
 */
async function removeStretch(svc: Services, chain: string, before: string): Promise<number> {
  const [last] = await svc.database.all<{ seq: string; event: string }>(
    `select seq::text as seq, event from (select seq, at, event from audit_events where chain = $1 and kind <> 'checkpoint' order by seq limit ${BATCH}) s
     where s.at < $2::timestamptz order by s.seq desc limit 1`,
    [chain, before],
  );
  if (!last) return 0;
  const seq = Number(last.seq);
  const checkpoint = await checkpointFor(svc, chain, seq, JSON.parse(last.event) as { at: string; hash: string });
  // Rows go in seq order (the delete before the update), as an account's deletion takes them.
  const [done] = await svc.database.all<{ removed: number; placed: number }>(
    `with l as (select pg_advisory_xact_lock(${RETENTION_LOCK})),
       n as (select 1 from audit_events where chain = $1 and seq = $2::bigint and event = $3 and (select count(*) from l) = 1),
       gone as (delete from audit_events where chain = $1 and seq < $2::bigint and exists (select 1 from n) returning kind),
       cp as (update audit_events set kind = 'checkpoint', event = $4 where chain = $1 and seq = $2::bigint and event = $3 and (select count(*) from gone) >= 0 returning 1)
     select (select count(*) from gone where kind <> 'checkpoint')::int as removed, (select count(*) from cp)::int as placed`,
    [chain, seq, last.event, checkpoint],
  );
  return done && Number(done.placed) ? Number(done.removed) + 1 : 0;
}

/**
 * A retired key leaves the JWKS minutes after its last tokens expire (oauth/keys.ts): a checkpoint
 * it signed is signed again with the current key, within a sweep of the rotation.
 */
async function signAgainIfRetired(svc: Services, chain: string, line: string): Promise<void> {
  const cp = JSON.parse(line) as AuditCheckpoint;
  const header = JSON.parse(Buffer.from(cp.sig.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: string };
  const { kid } = await keyStore(svc).signingKey();
  if (header.kid === kid) return;
  const again = await checkpointFor(svc, chain, cp.seq, cp);
  await svc.database.run(`update audit_events set event = $3 where chain = $1 and seq = $2::bigint and event = $4`, [chain, cp.seq, again, line]);
}
