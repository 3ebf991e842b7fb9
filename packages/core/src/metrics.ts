import { and, count, eq, gt } from 'drizzle-orm';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db/client';
import { approvals } from './db/schema/calls';

/** Suggested outcomes of a tool call; any short word is accepted. */
export type ToolCallOutcome =
  | 'result'
  | 'refusal'
  | 'failure'
  | 'timeout'
  | 'denied'
  | 'expired'
  | 'cancelled'
  | 'revoked'
  | 'invalid'
  | (string & {});

/** How an approval ended: the recorded decision (the `approvals.status` values after `pending`). */
export type ApprovalOutcome = 'allowed' | 'denied' | 'expired' | 'cancelled' | 'revoked' | (string & {});

/** Where the gauges read their values at scrape time. Each is optional; a missing one reads 0. */
export interface MetricSources {
  /** Approvals waiting for a person right now, across the service. */
  pendingApprovals?: () => Promise<number> | number;
  /** Calls waiting in the queue (not yet taken by a worker), across the service. */
  queueDepth?: () => Promise<number> | number;
}

/** A Registry per instance, never prom-client's global one: several servers run in one test process. */
export interface Metrics {
  readonly registry: Registry;
  /** One HTTP request, by route pattern (never the raw path, which carries user keys and ids). */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  /** One tool call from the app's request to its answer. */
  toolCall(addonId: string, outcome: ToolCallOutcome, seconds: number): void;
  /** One failed webhook delivery attempt, by error class (`timeout`, `http_5xx`, `bad_json`...). */
  webhookFailure(addonId: string, errorClass: string): void;
  /** One approval decided (or ended without a decision). */
  approval(outcome: ApprovalOutcome): void;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  readonly contentType: string;
  /** Stops collecting; the registry is emptied. */
  close(): void;
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
// Label values come from code (route patterns, add-on ids, error classes), but keep them bounded anyway.
const label = (v: string) => (v.length > 80 ? v.slice(0, 80) : v) || 'unknown';
const seconds = (s: number) => (Number.isFinite(s) && s >= 0 ? s : 0);

export function createMetrics(sources: MetricSources = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const http = new Histogram({
    name: 'toolport_http_request_duration_seconds',
    help: 'HTTP requests by route pattern, method and status, until the response starts (streams are not timed to their end).',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const toolCalls = new Histogram({
    name: 'toolport_tool_call_duration_seconds',
    help: 'Tool calls from the app request to the answer (approval wait and webhook included), by add-on and outcome.',
    labelNames: ['addon', 'outcome'] as const,
    // A call may wait 30 s for approval and then 30 s for the add-on.
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 45, 60],
    registers: [registry],
  });
  const webhookFailures = new Counter({
    name: 'toolport_webhook_failures_total',
    help: 'Failed webhook delivery attempts, by add-on and error class.',
    labelNames: ['addon', 'error_class'] as const,
    registers: [registry],
  });
  const approvalsDecided = new Counter({
    name: 'toolport_approvals_total',
    help: 'Approvals ended, by outcome (allowed, denied, expired, cancelled, revoked).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });

  // A failing source (database or Redis down) leaves the gauge at its last value: /metrics still answers.
  const gaugeFrom = (name: string, help: string, read?: () => Promise<number> | number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        if (!read) return this.set(0);
        try {
          const n = await read();
          if (Number.isFinite(n)) this.set(n);
        } catch {
          /* keep the last value */
        }
      },
    });
  gaugeFrom('toolport_approvals_pending', 'Approvals waiting for a person now, service-wide.', sources.pendingApprovals);
  gaugeFrom(
    'toolport_queue_depth',
    'Calls waiting in the queue for a worker, service-wide (every process reports the same shared queue).',
    sources.queueDepth,
  );

  return {
    registry,
    contentType: registry.contentType,
    httpRequest(route, method, status, s) {
      const m = method.toUpperCase();
      http.observe({ route: label(route), method: METHODS.has(m) ? m : 'OTHER', status: String(status) }, seconds(s));
    },
    toolCall(addonId, outcome, s) {
      toolCalls.observe({ addon: label(addonId), outcome: label(outcome) }, seconds(s));
    },
    webhookFailure(addonId, errorClass) {
      webhookFailures.inc({ addon: label(addonId), error_class: label(errorClass) });
    },
    approval(outcome) {
      approvalsDecided.inc({ outcome: label(outcome) });
    },
    render: () => registry.metrics(),
    close() {
      registry.clear();
    },
  };
}

/** Pending approvals not yet past their expiry (the sweeper marks those expired soon after). */
export async function countPendingApprovals(db: Db, now: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(approvals)
    .where(and(eq(approvals.status, 'pending'), gt(approvals.expiresAt, now)));
  return row?.n ?? 0;
}

/** 0 without a `depth()`: the in-process queue has no backlog worth scaling on. */
export async function dispatcherDepth(dispatcher: unknown): Promise<number> {
  const d = dispatcher as { depth?: () => Promise<number> | number } | undefined;
  return typeof d?.depth === 'function' ? await d.depth() : 0;
}
