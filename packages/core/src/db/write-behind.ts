import { isDependencyDown } from '../errors';
import type { Logger } from '../log';

export interface WriteBehindOptions<Row> {
  /** For log lines: which log these rows belong to. */
  name: string;
  /** Writes rows in one statement. */
  write(rows: Row[]): Promise<void>;
  log: Logger;
  /** Rows per statement. */
  maxBatch?: number;
  /** Rows held while the database is unreachable; beyond this the oldest are dropped (and logged). */
  maxPending?: number;
  /** Waits between attempts at a failing batch. */
  retryDelaysMs?: number[];
  /** Group commit delay, so at low rates calls share a statement. `flushed()` does not wait for it. */
  delayMs?: number;
  /** How long a batch keeps waiting while the database is unreachable (restarting) before it is dropped. */
  outageMs?: number;
}

/** A Postgres restart takes seconds; one of about a minute is ridden out without losing a row. */
const OUTAGE_MS = 60_000;
const OUTAGE_STEP_MS = 1_000;

/**
 * Off the call path, in multi-row INSERTs: a statement's cost barely depends on its rows. The trade:
 * a row shows a moment late (readers here wait for `flushed()`), and a killed process loses its last rows.
 */
export class WriteBehind<Row> {
  private pending: Row[] = [];
  private draining?: Promise<void>;
  private pushed = 0;
  private settled = 0;
  private waiters: Array<{ upTo: number; resolve: () => void }> = [];
  private readonly maxBatch: number;
  private readonly maxPending: number;
  private readonly retryDelaysMs: number[];
  private readonly delayMs: number;
  /** Ends the current gathering wait early (a reader is waiting, or a batch is full). */
  private hurry?: () => void;

  constructor(private readonly opts: WriteBehindOptions<Row>) {
    this.maxBatch = opts.maxBatch ?? 200;
    this.maxPending = opts.maxPending ?? 50_000;
    this.retryDelaysMs = opts.retryDelaysMs ?? [100, 500, 2_000];
    this.delayMs = opts.delayMs ?? 0;
  }

  push(row: Row): void {
    if (this.pending.length >= this.maxPending) {
      this.pending.shift();
      this.markSettled(1);
      this.opts.log.error('log rows dropped: the database has not accepted writes for a while', { log: this.opts.name, dropped: 1 });
    }
    this.pending.push(row);
    this.pushed++;
    if (this.pending.length >= this.maxBatch) this.hurry?.();
    this.draining ??= this.drain();
  }

  /** Resolves once every row pushed before this call is written (or given up on). */
  flushed(): Promise<void> {
    if (this.settled >= this.pushed) return Promise.resolve();
    this.hurry?.();
    return new Promise((resolve) => this.waiters.push({ upTo: this.pushed, resolve }));
  }

  /** Writes what is pending; rows pushed later are still written (nothing refuses them). */
  close(): Promise<void> {
    return this.flushed();
  }

  /** Lets rows gather: at least this turn of the event loop, at most `delayMs` unless hurried. */
  private gather(): Promise<void> {
    if (this.delayMs <= 0 || this.waiters.length || this.pending.length >= this.maxBatch) {
      return new Promise((resolve) => setImmediate(resolve));
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.hurry?.(), this.delayMs);
      this.hurry = () => {
        this.hurry = undefined;
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async drain() {
    try {
      while (this.pending.length) {
        await this.gather();
        const batch = this.pending.splice(0, this.maxBatch);
        if (!batch.length) continue;
        await this.writeBatch(batch);
        this.markSettled(batch.length);
      }
    } finally {
      this.draining = undefined;
      // A push between the last check and here started no drain of its own.
      if (this.pending.length) this.draining = this.drain();
    }
  }

  private async writeBatch(batch: Row[]) {
    // A duration, not a time of day: performance.now() keeps it whatever the services' clock says.
    const outageUntil = performance.now() + (this.opts.outageMs ?? OUTAGE_MS);
    let waited = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.opts.write(batch);
      } catch (err) {
        // The database is away (not the rows at fault): wait for it rather than drop the rows.
        if (isDependencyDown(err) && performance.now() < outageUntil) {
          if (!waited) this.opts.log.warn('log write is waiting for the database', { log: this.opts.name, rows: batch.length, err });
          waited = true;
          attempt--;
          await new Promise((resolve) => setTimeout(resolve, OUTAGE_STEP_MS));
          continue;
        }
        const wait = this.retryDelaysMs[attempt];
        if (wait === undefined) break;
        this.opts.log.warn('log write failed; retrying', { log: this.opts.name, rows: batch.length, err });
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    // Still failing: perhaps one row is at fault rather than the database. Keep the rows that go in.
    let lost = 0;
    for (const row of batch) {
      try {
        await this.opts.write([row]);
      } catch (err) {
        lost++;
        if (lost === 1) this.opts.log.error('log rows could not be written', { log: this.opts.name, err });
      }
    }
    if (lost) this.opts.log.error('log rows dropped', { log: this.opts.name, dropped: lost });
  }

  private markSettled(n: number) {
    this.settled += n;
    if (!this.waiters.length) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.upTo <= this.settled) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}
