import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { StartupError, type Config } from './config';
import { probePostgres } from './db/client';

/**
 * A dependency that does not answer may still be starting (compose, a managed service's restart):
 * it gets a few seconds, then the process exits 78 and the orchestrator's restart backoff takes over.
 */
const STARTUP_ATTEMPTS = 5;
const RETRY_MS = 2_000;
const CONNECT_TIMEOUT_S = 3;

interface Failure {
  /** Whether waiting may help (nothing answered yet) or not (a missing database, a refused password). */
  retry: boolean;
  /** What went wrong, without the setting's value: a URL may carry a password. */
  reason: string;
  fix: string;
}

/** Network errors that say nothing answered (yet); each as a few words for the log line. */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve yet',
  ETIMEDOUT: `no answer within ${CONNECT_TIMEOUT_S} s`,
  CONNECT_TIMEOUT: `no answer within ${CONNECT_TIMEOUT_S} s`,
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

const codeOf = (err: unknown) => String((err as { code?: unknown })?.code ?? '');
const messageOf = (err: unknown) => String((err as { message?: unknown })?.message ?? err).split('\n')[0]!.slice(0, 200);

/** `host:port` of a connection URL, as named in the messages (never its user or password). */
function endpoint(raw: string, defaultPort: number): string {
  try {
    const u = new URL(raw);
    return `${u.hostname || 'localhost'}:${u.port || defaultPort}`;
  } catch {
    return 'the address';
  }
}

function postgresFailure(err: unknown, url: string): Failure {
  const at = endpoint(url, 5432);
  const where = `Postgres at ${at} (DATABASE_URL)`;
  const code = codeOf(err);
  if (UNREACHABLE[code]) return { retry: true, reason: `${where} does not answer (${UNREACHABLE[code]})`, fix: 'start Postgres there or fix the host and port in DATABASE_URL' };
  // 57P03: starting up or recovering after a crash; 53300: every connection slot is taken.
  if (code === '57P03' || code === '53300') return { retry: true, reason: `${where} does not accept connections yet (${messageOf(err)})`, fix: 'wait for Postgres to accept connections, or raise its max_connections' };
  if (code === '3D000') {
    let name = 'named';
    try {
      const u = new URL(url);
      name = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || name;
    } catch {
      /* the URL was checked by parseConfig */
    }
    return { retry: false, reason: `the database "${name}" named in DATABASE_URL does not exist on ${at}`, fix: `create it (createdb "${name}", or CREATE DATABASE) or name an existing database in DATABASE_URL` };
  }
  // 28P01: wrong password; 28000: no pg_hba.conf entry or role; neither comes back by waiting.
  if (code === '28P01' || code === '28000') return { retry: false, reason: `${where} refused the login (${messageOf(err)})`, fix: 'fix the user or password in DATABASE_URL, or allow it in pg_hba.conf' };
  return { retry: false, reason: `${where} failed (${code ? `${code}: ` : ''}${messageOf(err)})`, fix: 'fix DATABASE_URL' };
}

function redisFailure(err: unknown, url: string): Failure {
  const where = `Redis at ${endpoint(url, 6379)} (REDIS_URL)`;
  const code = codeOf(err);
  const message = messageOf(err);
  if (UNREACHABLE[code]) return { retry: true, reason: `${where} does not answer (${UNREACHABLE[code]})`, fix: 'start Redis there or fix the host and port in REDIS_URL' };
  if (/^LOADING\b/.test(message)) return { retry: true, reason: `${where} is still loading its data`, fix: 'wait for Redis to finish loading' };
  if (/^(NOAUTH|WRONGPASS)\b|invalid password|invalid username-password/i.test(message)) {
    return { retry: false, reason: `${where} refused the login (${message})`, fix: 'fix the user or password in REDIS_URL' };
  }
  return { retry: false, reason: `${where} failed (${code ? `${code}: ` : ''}${message})`, fix: 'fix REDIS_URL' };
}

async function probeRedis(url: string): Promise<void> {
  // One try per attempt and every error caught here: an ioredis client without an error listener
  // prints "[ioredis] Unhandled error event" on each of its own endless reconnects.
  const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: CONNECT_TIMEOUT_S * 1000 });
  let cause: unknown;
  client.on('error', (err) => (cause ??= err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    // connect() rejects with "Connection is closed."; the reason came as an error event.
    throw cause ?? err;
  } finally {
    client.disconnect();
  }
}

/** Runs `probe` until it succeeds, for a failure that may pass a few times; else a StartupError. */
async function waitFor(probe: () => Promise<void>, explain: (err: unknown) => Failure, say: (line: string) => void): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let failure: Failure;
    try {
      await probe();
      return;
    } catch (err) {
      failure = explain(err);
    }
    if (!failure.retry) throw new StartupError(`${failure.reason}; ${failure.fix}.`);
    if (attempt >= STARTUP_ATTEMPTS) {
      throw new StartupError(`${failure.reason} after ${STARTUP_ATTEMPTS} attempts over ${((STARTUP_ATTEMPTS - 1) * RETRY_MS) / 1000} s; ${failure.fix}.`);
    }
    say(`Toolport is waiting: ${failure.reason}; attempt ${attempt} of ${STARTUP_ATTEMPTS}, trying again in ${RETRY_MS / 1000} s.`);
    await sleep(RETRY_MS);
  }
}

/** Each failure is one line naming the setting and the fix, never a stack trace or an endless reconnect. */
export async function checkDependencies(
  config: Config,
  { redis = true, say = (line: string) => process.stderr.write(`${line}\n`) }: { redis?: boolean; say?: (line: string) => void } = {},
): Promise<void> {
  const pgUrl = config.database.url;
  if (pgUrl) await waitFor(() => probePostgres(pgUrl, CONNECT_TIMEOUT_S), (err) => postgresFailure(err, pgUrl), say);
  const redisUrl = config.redis?.url;
  if (redis && redisUrl) await waitFor(() => probeRedis(redisUrl), (err) => redisFailure(err, redisUrl), say);
}
