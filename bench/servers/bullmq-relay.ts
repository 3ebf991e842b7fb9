// What the queue hop costs when every call is a job: what a developer would write to put BullMQ
// between an HTTP request and a webhook, and nothing else. A POST is added as a job, a worker in
// the same process sends it to the add-on over a keep-alive agent, and the add-on's answer is
// handed back in process (as Toolport's ROLE=all does). The load generator signs the request as
// for the direct webhook call; the relay forwards the body and the signature headers untouched. No
// MCP, no token, no argument check, no limiter, no log. Queue and worker options are Toolport's
// (packages/core/src/queue/bullmq.ts).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const target = new URL(process.env.RELAY_TO!);
const prefix = process.env.RELAY_PREFIX ?? `bench-relay-${process.pid}`;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const KEEP = { age: 600, count: 10_000 };
const FORWARDED = ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

interface RelayJob {
  body: string;
  headers: Record<string, string>;
}
interface Answer {
  status: number;
  body: string;
}

const queueConnection = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
const workerConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
const queue = new Queue<RelayJob>('relay', { connection: queueConnection, prefix, defaultJobOptions: { attempts: 1, removeOnComplete: KEEP, removeOnFail: KEEP } });
const waiting = new Map<string, (a: Answer) => void>();
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(job: RelayJob): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method: 'POST', agent, headers: { ...job.headers, 'content-length': Buffer.byteLength(job.body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(job.body);
  });
}

const worker = new Worker<RelayJob>(
  'relay',
  async (job) => {
    const answer = await post(job.data).catch((err: Error) => ({ status: 502, body: err.message }));
    waiting.get(job.id!)?.(answer);
    return answer.status;
  },
  { connection: workerConnection, prefix, concurrency: 64, lockDuration: 5_000, stalledInterval: 5_000, maxStalledCount: 1, removeOnComplete: KEEP, removeOnFail: KEEP },
);
worker.on('error', () => {});
queue.on('error', () => {});

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const headers: Record<string, string> = {};
    for (const h of FORWARDED) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
    const id = randomUUID();
    const answered = new Promise<Answer>((resolve) => waiting.set(id, resolve));
    queue
      .add('call', { body: Buffer.concat(chunks).toString(), headers }, { jobId: id })
      .then(() => answered)
      .catch((err: Error) => ({ status: 503, body: err.message }))
      .then((a) => {
        waiting.delete(id);
        res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
      });
  });
});
server.listen(0, '127.0.0.1', () => {
  process.send!({ type: 'ready', url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` });
});

process.on('message', async (m: { type: string }) => {
  if (m.type !== 'stop') return;
  server.close();
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  await Promise.all([queueConnection.quit(), workerConnection.quit()]).catch(() => {});
  process.exit(0);
});
