import { getTableColumns, getTableName, type Table } from 'drizzle-orm';
import type { Database } from './client';
import { calls, deliveries } from './schema/index';
import { WriteBehind } from './write-behind';
import type { Logger } from '../log';

export type CallRow = typeof calls.$inferInsert;
export type DeliveryRow = typeof deliveries.$inferInsert;
type LogRow = { table: typeof calls; row: CallRow } | { table: typeof deliveries; row: DeliveryRow };

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
        const parts = [calls, deliveries]
          .map((table) => ({ table, rows: batch.filter((r) => r.table === table).map((r) => r.row as Record<string, unknown>) }))
          .filter((p) => p.rows.length)
          .map((p) => insertSql(p.table, p.rows, params));
        const text = parts.length === 1 ? parts[0]! : `with d as (${parts[0]}) ${parts[1]}`;
        return database.run(text, params);
      },
    });
  }

  call(row: CallRow) {
    this.rows.push({ table: calls, row });
  }

  delivery(row: DeliveryRow) {
    this.rows.push({ table: deliveries, row });
  }

  /** Resolves once every row logged before this call is written. */
  flushed() {
    return this.rows.flushed();
  }

  close() {
    return this.rows.close();
  }
}
