import autocannon from 'autocannon';

/**
 * Percentiles kept for the chart. autocannon's own histogram truncates to whole milliseconds, so
 * every response time (float ms, from its 'response' event) is kept and sorted here instead.
 */
const PERCENTILES = [1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9] as const;

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export interface Point {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  requests: number;
  errors: number;
  non2xx: number;
  /** Answers that came back 2xx but were not the expected result (checked on every response). */
  wrong: number;
  percentiles: Record<string, number>;
}

export interface Target {
  url: string;
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  /** Builds each request's body; `n` is unique across the run (a fresh JSON-RPC id every time). */
  body?: (n: number, context: Record<string, any>) => string;
  /** Per-request headers (signatures, session ids). */
  perRequestHeaders?: (n: number, body: string, context: Record<string, any>) => Record<string, string>;
  /**
   * True when the response is the expected answer. autocannon hands over the body decoded as UTF-8,
   * so a gzipped one can only be checked by what stays readable (see toolportList).
   */
  check?: (body: string, headers: Record<string, string>) => boolean;
}

let counter = 0;
/** The next request number, shared by both load generators: no JSON-RPC id or webhook-id twice in a run. */
export const nextRequestNumber = () => ++counter;

/** One closed-loop point: `connections` clients, each sending its next request when the last is answered. */
export async function runPoint(target: Target, connections: number, seconds: number): Promise<Point> {
  let wrong = 0;
  const request: any = {
    method: target.method ?? 'POST',
    setupRequest(req: any, context: Record<string, any>) {
      const n = nextRequestNumber();
      const body = target.body ? target.body(n, context) : undefined;
      if (body !== undefined) req.body = body;
      const extra = target.perRequestHeaders ? target.perRequestHeaders(n, body ?? '', context) : undefined;
      req.headers = extra ? { ...target.headers, ...extra } : { ...target.headers };
      return req;
    },
  };
  if (target.check) {
    const check = target.check;
    request.onResponse = (status: number, body: string, _context: unknown, headers: Record<string, string>) => {
      if (status >= 200 && status < 300 && !check(body, headers ?? {})) wrong++;
    };
  }
  const times: number[] = [];
  const result: any = await new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: target.url, connections, pipelining: 1, duration: seconds, headers: target.headers, requests: [request], timeout: 40 },
      (err: unknown, res: unknown) => (err ? reject(err) : resolve(res)),
    );
    instance.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
      if (status >= 200 && status < 300) times.push(responseTime);
    });
  });
  const sorted = Float64Array.from(times).sort();
  const percentiles: Record<string, number> = {};
  for (const p of PERCENTILES) percentiles[String(p)] = round(percentile(sorted, p));
  const mean = times.reduce((a, b) => a + b, 0) / (times.length || 1);
  return {
    rps: result.requests.total / seconds,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1] ?? NaN),
    mean: round(mean),
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    wrong,
    percentiles,
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;
