import type { AuditLogsConfig } from '../config';
import { newId } from '../ids';
import type { Services } from '../services';

/** Events per request: a batch is all the exporter holds in memory, however far behind it is. */
const BATCH = 500;
/** How often an idle exporter looks for new events (another process's included). */
const IDLE_MS = 1_000;
/** A failed request is tried again after 1, 2, 4… seconds, never more than a minute apart. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
/** The OTLP exporters' default timeout (OTEL_EXPORTER_OTLP_TIMEOUT). */
const REQUEST_TIMEOUT_MS = 10_000;
/** The lease is renewed when a third of it is gone: a request and its statements fit well inside the rest. */
const LEASE_SECONDS = 30;
const RENEW_AFTER_MS = 10_000;
const LEASE = 'otlp';
/** OpenTelemetry's INFO. */
const SEVERITY_INFO = 9;

type AnyValue = { stringValue: string } | { intValue: string } | { boolValue: boolean } | { arrayValue: { values: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}

function anyValue(v: unknown): AnyValue | undefined {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  // OTLP JSON writes 64-bit integers as decimal strings; events hold whole numbers only (audit/writer.ts).
  if (typeof v === 'number' && Number.isSafeInteger(v)) return { intValue: String(v) };
  if (typeof v === 'number') return { stringValue: String(v) };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue).filter((x): x is AnyValue => x !== undefined) } };
  // null says nothing an absent attribute does not.
  return undefined;
}

/** One stored event (or checkpoint) line as an OTLP LogRecord, in the OTLP/HTTP JSON encoding. */
function logRecord(line: string, observed: string) {
  const e = JSON.parse(line) as { chain: string; seq: number; prev?: string; hash: string; at: string; kind: string; data?: Record<string, unknown>; sig?: string };
  const attributes: KeyValue[] = [];
  const add = (key: string, v: unknown) => {
    const value = anyValue(v);
    if (value) attributes.push({ key: `toolport.audit.${key}`, value });
  };
  add('chain', e.chain);
  add('seq', e.seq);
  add('hash', e.hash);
  if (e.prev !== undefined) add('prev', e.prev);
  if (e.sig !== undefined) add('sig', e.sig);
  const own = new Set(['chain', 'seq', 'hash', 'prev', 'sig']);
  for (const [k, v] of Object.entries(e.data ?? {})) if (!own.has(k)) add(k, v);
  return {
    timeUnixNano: `${BigInt(Date.parse(e.at)) * 1_000_000n}`,
    observedTimeUnixNano: observed,
    severityNumber: SEVERITY_INFO,
    severityText: 'INFO',
    body: { stringValue: e.kind },
    attributes,
  };
}

/** An ExportLogsServiceRequest: one resource (the traces' service.name), one scope, the batch's records. */
function exportRequest(settings: AuditLogsConfig, role: string, now: Date, lines: string[]): string {
  const observed = `${BigInt(now.getTime()) * 1_000_000n}`;
  return JSON.stringify({
    resourceLogs: [
      {
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: settings.serviceName } },
            { key: 'toolport.role', value: { stringValue: role } },
          ],
        },
        scopeLogs: [{ scope: { name: 'toolport.audit' }, logRecords: lines.map((l) => logRecord(l, observed)) }],
      },
    ],
  });
}

/** How many of each chain's pending events a batch takes: an even share, so no busy chain holds the rest back. */
function shares(pending: number[], total: number): number[] {
  const take = pending.map(() => 0);
  let left = total;
  let open = pending.map((_, i) => i).filter((i) => pending[i]! > 0);
  while (left > 0 && open.length) {
    const each = Math.max(1, Math.floor(left / open.length));
    for (const i of open) {
      const n = Math.min(each, pending[i]! - take[i]!, left);
      take[i]! += n;
      left -= n;
      if (!left) break;
    }
    open = open.filter((i) => take[i]! < pending[i]!);
  }
  return take;
}

/** The endpoint did not take a batch: no answer, or not a 2xx. */
class EndpointFailure extends Error {}

/**
 * Sends the audit events to an OTLP/HTTP logs endpoint, at least once and each chain in order.
 * The database is the queue: per chain, `audit_export_cursors` says how far the endpoint has
 * answered 2xx, and the events past it are read 500 at a time; a cursor moves only after a 2xx.
 * One process sends at a time (the `audit_export_lease` row); the others wait to take over.
 */
export class AuditOtlpExporter {
  private readonly holder = newId('hld');
  private stopped = false;
  private readonly stopping = new AbortController();
  private readonly running: Promise<void>;
  private wake?: () => void;
  /** performance.now() of the last renewal while this process holds the lease; undefined when it does not. */
  private heldAt: number | undefined;
  /** Failed requests in a row: the outage is told once, at the first, and its end once. */
  private failures = 0;
  /** Failed statements in a row (the database is away): told once too. */
  private dbFailures = 0;
  /** Where the last batch ended: the next starts after that chain, so every chain gets its turn. */
  private lastChain = '';

  constructor(
    private readonly svc: Services,
    private readonly settings: AuditLogsConfig,
  ) {
    this.running = this.loop();
  }

  private async loop() {
    while (!this.stopped) {
      let wait = IDLE_MS;
      try {
        if (await this.holding()) {
          const sent = await this.sendOnce();
          // Sent means the endpoint answered 2xx; nothing to send says nothing of it.
          if (sent) this.recovered();
          if (sent === BATCH) wait = 0;
        }
        this.dbFailures = 0;
      } catch (err) {
        wait = this.failed(err);
      }
      if (wait) await this.sleep(wait);
    }
  }

