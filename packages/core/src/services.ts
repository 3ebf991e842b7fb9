import { Caches } from './caches';
import type { Clock } from './clock';
import { systemClock } from './clock';
import type { Config } from './config';
import { ConfigError, productionSecretProblems } from './config';
import type { Database, Db } from './db/client';
import { createDatabase } from './db/client';
import type { EventBus } from './events/bus';
import { createInProcessBus, typedBus } from './events/bus';
import { createRedisBus } from './events/redis-bus';
import { ChangeFeed } from './events/changes';
import { createOutboundClient } from './outbound/http-client';
import type { OutboundClient } from './outbound/types';
import { startQueue } from './queue/index';
import type { Dispatcher } from './queue/types';
import { EnabledToolsCache } from './calls/enabled-tools';
import type { Approvals } from './calls/types';
import { createApprovals } from './approvals/request';
import { createLimiter, type Limiter } from './limits';
import type { Logger } from './log';
import { createLogger } from './log';
import { createMailer, type Mailer } from './outbound/mail';
import type { Secrets } from './secrets';
import { loadSecrets } from './secrets';
import { LogWriter } from './db/log-writer';
import { AuditOtlpExporter } from './audit/otlp';
import { AuditLog } from './audit/writer';
import { countPendingApprovals, createMetrics, dispatcherDepth, type Metrics } from './metrics';

/** Everything a verb may use, built once at start from the parsed config. */
export interface Services {
  config: Config;
  database: Database;
  db: Db;
  secrets: Secrets;
  clock: Clock;
  log: Logger;
  bus: EventBus;
  /** What verbs changed, heard at once here and by the other processes (events/changes.ts). */
  changes: ChangeFeed;
  /** The SSRF-checked, pooled client for add-on webhooks. */
  outbound: OutboundClient;
  /** Hands calls to a worker: in-process by default, BullMQ when Redis is configured. */
  dispatcher: Dispatcher;
  /** Extra readiness checks by name (`/readyz`), e.g. the queue's Redis. */
  readiness: Record<string, () => Promise<void>>;
  /** Rate and concurrency counters, shared across processes on Redis. */
  limiter: Limiter;
  /** Set on SIGTERM: readiness fails so load balancers stop sending work here. */
  draining?: boolean;
  /** Each person's enabled tools, cached with bus invalidation. */
  tools: EnabledToolsCache;
  /** The core's other caches (keys, gates, tokens, delivery targets...), closed with the services. */
  caches: Caches;
  /** Asks the person before destructive calls; absent means destructive calls are refused. */
  approvals?: Approvals;
  /** The call and delivery logs, written behind the calls (readers in this process await `flushed()`). */
  logs: LogWriter;
  /** The audit trail's hash chains, written behind like the call log (audit/writer.ts). */
  audit: AuditLog;
  /** Verification, password reset and notices: SMTP, or files under MAIL_DIR (outbound/mail.ts). */
  mail: Mailer;
  /** Prometheus metrics of this instance (its own registry): `svc.metrics.toolCall(...)` etc. */
  metrics: Metrics;
  /** Things to close on shutdown, last added first. */
  closers: Array<() => Promise<void>>;
}

export interface ServiceOverrides {
  clock?: Clock;
  log?: Logger;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const missing = productionSecretProblems(config);
  if (missing.length) throw new ConfigError(missing);
  const log = overrides.log ?? createLogger({ role: config.role }, false, overrides.clock);
  const database = await createDatabase(config.database);
  for (const migration of await database.migrate()) log.info('migration applied', { migration });
  const secrets = await loadSecrets(config, database.db).catch(async (err) => {
    await database.close();
    throw err;
  });
  const bus = typedBus(config.redis ? createRedisBus(config.redis.url, config.redis.prefix) : createInProcessBus());
  // Deadlines are set by svc.clock, read when a request is sent (tests replace svc.clock).
  const outbound = createOutboundClient({ allowPrivate: config.webhookAllowPrivate, clock: { now: () => svc.clock.now() } });
  const svc: Services = {
    config,
    database,
    db: database.db,
    secrets,
    clock: overrides.clock ?? systemClock,
    log,
    bus,
    changes: new ChangeFeed(bus),
    outbound,
    // Set just below: the dispatcher works with the services it belongs to.
    dispatcher: undefined!,
    readiness: {},
    tools: undefined!,
    caches: undefined!,
    limiter: createLimiter(config),
    logs: new LogWriter(database, log),
    // Its clock read when an event is recorded: tests replace svc.clock.
    audit: new AuditLog(database, { now: () => svc.clock.now() }, log),
    mail: createMailer(config.mail, log, { now: () => svc.clock.now() }),
    // Read at scrape time: the dispatcher is set below.
    metrics: createMetrics({ pendingApprovals: () => countPendingApprovals(database.db, svc.clock.now()), queueDepth: () => dispatcherDepth(svc.dispatcher) }),
    closers: [() => database.close(), () => bus.close(), async () => outbound.close(), async () => svc.mail.close()],
  };
  svc.caches = new Caches(svc);
  // Closed after everything that may read them (the approvals, the queue), before the bus.
  svc.closers.push(() => svc.caches.close());
  // Closed after everything that writes log rows (the dispatcher, the approvals), before the database.
  svc.closers.push(() => svc.logs.close());
  svc.closers.push(() => svc.audit.close());
  svc.dispatcher = await startQueue(svc);
  svc.closers.push(() => svc.limiter.close());
  svc.tools = new EnabledToolsCache(svc);
  await svc.tools.start();
  svc.closers.push(() => svc.tools.stop());
  if (config.role !== 'worker') {
    // API processes hold waiting calls and sweep overdue approvals; a worker needs neither.
    const approvals = createApprovals(svc, { ttlSeconds: config.approvalTimeoutSeconds });
    svc.approvals = approvals;
    svc.closers.push(() => approvals.close());
  }
  svc.closers.push(async () => svc.metrics.close());
  if (config.auditLogs) {
    // Closed first: it reads the audit events until then.
    const exporter = new AuditOtlpExporter(svc, config.auditLogs);
    svc.closers.push(() => exporter.close());
  }
  return svc;
}

export async function closeServices(svc: Services): Promise<void> {
  for (const close of [...svc.closers].reverse()) {
    try {
      await close();
    } catch (err) {
      svc.log.warn('close failed', { err });
    }
  }
}
