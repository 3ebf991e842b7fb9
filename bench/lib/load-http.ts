import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { nextRequestNumber, percentile, type Target } from './load';

/**
 * The second load generator: a closed loop on node:http, so a reader can see that autocannon's
 * figures are not an artefact of autocannon. `connections` loops share one keep-alive agent of as many
 * sockets; each loop sends its next request once the last answer has been read whole.
 */
export interface HttpPoint {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Failed requests, non-2xx answers and 2xx answers that were not the expected result. */
  errors: number;
}

export async function runPointHttp(target: Target, connections: number, seconds: number): Promise<HttpPoint> {
  const u = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const times: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;

  const send = (context: Record<string, any>) =>
    new Promise<void>((resolve) => {
      const n = nextRequestNumber();
      const body = target.body ? target.body(n, context) : undefined;
      const extra = target.perRequestHeaders ? target.perRequestHeaders(n, body ?? '', context) : undefined;
      const headers: Record<string, string | number> = { ...target.headers, ...extra };
      if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
      const t0 = performance.now();
      const req = http.request({ method: target.method ?? 'POST', hostname: u.hostname, port: u.port, path: u.pathname + u.search, agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const t1 = performance.now();
          const status = res.statusCode ?? 0;
          // Counted only when answered inside the point, as a closed loop's rate is.
          if (t1 <= deadline) {
            const ok = status >= 200 && status < 300 && (!target.check || target.check(Buffer.concat(chunks).toString('utf8'), res.headers as Record<string, string>));
            if (ok) times.push(t1 - t0);
            else errors++;
          }
          resolve();
        });
        res.on('error', () => {
          errors++;
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(body);
    });

  // A call unanswered 40 s after the point ends fails, as with autocannon's timeout: one timer for
  // the point, not one per request, which the generator would pay for on every call.
  const watchdog = setTimeout(() => agent.destroy(), seconds * 1000 + 40_000);
  // One context per loop, as autocannon keeps one per connection (a session id sticks to it).
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const context: Record<string, any> = {};
      while (performance.now() < deadline) await send(context);
    }),
  );
  clearTimeout(watchdog);
  agent.destroy();
  const sorted = Float64Array.from(times).sort();
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { rps: times.length / seconds, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), requests: times.length, errors };
}
