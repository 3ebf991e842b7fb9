import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import type { Database } from './client';
import { calls, deliveries } from './schema/index';
import { WriteBehind } from './write-behind';
import type { Logger } from '../log';

export type CallRow = typeof calls.$inferInsert;
export type DeliveryRow = typeof deliveries.$inferInsert;
type LogRow = { kind: 'call'; row: CallRow } | { kind: 'delivery'; row: DeliveryRow };

/** `insert into "t" (...) values (...), (...)` for rows of one table, numbering parameters from `params`. */
function insertSql(table: Table, rows: Record<string, unknown>[], params: unknown[]): string {
  const columns = Object.entries(getTableColumns(table));
  const tuples = rows.map((row) => {
    const slots = columns.map(([key, column]) => {
      const value = row[key];
      if (value === undefined || value === null) return 'default';
      params.push(column.mapToDriverValue(value));
      return `$${params.length}`;
    });
    return `(${slots.join(',')})`;
  });
  return `insert into "${getTableName(table)}" (${columns.map(([, c]) => `"${c.name}"`).join(',')}) values ${tuples.join(',')}`;
}

/**
 * A call's row may come twice: written as running while its add-on works (calls/call-tool.ts), then
 * as it ended. The ended row replaces a running one, never an ended one.
 */
function endingRunningCalls(): string {
  const columns = Object.values(getTableColumns(calls)).filter((c) => c.name !== 'id');
  return ` on conflict ("id") do update set ${columns.map((c) => `"${c.name}" = excluded."${c.name}"`).join(',')} where "calls"."outcome" = 'running'`;
}
const ON_CONFLICT_CALLS = endingRunningCalls();

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

  call(row: CallRow) {
    this.rows.push({ kind: 'call', row });
  }

  delivery(row: DeliveryRow) {
    this.rows.push({ kind: 'delivery', row });
  }

  /** Resolves once every row logged before this call is written. */
  flushed() {
    return this.rows.flushed();
  }

  close() {
    return this.rows.close();
  }
}
