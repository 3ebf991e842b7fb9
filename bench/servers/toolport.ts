// Toolport as `npm start` runs it (apps/api/src/main.ts: parseConfig(process.env) + startServer),
// plus a debug hook over the child-process IPC channel only (no HTTP endpoint): on {type:'memory'}
// it collects garbage (--expose-gc) and answers with process.memoryUsage() and the waiting calls.
import { sql } from 'drizzle-orm';
import { createLogger, parseConfig } from '@toolport/core';
import { startServer } from '../../apps/api/src/server';
import { startWorker } from '../../apps/api/src/worker';

const config = parseConfig(process.env);
// The same logger as main.ts (one JSON line per request since 47c42bc): its cost is part of the path.
// The lines go to bench/results/logs/<child>.log.
const log = createLogger({ role: config.role });
// As main.ts: ROLE=worker runs the call worker only.
const server = config.role === 'worker' ? await startWorker(config, { log }) : await startServer(config, { log });

process.on('message', async (m: { type: string; id?: number }) => {
  if (m.type === 'memory') {
    // Full collections until the heap stops shrinking (at least 3, at most 20): V8 compacts only a
    // few fragmented pages per collection, so right after a burst three of them still counted
    // garbage that later ones (and V8's own memory reducer, once the process is idle) give back.
    const gc = (globalThis as { gc?: () => void }).gc;
    let last = Infinity;
    let flat = 0;
    for (let i = 0; i < 20 && gc && (i < 3 || flat < 2); i++) {
      gc();
      await new Promise((r) => setTimeout(r, 50));
      const total = process.memoryUsage().heapTotal;
      flat = total < last - 256 * 1024 ? 0 : flat + 1;
      last = total;
    }
    const approvals = server.svc.approvals as { waiting?: number } | undefined;
    const { getHeapSpaceStatistics } = await import('node:v8');
    // Per heap space: the young generation grows under a burst and stays committed, which RSS shows.
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]));
    process.send!({ type: 'memory', id: m.id, usage: process.memoryUsage(), spaces, waiting: approvals?.waiting ?? 0 });
  } else if (m.type === 'heap-snapshot') {
    // BENCH_HEAP_SNAPSHOT=1: what the held calls are made of (read it with bench/heap-top.ts).
    const { writeHeapSnapshot } = await import('node:v8');
    process.send!({ type: 'heap-snapshot', id: m.id, file: writeHeapSnapshot((m as { file?: string }).file) });
  } else if (m.type === 'waiting') {
    // Cheap (no gc): the bench paces its held calls by it.
    const approvals = server.svc.approvals as { waiting?: number } | undefined;
    process.send!({ type: 'waiting', id: m.id, waiting: approvals?.waiting ?? 0 });
  } else if (m.type === 'expired') {
    // The approval-expiry bench: how long after its expires_at each expiry was recorded, oldest first.
    const result: unknown = await server.svc.db.execute(
      sql`select (extract(epoch from decided_at - expires_at) * 1000)::float8 as late from approvals where status = 'expired' order by created_at, id`,
    );
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ late: number }>;
    process.send!({ type: 'expired', id: m.id, late: rows.map((r) => Number(r.late)) });
  } else if (m.type === 'stop') {
    await server.close();
    process.exit(0);
  }
});
process.send!({ type: 'ready', url: config.publicUrl });
