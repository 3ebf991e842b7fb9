import type { Clock } from '../clock';
import type { Database } from '../db/client';
import { WriteBehind } from '../db/write-behind';
import type { Logger } from '../log';
import { GENESIS, sealEvent } from './chain';

/** The chain of the operators' decisions; a person's chain is named by their account id. */
export const OPERATOR_CHAIN = 'operator';

export type AuditKind =
  | 'call'
  | 'approval'
  | 'release.accepted'
  | 'rule.set'
  | 'rule.removed'
  | 'app.let_in'
  | 'app.revoked'
  | 'listing.decided'
  | 'calls.cleared';

/** Strings, safe integers, booleans and null only (no fractions): the canonical form stays simple to recompute (docs/audit.md). */
export type AuditData = Record<string, string | number | boolean | null | undefined | string[]>;

interface Pending {
  chain: string;
  kind: AuditKind;
  at: string;
  data: AuditData;
}
interface Head {
  seq: number;
  hash: string;
}

/** Heads remembered between batches: a chain not among them costs one read before its next write. */
const HEADS_KEPT = 20_000;
/** Rounds of a batch whose chains other processes keep moving: each round at least one writer wins. */
const ROUNDS = 20;

/**
 * The audit trail, written behind like the call log (one statement per batch, off the call path).
 * Events are numbered and hashed here, at write time, from each chain's head as this process last
 * saw it; the statement moves a head only from that (seq, hash), so when another process appended
 * meanwhile it writes nothing for that chain, and this one reads the head again and re-chains.
 */
export class AuditLog {
  private readonly rows: WriteBehind<Pending>;
  private readonly heads = new Map<string, Head>();
  /** A batch whose statement failed may have been written all the same: its last event's hash per chain. */
  private readonly inDoubt = new Map<string, { hash: string; events: Set<Pending> }>();

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    log: Logger,
  ) {
    // A statement's fixed cost on file-backed PGlite (~0.4 ms CPU) dwarfs an event's (~0.02 ms): at
    // 10 ms, as the call log waits, the audit added ~120 µs CPU per call at 1,000 calls/s; at 50 ms, <40.
    // Only another process's export sees an event that much later: this one's flushes first.
    this.rows = new WriteBehind<Pending>({ name: 'audit', log, delayMs: 50, maxBatch: 500, write: (batch) => this.write(batch) });
  }

  record(chain: string, kind: AuditKind, data: AuditData): void {
    this.rows.push({ chain, kind, at: this.clock.now().toISOString(), data });
  }

  /** Resolves once every event recorded before this call is written. */
  flushed() {
    return this.rows.flushed();
  }

  close() {
    return this.rows.close();
  }

  private async write(batch: Pending[]): Promise<void> {
    let left = batch;
    for (let round = 0; left.length; round++) {
      if (round === ROUNDS) throw new Error(`audit chains moved under this writer ${ROUNDS} times running`);
      const unknown = [...new Set(left.map((p) => p.chain))].filter((c) => !this.heads.has(c));
      if (unknown.length) left = await this.readHeads(unknown, left);
      const { text, params, ends } = this.statement(left.filter((p) => this.heads.has(p.chain)));
      if (!ends.size) continue;
      let moved: Set<string>;
      try {
        moved = new Set((await this.database.all<{ chain: string }>(text, params)).map((r) => r.chain));
      } catch (err) {
        // Perhaps committed before the answer was lost: the next read of these heads tells.
        for (const [chain, end] of ends) {
          this.heads.delete(chain);
          this.inDoubt.set(chain, { hash: end.hash, events: new Set(left.filter((p) => p.chain === chain)) });
        }
        throw err;
      }
      for (const [chain, end] of ends) {
        this.heads.delete(chain);
        if (moved.has(chain)) this.keep(chain, end);
      }
      left = left.filter((p) => !moved.has(p.chain));
    }
  }

  /** Reads (creating at seq 0 where new) the heads of `chains`; drops events an in-doubt statement did write. */
  private async readHeads(chains: string[], left: Pending[]): Promise<Pending[]> {
    const params: unknown[] = [];
    const values = chains.map((c) => {
      params.push(c);
      return `($${params.length}::text)`;
    });
    params.push(GENESIS);
    const g = `$${params.length}::text`;
    // A head another process creates after this statement's snapshot is in neither half: read again next round.
    const rows = await this.database.all<{ chain: string; seq: string; hash: string }>(
      `with c (chain) as (values ${values.join(',')}),
       made as (insert into audit_heads (chain, seq, hash) select chain, 0, ${g} from c on conflict do nothing returning chain, seq, hash)
       select chain, seq::text as seq, hash from made
       union all select h.chain, h.seq::text, h.hash from audit_heads h join c using (chain)`,
      params,
    );
    let kept = left;
    for (const r of rows) {
      const doubt = this.inDoubt.get(r.chain);
      this.inDoubt.delete(r.chain);
      if (doubt?.hash === r.hash) kept = kept.filter((p) => !doubt.events.has(p));
      this.keep(r.chain, { seq: Number(r.seq), hash: r.hash });
    }
    return kept;
  }

  private keep(chain: string, head: Head) {
    this.heads.delete(chain);
    this.heads.set(chain, head);
    if (this.heads.size > HEADS_KEPT) this.heads.delete(this.heads.keys().next().value!);
  }

  /**
   * One statement: each chain's head moves from the (seq, hash) this process knows to its new last
   * event, and the events are inserted only for the chains whose head moved. Answers those chains.
   */
  private statement(events: Pending[]) {
    const params: unknown[] = [];
    const p = (value: unknown, type: string) => {
      params.push(value);
      return `$${params.length}::${type}`;
    };
    const tip = new Map<string, Head>();
    const starts = new Map<string, Head>();
    const rows: string[] = [];
    for (const e of events) {
      const head = tip.get(e.chain) ?? this.heads.get(e.chain)!;
      if (!starts.has(e.chain)) starts.set(e.chain, head);
      const seq = head.seq + 1;
      const { hash, line } = sealEvent({ v: 1, chain: e.chain, seq, prev: head.hash, at: e.at, kind: e.kind, data: e.data });
      tip.set(e.chain, { seq, hash });
      rows.push(`(${p(e.chain, 'text')},${p(seq, 'bigint')},${p(e.kind, 'text')},${p(e.at, 'timestamptz')},${p(line, 'text')})`);
    }
    const moves = [...tip].map(([chain, end]) => `(${p(chain, 'text')},${p(starts.get(chain)!.seq, 'bigint')},${p(end.seq, 'bigint')},${p(end.hash, 'text')})`);
    const text = `with v (chain, from_seq, to_seq, hash) as (values ${moves.join(',')}),
      moved as (update audit_heads h set seq = v.to_seq, hash = v.hash from v where h.chain = v.chain and h.seq = v.from_seq returning h.chain),
      e (chain, seq, kind, at, event) as (values ${rows.join(',')}),
      ins as (insert into audit_events (chain, seq, kind, at, event) select * from e where e.chain in (select chain from moved))
      select chain from moved`;
    return { text, params, ends: tip };
  }
}