  /** Takes the lease, or renews it once a third of it is gone; false while another process holds it. */
  private async holding(): Promise<boolean> {
    if (this.heldAt !== undefined && performance.now() - this.heldAt < RENEW_AFTER_MS) return true;
    const started = performance.now();
    const rows = await this.svc.database.all<{ holder: string }>(
      `insert into audit_export_lease (name, holder, held_until) values ($1, $2, now() + interval '${LEASE_SECONDS} seconds')
       on conflict (name) do update set holder = excluded.holder, held_until = excluded.held_until
       where audit_export_lease.holder = excluded.holder or audit_export_lease.held_until < now()
       returning holder`,
      [LEASE, this.holder],
    );
    this.heldAt = rows.length ? started : undefined;
    return rows.length > 0;
  }

  /** One batch: read past the cursors, POST, move the cursors. Answers how many events it sent. */
  private async sendOnce(): Promise<number> {
    const db = this.svc.database;
    // Chains with events past their cursor, starting after the last batch's (round robin).
    const chains = await db.all<{ chain: string; pending: string; done: string }>(
      `select h.chain, (h.seq - coalesce(c.seq, 0))::text as pending, coalesce(c.seq, 0)::text as done
       from audit_heads h left join audit_export_cursors c on c.chain = h.chain
       where h.seq > coalesce(c.seq, 0)
       order by h.chain <= $1, h.chain limit ${BATCH}`,
      [this.lastChain],
    );
    if (!chains.length) return 0;
    const take = shares(chains.map((c) => Number(c.pending)), BATCH);
    const params: unknown[] = [];
    const values = chains.flatMap((c, i) => {
      if (!take[i]) return [];
      params.push(c.chain, c.done, take[i], i);
      const n = params.length;
      return [`($${n - 3}::text, $${n - 2}::bigint, $${n - 1}::int, $${n}::int)`];
    });
    // Each chain's next events by its primary key: gaps a retention left are skipped, a checkpoint is sent as it stands.
    const rows = await db.all<{ chain: string; seq: string; event: string; ord: number }>(
      `select e.chain, e.seq::text as seq, e.event, p.ord from (values ${values.join(',')}) p (chain, done, take, ord)
       cross join lateral (select chain, seq, event from audit_events e where e.chain = p.chain and e.seq > p.done order by e.seq limit p.take) e`,
      params,
    );
    rows.sort((a, b) => Number(a.ord) - Number(b.ord) || Number(a.seq) - Number(b.seq));
    this.lastChain = chains[chains.length - 1]!.chain;
    if (!rows.length) return 0;
    await this.post(exportRequest(this.settings, this.svc.config.role, this.svc.clock.now(), rows.map((r) => r.event)));
    const ends = new Map<string, string>();
    for (const r of rows) ends.set(r.chain, r.seq);
    const moved: unknown[] = [];
    const list = [...ends].map(([chain, seq]) => {
      moved.push(chain, seq);
      return `($${moved.length - 1}::text, $${moved.length}::bigint)`;
    });
    // Not for a chain deleted meanwhile with its account (accounts/leaving.ts deletes its cursor).
    await db.run(
      `insert into audit_export_cursors (chain, seq) select v.chain, v.seq from (values ${list.join(',')}) v (chain, seq)
       where exists (select 1 from audit_heads h where h.chain = v.chain)
       on conflict (chain) do update set seq = greatest(audit_export_cursors.seq, excluded.seq)`,
      moved,
    );
    return rows.length;
  }

  private async post(body: string): Promise<void> {
    let res: Response;
    try {
      res = await fetch(this.settings.url, {
        method: 'POST',
        headers: { ...this.settings.headers, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.any([this.stopping.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
      // Read to the end, so the connection is kept for the next batch.
      await res.arrayBuffer();
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      throw new EndpointFailure(e.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.message));
    }
    if (res.status < 200 || res.status > 299) throw new EndpointFailure(`HTTP ${res.status}`);
  }

  /** Tells an outage once, at its first failure; answers how long to wait before the next attempt. */
  private failed(err: unknown): number {
    if (this.stopped) return 0;
    if (err instanceof EndpointFailure) {
      if (!this.failures++) {
        this.svc.log.warn('cannot send the audit events to the OTLP endpoint; they are kept in the database and will be sent when it answers', {
          endpoint: this.settings.shownUrl,
          why: err.message,
        });
      }
      return Math.min(FIRST_RETRY_MS * 2 ** (this.failures - 1), MAX_RETRY_MS);
    }
    // The lease may have lapsed meanwhile: take it again before sending.
    this.heldAt = undefined;
    if (!this.dbFailures++) this.svc.log.warn('cannot read the audit events to send them as OpenTelemetry logs; trying again', { err });
    return Math.min(FIRST_RETRY_MS * 2 ** (this.dbFailures - 1), MAX_RETRY_MS);
  }

  private recovered() {
    if (!this.failures) return;
    this.svc.log.info('the OTLP endpoint takes the audit events again; those kept meanwhile are being sent', { endpoint: this.settings.shownUrl, failedAttempts: this.failures });
    this.failures = 0;
  }

  private sleep(ms: number) {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Stops after the request in flight (cut short) and lets another process take over at once. */
  async close(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.wake?.();
    await this.running;
    if (this.heldAt !== undefined) {
      await this.svc.database.run(`delete from audit_export_lease where name = $1 and holder = $2`, [LEASE, this.holder]).catch(() => {});
    }
  }
}
