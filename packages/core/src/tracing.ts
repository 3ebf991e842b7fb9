import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import type { Config } from './config';

/**
 * `@opentelemetry/api` only: with no SDK registered every span is a no-op. Never put arguments,
 * results, secrets, tokens or full URLs on a span: ids, names, outcomes and a webhook's host only.
 */
const TRACER = 'toolport';

export const tracer = () => trace.getTracer(TRACER);

/**
 * A throw is recorded by its class, not its message (which may quote input). Not async: a held
 * call would keep one more frame alive per span for up to 30 s.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, options, (span) => {
    let running: Promise<T>;
    try {
      running = fn(span);
    } catch (err) {
      running = Promise.reject(err);
    }
    // Nothing to end or record on a span that does not record (no SDK registered, or not sampled):
    // by default a call's spans then add no promise and no closures to it.
    if (!span.isRecording()) return running;
    return running.then(
      (value) => {
        span.end();
        return value;
      },
      (err: unknown) => {
        endFailed(span, err);
        throw err;
      },
    );
  });
}

/** Ends a span whose work threw: its error class is recorded, never its message (it may quote input). */
export function endFailed(span: Span, err: unknown) {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
  span.end();
}

/** The active span's trace id, for log lines; undefined when nothing is traced. */
export function activeTraceId(): string | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

/** What a queued job carries of the trace (W3C Trace Context), so the worker's spans join it. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The active context as W3C headers; empty when nothing is traced or no propagator is registered. */
export function injectTrace(): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const out: TraceCarrier = {};
  if (typeof carrier.traceparent === 'string') out.traceparent = carrier.traceparent;
  if (typeof carrier.tracestate === 'string') out.tracestate = carrier.tracestate;
  return out;
}

/** The context a job's carrier describes (the root context when it carries none). */
export function extractTrace(carrier: TraceCarrier): Context {
  if (!carrier.traceparent) return ROOT_CONTEXT;
  const headers: Record<string, string> = { traceparent: carrier.traceparent };
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return propagation.extract(ROOT_CONTEXT, headers);
}

export const withContext = <T>(ctx: Context, fn: () => T): T => context.with(ctx, fn);

let started: Promise<() => Promise<void>> | undefined;

/** The SDK is imported only here, so a process without the setting never loads it. Once per process. */
export function startTracing(config: Config): Promise<() => Promise<void>> {
  const settings = config.tracing;
  if (!settings) return Promise.resolve(async () => {});
  started ??= (async () => {
    const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'toolport.role': config.role }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }))],
    });
    provider.register();
    return () => provider.shutdown().catch(() => {});
  })();
  return started;
}
