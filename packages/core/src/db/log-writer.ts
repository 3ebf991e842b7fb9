import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import type { Database } from './client';
import { calls, deliveries } from './schema/index';
import { WriteBehind } from './write-behind';
import type { Logger } from '../log';

// created_at from the writers' JS clock (it keeps the call log's cursor exact), never a default.
export type CallRow = typeof calls.$inferInsert & { createdAt: Date };
export type DeliveryRow = typeof deliveries.$inferInsert & { createdAt: Date };
type LogRow = { kind: 'call'; row: CallRow } | { kind: 'delivery'; row: DeliveryRow };

/**
 * `insert into "t" (...) select * from unnest($1::text[], ...)`: one array per column, so the
 * statement's text is the same for any number of rows. A `values` list of 14 parameters a row
 * cost PGlite half again as much to parse and plan as to insert.
 */
function insertSql(table: Table, rows: Record<string, unknown>[], params: unknown[]): string {
  const columns = Object.entries(getTableColumns(table));
  const arrays = columns.map(([key, column]) => {
    // As text, cast by the database: postgres.js cannot send every type's array (boolean[] fails).
    params.push(rows.map((row) => (row[key] === undefined || row[key] === null ? null : String(column.mapToDriverValue(row[key])))));
    return `$${params.length}::text[]::${column.getSQLType()}[]`;
  });
  return `insert into "${getTableName(table)}" (${columns.map(([, c]) => `"${c.name}"`).join(',')}) select * from unnest(${arrays.join(',')})`;
}

/** A missing value is written as null, never as the column's default: no column but created_at may count on one. */
function noDefaultsButCreatedAt(table: Table) {
  for (const column of Object.values(getTableColumns(table))) {
    if (column.hasDefault && column.name !== 'created_at') throw new Error(`${getTableName(table)}.${column.name} has a default the log writer would not write`);
  }
}
noDefaultsButCreatedAt(calls);
noDefaultsButCreatedAt(deliveries);

/**
 * A call's row may come twice: written as running while its add-on works (calls/call-tool.ts), then
 * as it ended. The ended row replaces a running one, never an ended one.
 */
function endingRunningCalls(): string {
  const columns = Object.values(getTableColumns(calls)).filter((c) => c.name !== 'id');
  return ` on conflict ("id") do update set ${columns.map((c) => `"${c.name}" = excluded."${c.name}"`).join(',')} where "calls"."outcome" = 'running'`;
}
const ON_CONFLICT_CALLS = endingRunningCalls();

/**
 * How long a call's running row waits for its ending before it is written: a process that dies
 * leaves no row of the calls it sent within this time (as of those in its unwritten batch).
 */
const RUNNING_GRACE_MS = 50;

/** One statement per batch: a call's delivery and call rows share a `with d as (insert ...) insert ...`. */
export class LogWriter {
  private readonly rows: WriteBehind<LogRow>;

  constructor(database: Database, log: Logger) {
    this.rows = new WriteBehind<LogRow>({
      name: 'calls and deliveries',
      log,
      // At low rates the next calls' rows share the statement (a statement costs ~0.4 ms on PGlite).
      delayMs: 10,
      write: (batch) => {
        const params: unknown[] = [];
        // A call that ended before its running row was written leaves only its ending (one insert
        // may not touch a row twice).
        const callRows = new Map<string, CallRow>();
        const deliveryRows: DeliveryRow[] = [];
        for (const r of batch) {
          if (r.kind === 'call') callRows.set(r.row.id, r.row);
          else deliveryRows.push(r.row);
        }
        const parts = [
          ...(deliveryRows.length ? [insertSql(deliveries, deliveryRows, params)] : []),
          ...(callRows.size ? [insertSql(calls, [...callRows.values()], params) + ON_CONFLICT_CALLS] : []),
        ];
        const text = parts.length === 1 ? parts[0]! : `with d as (${parts[0]}) ${parts[1]}`;
        return database.run(text, params);
      },
    });
  }

  /**
   * A running row waits up to RUNNING_GRACE_MS for its call's ending, which then goes alone: most
   * calls end sooner, and a running row and its replacement cost half again as much as one row. A reader
   * (`flushed()`) gets every row pushed so far, the waiting ones too.
   */
  private readonly waiting = new Map<string, { row: CallRow; at: number }>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  call(row: CallRow) {
    if (row.outcome === 'running') {
      this.waiting.set(row.id, { row, at: performance.now() });
      this.timer ??= setTimeout(() => this.release(), RUNNING_GRACE_MS);
      return;
    }
    this.waiting.delete(row.id);
    this.rows.push({ kind: 'call', row });
  }

  delivery(row: DeliveryRow) {
    this.rows.push({ kind: 'delivery', row });
  }

  /** Pushes the running rows that waited their grace (all of them when `all`), oldest first. */
  private release(all = false) {
    clearTimeout(this.timer);
    this.timer = undefined;
    const due = performance.now() - RUNNING_GRACE_MS;
    for (const [id, { row, at }] of this.waiting) {
      if (!all && at > due) {
        this.timer = setTimeout(() => this.release(), at - due);
        return;
      }
      this.waiting.delete(id);
      this.rows.push({ kind: 'call', row });
    }
  }

  /** Resolves once every row logged before this call is written. */
  flushed() {
    if (this.waiting.size) this.release(true);
    return this.rows.flushed();
  }

  close() {
    if (this.waiting.size) this.release(true);
    return this.rows.close();
  }
}
