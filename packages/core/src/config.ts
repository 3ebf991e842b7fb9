import path from 'node:path';

export type Role = 'all' | 'api' | 'worker';

export interface DatabaseConfig {
  /** Postgres connection string; undefined means embedded PGlite. */
  url?: string;
  /** PGlite data directory; undefined with no url means in memory (tests only). */
  dataDir?: string;
}

export interface Config {
  port: number;
  publicUrl: string;
  /** `publicUrl` parsed; its origin is the only Origin accepted by the MCP endpoint besides none. */
  publicOrigin: string;
  database: DatabaseConfig;
  redis?: { url: string; prefix: string };
  dataDir: string;
  role: Role;
  webhookAllowPrivate: boolean;
  /** Master secret (base64, 32 bytes) for encrypting webhook secrets and signing keys at rest. */
  secretKey?: string;
  embedded: boolean;
  limits: Limits;
  /** Proxies in front of Toolport whose X-Forwarded-For entries are believed (0: use the socket's address). */
  trustedProxies: number;
  /** OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT); unset: spans are no-ops. */
  tracing?: TracingConfig;
}

export interface TracingConfig {
  /** The OTLP/HTTP base URL as set, e.g. `http://otel-collector:4318`. */
  endpoint: string;
  /** Where spans are POSTed: the base URL + `/v1/traces`. */
  tracesUrl: string;
  /** `service.name` of every span (OTEL_SERVICE_NAME, default `toolport`). */
  serviceName: string;
}

/** Per-person and per-app limits; every one shared across processes through Redis when configured. */
export interface Limits {
  /** tools/call per person per minute. */
  callsPerPersonPerMinute: number;
  /** tools/call per app (connection) per minute. */
  callsPerAppPerMinute: number;
  /** Calls in flight to one add-on, across all processes. */
  addonConcurrency: number;
  /** Approvals waiting for one person at once. */
  pendingApprovalsPerPerson: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Toolport cannot start, the settings have ${problems.length} problem(s):\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

const bool = (name: string, raw: string | undefined, fallback: boolean, problems: string[]) => {
  if (raw === undefined || raw === '') return fallback;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  problems.push(`${name} must be true or false, not "${raw}".`);
  return fallback;
};

/** Parses every setting once, at start; reports every bad one together. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  const problems: string[] = [];

  let port = 8080;
  if (env.PORT !== undefined && env.PORT !== '') {
    const n = Number(env.PORT);
    if (!Number.isInteger(n) || n < 0 || n > 65535) problems.push(`PORT must be a whole number from 0 to 65535, not "${env.PORT}".`);
    else port = n;
  }

  let publicUrl = `http://localhost:${port}`;
  if (env.PUBLIC_URL) {
    try {
      const u = new URL(env.PUBLIC_URL);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`PUBLIC_URL must be http or https, not "${u.protocol}".`);
      else if (u.search || u.hash || u.username || u.password) problems.push('PUBLIC_URL must not carry a query, fragment or credentials.');
      publicUrl = u.toString().replace(/\/+$/, '');
    } catch {
      problems.push(`PUBLIC_URL must be an absolute URL, not "${env.PUBLIC_URL}".`);
    }
  }

  let database: DatabaseConfig = {};
  if (env.DATABASE_URL) {
    if (!/^postgres(ql)?:\/\//.test(env.DATABASE_URL)) problems.push('DATABASE_URL must start with postgres:// or postgresql://.');
    database = { url: env.DATABASE_URL };
  }

  let redis: Config['redis'];
  if (env.REDIS_URL) {
    if (!/^rediss?:\/\//.test(env.REDIS_URL)) problems.push('REDIS_URL must start with redis:// or rediss://.');
    const prefix = env.REDIS_PREFIX || 'toolport';
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(prefix)) problems.push('REDIS_PREFIX must be 1-40 letters, digits, _ or -.');
    redis = { url: env.REDIS_URL, prefix };
  }

  const dataDir = path.resolve(env.DATA_DIR || './.toolport');
  if (!database.url) database = { dataDir: path.join(dataDir, 'pgdata') };

  let role: Role = 'all';
  if (env.ROLE) {
    if (env.ROLE === 'all' || env.ROLE === 'api' || env.ROLE === 'worker') role = env.ROLE;
    else problems.push(`ROLE must be all, api or worker, not "${env.ROLE}".`);
  }
  if (role === 'worker' && !redis) problems.push('ROLE=worker needs REDIS_URL: without Redis the queue lives inside the API process.');

  const embedded = !env.DATABASE_URL && !env.REDIS_URL;
  const webhookAllowPrivate = bool('WEBHOOK_ALLOW_PRIVATE', env.WEBHOOK_ALLOW_PRIVATE, embedded, problems);

  const secretKey = env.TOOLPORT_SECRET_KEY || undefined;
  if (secretKey !== undefined && Buffer.from(secretKey, 'base64').length !== 32) {
    problems.push('TOOLPORT_SECRET_KEY must be 32 random bytes in base64 (openssl rand -base64 32).');
  }

  const whole = (name: string, fallback: number, max: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      problems.push(`${name} must be a whole number from 1 to ${max}, not "${raw}".`);
      return fallback;
    }
    return n;
  };
  let trustedProxies = 0;
  if (env.TRUSTED_PROXIES && env.TRUSTED_PROXIES !== '0') trustedProxies = whole('TRUSTED_PROXIES', 0, 10);
  const limits: Limits = {
    callsPerPersonPerMinute: whole('LIMIT_CALLS_PER_PERSON', 600, 1_000_000),
    callsPerAppPerMinute: whole('LIMIT_CALLS_PER_APP', 300, 1_000_000),
    addonConcurrency: whole('LIMIT_ADDON_CONCURRENCY', 64, 100_000),
    pendingApprovalsPerPerson: whole('LIMIT_PENDING_APPROVALS', 20, 10_000),
  };

  let tracing: TracingConfig | undefined;
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) {
    const raw = env.OTEL_EXPORTER_OTLP_ENDPOINT;
    try {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT must be http or https, not "${u.protocol}".`);
      else if (u.search || u.hash) problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must not carry a query or fragment.');
      // Like the OpenTelemetry SDKs: the setting is the base URL, traces go to its /v1/traces.
      const base = u.toString().replace(/\/+$/, '');
      tracing = { endpoint: base, tracesUrl: `${base}/v1/traces`, serviceName: 'toolport' };
    } catch {
      // Never echoed: the URL may carry credentials.
      problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must be an absolute http(s) URL, e.g. http://otel-collector:4318.');
    }
    const serviceName = env.OTEL_SERVICE_NAME?.trim();
    if (serviceName && tracing) {
      if (serviceName.length > 100) problems.push('OTEL_SERVICE_NAME must be at most 100 characters.');
      else tracing.serviceName = serviceName;
    }
  }

  if (problems.length) throw new ConfigError(problems);
  return {
    port,
    publicUrl,
    publicOrigin: new URL(publicUrl).origin,
    database,
    redis,
    dataDir,
    role,
    webhookAllowPrivate,
    secretKey,
    embedded,
    limits,
    trustedProxies,
    tracing,
  };
}
