import { createECDH, createPrivateKey, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import type { ScryptCost } from './crypto';

export type Role = 'all' | 'api' | 'worker';

export interface DatabaseConfig {
  /** Postgres connection string; undefined means embedded PGlite. */
  url?: string;
  /** PGlite data directory; undefined with no url means in memory (tests only). */
  dataDir?: string;
}

export interface Config {
  port: number;
  /**
   * The address the HTTP server listens on (HOST). Without DATABASE_URL it is loopback: the embedded
   * default lets webhooks reach private addresses, so anyone who could reach it could scan the network.
   */
  host: string;
  publicUrl: string;
  /** `publicUrl` parsed; its origin is the only Origin accepted by the MCP endpoint besides none. */
  publicOrigin: string;
  /**
   * Host headers answered (DNS-rebinding protection): `publicUrl`'s host plus ALLOWED_HOSTS, each
   * lowercase `host[:port]` as `URL.host` spells it (no default port).
   */
  allowedHosts: string[];
  /** `publicUrl` names a loopback host: any loopback Host (localhost, 127.0.0.1, [::1]) on any port is answered too. */
  allowLoopbackHosts: boolean;
  database: DatabaseConfig;
  redis?: { url: string; prefix: string };
  dataDir: string;
  role: Role;
  webhookAllowPrivate: boolean;
  /**
   * Master keys (32 bytes each; TOOLPORT_SECRET_KEY, comma-separated): the first seals secrets at
   * rest, every one opens them. Unset: the embedded default's generated key under DATA_DIR.
   */
  secretKeys?: Buffer[];
  /**
   * Access-token signing keys (EC P-256; TOOLPORT_SIGNING_KEYS): the first signs, every one is
   * published and verifies. Unset: keys generated and stored in the database (embedded default).
   */
  signingKeys?: KeyObject[];
  /** The Web Push key pair (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY); unset: generated once and stored in the database. */
  vapid?: VapidConfig;
  /** `mailto:` or `https:` contact sent to push services (VAPID_SUBJECT); unset: derived from PUBLIC_URL. */
  vapidSubject?: string;
  /**
   * The hosts a browser's push endpoint may be at (PUSH_HOSTS; `*.` for any subdomain): the browsers'
   * push services by default, so a subscription cannot make Toolport POST to a host of anyone's choosing.
   */
  pushHosts: string[];
  embedded: boolean;
  limits: Limits;
  /** Proxies in front of Toolport whose X-Forwarded-For entries are believed (0: use the socket's address). */
  trustedProxies: number;
  /** Account ids (`usr_…`) of the people who review public listings (TOOLPORT_OPERATORS). */
  operators: string[];
  /** OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT); unset: spans are no-ops. */
  tracing?: TracingConfig;
  /** Audit events as OpenTelemetry logs (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or _ENDPOINT); unset: none sent (audit/otlp.ts). */
  auditLogs?: AuditLogsConfig;
  /** How long a destructive call waits for the person (APPROVAL_TIMEOUT_SECONDS): 30 by contract, shorter for tests. */
  approvalTimeoutSeconds: number;
  /** How long a whole tool call may take before the app is answered (CALL_BUDGET_SECONDS): 55 by contract, shorter for tests. */
  callBudgetSeconds: number;
  /** How long the logs are kept before the background sweep removes them (calls/retention.ts). */
  retention: Retention;
  /** How long a stopping API process lets requests in flight finish (SHUTDOWN_GRACE_SECONDS): 25, shorter for tests. */
  shutdownGraceSeconds: number;
  /** How often a live event stream is pinged and its credential checked again (STREAM_HEARTBEAT_SECONDS): 15, shorter for tests. */
  streamHeartbeatSeconds: number;
  /** Where mail (verification, password reset, notices) goes. */
  mail: MailConfig;
  /** Tests only, never read from the environment: a cheaper scrypt for new password hashes (unset: PASSWORD_COST). */
  passwordCost?: ScryptCost;
}

export interface MailConfig {
  /** SMTP_URL (smtp:// or smtps://, credentials in it); unset: each mail is written to `dir` instead. */
  smtpUrl?: string;
  /** MAIL_FROM: the sender, an address or `Name <address>`. */
  from: string;
  /** MAIL_DIR: where mail is written without SMTP_URL (default DATA_DIR/mail). */
  dir: string;
}

export interface VapidConfig {
  /** base64url, an uncompressed P-256 point (65 bytes). */
  publicKey: string;
  /** base64url, 32 bytes. */
  privateKey: string;
}

export interface TracingConfig {
  /** The OTLP/HTTP base URL as set, e.g. `http://otel-collector:4318`. */
  endpoint: string;
  /** Where spans are POSTed: the base URL + `/v1/traces`. */
  tracesUrl: string;
  /** `service.name` of every span (OTEL_SERVICE_NAME, default `toolport`). */
  serviceName: string;
}

export interface AuditLogsConfig {
  /** Where log records are POSTed: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT as set, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/logs`. */
  url: string;
  /** `url` without credentials, for log lines. */
  shownUrl: string;
  /** Sent with each request (OTEL_EXPORTER_OTLP_LOGS_HEADERS or OTEL_EXPORTER_OTLP_HEADERS), e.g. a collector's API key. */
  headers: Record<string, string>;
  /** `service.name` of the resource, as the traces have (OTEL_SERVICE_NAME, default `toolport`). */
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
  /** Tasks (calls that outlive their request) working for one person at once. */
  openTasksPerPerson: number;
}

/**
 * Days each log is kept. Calls: 90, a quarter, what Activity's charts and a person's "what did this app
 * do last month" need. Deliveries: 30, a developer's debugging window (they hold no more than the
 * calls do). Audit events: 400, a year's audit with a month to collect it.
 */
export interface Retention {
  callsDays: number;
  deliveriesDays: number;
  auditDays: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Toolport cannot start, the settings have ${problems.length} problem(s):\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

/** One line naming the setting and the fix; the entry points exit 78 (EX_CONFIG). */
export class StartupError extends Error {
  constructor(reason: string) {
    super(`Toolport cannot start: ${reason}`);
    this.name = 'StartupError';
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

/** Where Chrome, Firefox, Safari and Edge subscriptions point. */
const DEFAULT_PUSH_HOSTS = ['fcm.googleapis.com', 'android.googleapis.com', 'updates.push.services.mozilla.com', '*.push.apple.com', '*.notify.windows.com'];

const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
export const isLoopbackHostname = (hostname: string) => LOOPBACK_HOSTNAMES.has(hostname.toLowerCase().replace(/\.$/, ''));

/** As `URL.host` spells it (lowercase, IDNA, no default port), without a trailing dot. */
export function normalHost(raw: string, protocol: 'http:' | 'https:' = 'http:'): string | undefined {
  if (!raw || raw.length > 300 || !/^[A-Za-z0-9.:[\]_-]+$/.test(raw)) return undefined;
  try {
    const u = new URL(`${protocol}//${raw}`);
    if (u.username || u.password || u.pathname !== '/' || u.search || u.hash || !u.hostname) return undefined;
    const hostname = u.hostname.replace(/\.$/, '');
    if (!hostname) return undefined;
    return u.port ? `${hostname}:${u.port}` : hostname;
  } catch {
    return undefined;
  }
}

export interface ParseOptions {
  /**
   * The process reads or writes sealed secrets (the server and the worker, not the migration job):
   * missing keys (`productionSecretProblems`) are reported with every other bad setting.
   */
  requireKeys?: boolean;
}

/** Parses every setting once, at start; reports every bad one together. */
export function parseConfig(env: Record<string, string | undefined> = process.env, options: ParseOptions = {}): Config {
  const problems: string[] = [];

  let port = 8080;
  if (env.PORT !== undefined && env.PORT !== '') {
    const n = Number(env.PORT);
    if (!Number.isInteger(n) || n < 0 || n > 65535) problems.push(`PORT must be a whole number from 0 to 65535, not "${env.PORT}".`);
    else port = n;
  }

  // Loopback unless a database server is set (a server deployment listens on every interface).
  let host = env.DATABASE_URL ? '0.0.0.0' : '127.0.0.1';
  if (env.HOST) {
    const bare = env.HOST.trim().replace(/^\[(.*)\]$/, '$1');
    const hostname = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
    if (isIP(bare) || hostname.test(bare)) host = bare;
    else problems.push(`HOST must be an address to listen on (127.0.0.1, 0.0.0.0 for every IPv4 interface, :: for every interface) or a host name, not "${env.HOST}".`);
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
  // Checked even without REDIS_URL: a bad prefix is reported now, not on the start that adds Redis.
  const prefix = env.REDIS_PREFIX || 'toolport';
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(prefix)) problems.push('REDIS_PREFIX must be 1-40 letters, digits, _ or -.');
  if (env.REDIS_URL) {
    if (!/^rediss?:\/\//.test(env.REDIS_URL)) problems.push('REDIS_URL must start with redis:// or rediss://.');
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

  const secretKeys = parseSecretKeys(env.TOOLPORT_SECRET_KEY, problems);
  const signingKeys = parseSigningKeys(env.TOOLPORT_SIGNING_KEYS, problems);
  const vapid = parseVapid(env.VAPID_PUBLIC_KEY, env.VAPID_PRIVATE_KEY, problems);
  const vapidSubject = env.VAPID_SUBJECT || undefined;
  if (vapidSubject && !/^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/.test(vapidSubject)) problems.push('VAPID_SUBJECT must be a mailto: address or an https: URL.');

  let pushHosts = DEFAULT_PUSH_HOSTS;
  if (env.PUSH_HOSTS) {
    pushHosts = env.PUSH_HOSTS.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
    const bad = pushHosts.filter((h) => !/^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/.test(h));
    if (bad.length || !pushHosts.length) problems.push(`PUSH_HOSTS must list host names, each optionally starting with "*." (fcm.googleapis.com,*.push.apple.com), not "${env.PUSH_HOSTS.slice(0, 100)}".`);
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
  // Account ids, never emails: sign-up proves no address is yours, so whoever signed up first with
  // an operator's email would review listings. An id is random, made by Toolport: nobody picks one.
  const operators = (env.TOOLPORT_OPERATORS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const o of operators) {
    if (o.includes('@')) {
      problems.push(`TOOLPORT_OPERATORS: "${o}" is an email; name operators by account id (usr_…), which the person reads on their dashboard's Home page: anyone can sign up with an email that is not theirs.`);
    } else if (!/^usr_[A-Za-z0-9_-]{1,64}$/.test(o)) {
      problems.push(`TOOLPORT_OPERATORS: "${o}" is not an account id; give comma-separated ids (usr_…), which each person reads on their dashboard's Home page.`);
    }
  }
  const limits: Limits = {
    callsPerPersonPerMinute: whole('LIMIT_CALLS_PER_PERSON', 600, 1_000_000),
    callsPerAppPerMinute: whole('LIMIT_CALLS_PER_APP', 300, 1_000_000),
    addonConcurrency: whole('LIMIT_ADDON_CONCURRENCY', 64, 100_000),
    pendingApprovalsPerPerson: whole('LIMIT_PENDING_APPROVALS', 20, 10_000),
    openTasksPerPerson: whole('LIMIT_OPEN_TASKS', 1_000, 100_000),
  };

  // DESIGN.md fixes the wait at 30 s; a shorter one exists for tests and load smokes, never a longer one.
  const approvalTimeoutSeconds = whole('APPROVAL_TIMEOUT_SECONDS', 30, 30);
  // The timers below are fixed by what lies outside Toolport (the SDK clients' 60 s, Kubernetes'
  // 40 s grace, proxies' idle cut-offs); a shorter one exists so tests need not sleep through them.
  const callBudgetSeconds = whole('CALL_BUDGET_SECONDS', 55, 55);
  // Ten years at most: a longer setting is a typo for "forever", which a log kept in one table cannot be.
  const retention: Retention = {
    callsDays: whole('RETAIN_CALLS_DAYS', 90, 3_650),
    deliveriesDays: whole('RETAIN_DELIVERIES_DAYS', 30, 3_650),
    auditDays: whole('RETAIN_AUDIT_DAYS', 400, 3_650),
  };
  const shutdownGraceSeconds = whole('SHUTDOWN_GRACE_SECONDS', 25, 25);
  const streamHeartbeatSeconds = whole('STREAM_HEARTBEAT_SECONDS', 15, 15);

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

  const auditLogs = parseAuditLogs(env, problems);

  const mail = parseMail(env, dataDir, publicUrl, problems);

  const allowedHosts: string[] = [];
  let allowLoopbackHosts = false;
  try {
    const publicHost = new URL(publicUrl);
    allowedHosts.push(normalHost(publicHost.host, publicHost.protocol as 'http:' | 'https:') ?? publicHost.host);
    allowLoopbackHosts = isLoopbackHostname(publicHost.hostname);
  } catch {
    /* PUBLIC_URL already reported */
  }
  for (const raw of (env.ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim()).filter(Boolean)) {
    const host = normalHost(raw, publicUrl.startsWith('https:') ? 'https:' : 'http:');
    if (!host) problems.push(`ALLOWED_HOSTS must list host names with an optional port (toolport.example.com,10.0.0.5:8080), not "${raw}".`);
    else if (!allowedHosts.includes(host)) allowedHosts.push(host);
  }

  if (options.requireKeys && database.url) {
    problems.push(...productionSecretProblems({ database, secretKeys, signingKeys, role }));
  }
  if (problems.length) throw new ConfigError(problems);
  return {
    port,
    host,
    publicUrl,
    publicOrigin: new URL(publicUrl).origin,
    allowedHosts,
    allowLoopbackHosts,
    database,
    redis,
    dataDir,
    role,
    webhookAllowPrivate,
    secretKeys,
    signingKeys,
    vapid,
    vapidSubject,
    pushHosts,
    embedded,
    limits,
    trustedProxies,
    operators,
    tracing,
    auditLogs,
    approvalTimeoutSeconds,
    callBudgetSeconds,
    retention,
    shutdownGraceSeconds,
    streamHeartbeatSeconds,
    mail,
  };
}

const MAIL_ADDRESS = /^[^\s@<>"]{1,64}@[^\s@<>"]{1,190}\.[^\s@<>"]{1,63}$/;

/**
 * Where audit events go as OpenTelemetry logs, read as the OpenTelemetry SDKs read these settings:
 * the logs endpoint is used as it is, the general one gets `/v1/logs`; OTEL_LOGS_EXPORTER=none
 * keeps them home while traces still go out.
 */
function parseAuditLogs(env: Record<string, string | undefined>, problems: string[]): AuditLogsConfig | undefined {
  if (env.OTEL_LOGS_EXPORTER?.trim() === 'none') return undefined;
  const own = env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const name = own ? 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = own || base;
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Never echoed: the URL may carry credentials. The general one's problem is tracing's to tell.
    if (own) problems.push(`${name} must be an absolute http(s) URL, e.g. http://otel-collector:4318/v1/logs.`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    if (own) problems.push(`${name} must be http or https, not "${url.protocol}".`);
    return undefined;
  }
  const full = own ? url.toString() : `${url.toString().replace(/\/+$/, '')}/v1/logs`;
  const shown = new URL(full);
  shown.username = '';
  shown.password = '';
  const headers: Record<string, string> = {};
  let badHeaders = false;
  const headerSetting = env.OTEL_EXPORTER_OTLP_LOGS_HEADERS !== undefined ? 'OTEL_EXPORTER_OTLP_LOGS_HEADERS' : 'OTEL_EXPORTER_OTLP_HEADERS';
  for (const pair of (env[headerSetting] ?? '').split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    let key = '';
    let value = '';
    try {
      key = decodeURIComponent(pair.slice(0, eq)).trim();
      value = decodeURIComponent(pair.slice(eq + 1)).trim();
    } catch {
      key = '';
    }
    // Values never echoed: they are API keys.
    if (eq < 1 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) badHeaders = true;
    else headers[key.toLowerCase()] = value;
  }
  if (badHeaders) problems.push(`${headerSetting} must be name=value pairs separated by commas (values URL-encoded).`);
  const serviceName = env.OTEL_SERVICE_NAME?.trim();
  return { url: full, shownUrl: shown.toString(), headers, serviceName: serviceName && serviceName.length <= 100 ? serviceName : 'toolport' };
}

function parseMail(env: Record<string, string | undefined>, dataDir: string, publicUrl: string, problems: string[]): MailConfig {
  let smtpUrl: string | undefined;
  if (env.SMTP_URL) {
    try {
      const u = new URL(env.SMTP_URL);
      if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') problems.push(`SMTP_URL must start with smtp:// or smtps://, not "${u.protocol}".`);
      else if (!u.hostname) problems.push('SMTP_URL must name a host, e.g. smtps://user:password@smtp.example.com:465.');
      else smtpUrl = env.SMTP_URL;
    } catch {
      // Never echoed: the URL carries the mail server's password.
      problems.push('SMTP_URL must be an absolute URL, e.g. smtps://user:password@smtp.example.com:465.');
    }
  }
  let from = `Toolport <no-reply@${new URL(publicUrl).hostname.replace(/^\[|\]$/g, '') || 'localhost'}>`;
  if (env.MAIL_FROM) {
    const raw = env.MAIL_FROM.trim();
    const address = /<([^<>]+)>$/.exec(raw)?.[1] ?? raw;
    if (!MAIL_ADDRESS.test(address) || /[\r\n]/.test(raw) || raw.length > 200) problems.push(`MAIL_FROM must be an address or "Name <address>", not "${raw.slice(0, 80)}".`);
    else from = raw;
  }
  return { smtpUrl, from, dir: path.resolve(env.MAIL_DIR || path.join(dataDir, 'mail')) };
}

/**
 * The settings a process that reads or writes sealed secrets needs with DATABASE_URL (not the
 * migration job): every process shares the master keys, and API processes the signing keys.
 */
export function productionSecretProblems(config: Pick<Config, 'database' | 'secretKeys' | 'signingKeys' | 'role'>): string[] {
  if (!config.database.url) return [];
  const problems: string[] = [];
  if (!config.secretKeys) problems.push('TOOLPORT_SECRET_KEY is required with DATABASE_URL: every process must share the master keys.');
  if (!config.signingKeys && config.role !== 'worker') {
    problems.push('TOOLPORT_SIGNING_KEYS is required with DATABASE_URL: every API process must sign access tokens with the same keys (npm run keygen prints one).');
  }
  return problems;
}

/** Comma-separated base64 32-byte keys; values are never echoed, only their positions. */
function parseSecretKeys(raw: string | undefined, problems: string[]): Buffer[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const items = raw.split(',').map((k) => k.trim());
  const keys: Buffer[] = [];
  for (const [i, item] of items.entries()) {
    const key = /^[A-Za-z0-9+/]+={0,2}$/.test(item) ? Buffer.from(item, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) problems.push(`TOOLPORT_SECRET_KEY: key ${i + 1} of ${items.length} must be 32 random bytes in base64 (openssl rand -base64 32).`);
    else if (keys.some((k) => k.equals(key))) problems.push(`TOOLPORT_SECRET_KEY: key ${i + 1} of ${items.length} is listed twice.`);
    else keys.push(key);
  }
  return keys.length === items.length ? keys : undefined;
}

/** PEM blocks (PKCS#8 or SEC1), or comma-separated base64 PKCS#8 DER (`npm run keygen`: one env var). */
function parseSigningKeys(raw: string | undefined, problems: string[]): KeyObject[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const items = raw.includes('-----BEGIN')
    ? [...raw.matchAll(/-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g)].map((m) => m[0])
    : raw.split(',').map((k) => k.trim());
  if (!items.length) {
    problems.push('TOOLPORT_SIGNING_KEYS holds no complete PEM block.');
    return undefined;
  }
  const keys: KeyObject[] = [];
  for (const [i, item] of items.entries()) {
    const which = `TOOLPORT_SIGNING_KEYS: key ${i + 1} of ${items.length}`;
    let key: KeyObject;
    try {
      key = item.startsWith('-----BEGIN')
        ? createPrivateKey(item)
        : createPrivateKey({ key: Buffer.from(item, 'base64'), format: 'der', type: 'pkcs8' });
    } catch {
      problems.push(`${which} is not a private key (give base64 PKCS#8 DER or PEM; npm run keygen prints one).`);
      continue;
    }
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      problems.push(`${which} must be an EC P-256 key (ES256).`);
      continue;
    }
    const d = key.export({ format: 'jwk' }).d;
    if (keys.some((k) => k.export({ format: 'jwk' }).d === d)) {
      problems.push(`${which} is listed twice.`);
      continue;
    }
    keys.push(key);
  }
  return keys.length === items.length ? keys : undefined;
}

function parseVapid(pub: string | undefined, priv: string | undefined, problems: string[]): VapidConfig | undefined {
  let vapid: VapidConfig | undefined;
  if (pub || priv) {
    if (!pub || !priv) {
      problems.push('VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY go together: set both or neither.');
    } else {
      const b64url = /^[A-Za-z0-9_-]+$/;
      const p = b64url.test(pub) ? Buffer.from(pub, 'base64url') : Buffer.alloc(0);
      const d = b64url.test(priv) ? Buffer.from(priv, 'base64url') : Buffer.alloc(0);
      if (p.length !== 65 || p[0] !== 4) problems.push('VAPID_PUBLIC_KEY must be an uncompressed P-256 public key, base64url (65 bytes; npx web-push generate-vapid-keys).');
      else if (d.length !== 32) problems.push('VAPID_PRIVATE_KEY must be a P-256 private key, base64url (32 bytes).');
      else {
        let matches = false;
        try {
          const ecdh = createECDH('prime256v1');
          ecdh.setPrivateKey(d);
          matches = ecdh.getPublicKey().equals(p);
        } catch {
          /* not a valid scalar */
        }
        if (!matches) problems.push('VAPID_PRIVATE_KEY is not the private half of VAPID_PUBLIC_KEY.');
        else vapid = { publicKey: pub, privateKey: priv };
      }
    }
  }
  return vapid;
}
