import { bigint, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * The audit trail (audit/writer.ts): per chain (a person's `usr_…`, or `operator`), events 1, 2, 3…
 * each naming the previous one's hash. `event` is the exact canonical JSON that was hashed and that
 * an export streams, so nothing is re-serialised between the hash and the verifier.
 *
 * Retention (audit/retention.ts): a removed stretch 1..n is replaced by one checkpoint row at seq n,
 * kind `checkpoint`, carrying event n's hash and the deployment's signature over (chain, n, hash).
 * The verifier then starts the chain from that (seq, hash) instead of the genesis value, and n + 1's
 * `prev` still links to it: no event after the stretch changes.
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    chain: text('chain').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    kind: text('kind').notNull(),
    /** When the process recorded it (the event's `at`): what retention will cut by. */
    at: ts('at').notNull(),
    event: text('event').notNull(),
  },
  // (chain, seq) is unique: two writers can never both append a seq, whatever the heads say.
  (t) => [primaryKey({ columns: [t.chain, t.seq] })],
);

/**
 * Each chain's last event. A writer appends only from the head it read: one statement moves the head
 * from (seq, hash) to its new last event and inserts the events, or, if the head moved meanwhile,
 * does neither (audit/writer.ts), so processes writing one chain at once never fork it.
 */
export const auditHeads = pgTable('audit_heads', {
  chain: text('chain').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
  hash: text('hash').notNull(),
});

/**
 * How far each chain has been sent as OpenTelemetry logs (audit/otlp.ts): its events up to `seq`
 * were answered 2xx by the endpoint. The events themselves are the queue: nothing is held in memory.
 */
export const auditExportCursors = pgTable('audit_export_cursors', {
  chain: text('chain').primaryKey(),
  seq: bigint('seq', { mode: 'number' }).notNull(),
});

/** One process sends the audit events at a time: the holder renews `held_until`; once it lapses another takes over. */
export const auditExportLease = pgTable('audit_export_lease', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  heldUntil: ts('held_until').notNull(),
});
