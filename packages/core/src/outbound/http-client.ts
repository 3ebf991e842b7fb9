import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { systemClock, type Clock } from '../clock';
import { addressRange } from './address';
import type { OutboundClient, OutboundErrorClass, OutboundRequest, OutboundResponse } from './types';

/** Why an outbound request failed, with a short reason for the developer's delivery log. */
export class OutboundError extends Error {
  readonly errorClass: OutboundErrorClass;
  constructor(errorClass: OutboundErrorClass, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundError';
    this.errorClass = errorClass;
  }
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface OutboundClientOptions {
  /** Lifts the address rule only (local development); schemes, deadline and caps still apply. */
  allowPrivate: boolean;
  /** Resolves host names; defaults to dns.lookup with every address. Tests inject one. */
  resolve?: Resolver;
  /** Sockets per origin; keep-alive makes a webhook call cost one round trip. */
  maxSockets?: number;
  /** The clock requests' deadlines are set by (the services'); the system clock by default. */
  clock?: Clock;
}

const defaultResolve: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA']);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);
const NOT_SENT_TIMEOUT = 'deadline passed before sending';
const NOT_SENT_CANCEL = 'the call was cancelled before it was sent';
/** A connection these refused never carried the request (a reset may come after the server read it). */
const NOT_CONNECTED = /\((ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)\)$/;

/**
 * Whether a failed request certainly never reached the server, from its class and message as
 * stored with the attempt: the add-on cannot have acted on it. Unsure is false.
 */
export function neverSent(errorClass: string, message: string): boolean {
  switch (errorClass) {
    case 'bad_url':
    case 'dns':
    case 'blocked_address':
    case 'tls': // the handshake comes before the request
      return true;
    case 'connect':
      return NOT_CONNECTED.test(message);
    case 'timeout':
      return message === NOT_SENT_TIMEOUT;
    case 'cancelled':
      return message === NOT_SENT_CANCEL;
    default:
      return false;
  }
}

function classify(err: unknown, afterResponse: boolean): OutboundError {
  if (err instanceof OutboundError) return err;
  const code = String((err as NodeJS.ErrnoException | undefined)?.code ?? '');
  const reason = code || (err instanceof Error ? err.message : 'unknown error');
  if (DNS_CODES.has(code)) return new OutboundError('dns', `host name not resolved (${reason})`, { cause: err });
  const tlsRecord = code === 'EPROTO' && err instanceof Error && err.message.includes('SSL routines');
  if (TLS_CODE.test(code) || tlsRecord) return new OutboundError('tls', `TLS failed (${reason})`, { cause: err });
  if (code.startsWith('HPE_') || code === 'ERR_INVALID_HTTP_RESPONSE' || afterResponse) {
    return new OutboundError('protocol', `broken HTTP answer (${reason})`, { cause: err });
  }
  return new OutboundError('connect', `connection failed (${reason})`, { cause: err });
}

/** Parses and checks the URL before any socket exists: literal IP hosts never reach `lookup`. */
function checkUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError('bad_url', 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError('bad_url', `scheme ${url.protocol} is not http or https`);
  if (url.username || url.password) throw new OutboundError('bad_url', 'URL carries credentials');
  // WHATWG URL has already turned 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 into 127.0.0.1.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!allowPrivate && net.isIP(host)) {
    const range = addressRange(host);
    if (range !== 'unicast') throw new OutboundError('blocked_address', `${host} is a ${range} address`);
  }
  return url;
}

export function createOutboundClient(options: OutboundClientOptions): OutboundClient {
  const { allowPrivate, clock = systemClock } = options;
  const resolve = options.resolve ?? defaultResolve;

  async function resolveChecked(hostname: string, family: number): Promise<dns.LookupAddress[]> {
    let records: Array<{ address: string; family: number }>;
    try {
      records = await resolve(hostname);
    } catch (err) {
      throw classify(err, false);
    }
    const out: dns.LookupAddress[] = [];
    for (const r of records) {
      const fam = net.isIP(r.address);
      if (fam === 0) throw new OutboundError('dns', `${hostname} resolved to something that is not an IP address`);
      // Every address is checked, not only the one used: a host that mixes in a private address is refused.
      if (!allowPrivate) {
        const range = addressRange(r.address);
        if (range !== 'unicast') throw new OutboundError('blocked_address', `${hostname} resolves to ${r.address}, a ${range} address`);
      }
      if (!family || family === fam) out.push({ address: r.address, family: fam });
    }
    if (!out.length) throw new OutboundError('dns', `${hostname} has no usable address`);
    return out;
  }

  // net.connect calls this for every new socket (never for an IP literal); the address checked is the
  // address connected to, so DNS rebinding between a check and the connection is not possible.
  const lookup = (hostname: string, opts: dns.LookupOptions, callback: LookupCallback) => {
    resolveChecked(hostname, Number(opts.family) || 0).then(
      (list) => (opts.all ? callback(null, list) : callback(null, list[0]!.address, list[0]!.family)),
      (err: OutboundError) => callback(err as unknown as NodeJS.ErrnoException, ''),
    );
  };

  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? 64,
    maxFreeSockets: options.maxSockets ?? 64,
    // Across all add-ons: past this, requests wait for a socket (within their deadline) instead of exhausting descriptors.
    maxTotalSockets: 2048,
    scheduling: 'lifo' as const,
    // Idle sockets close before a typical server's 5 s keep-alive ends, which avoids most stale reuse.
    timeout: 4_000,
    lookup: lookup as unknown as net.LookupFunction,
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);

  function once(url: URL, req: OutboundRequest, retryStale: boolean): Promise<OutboundResponse> {
    return new Promise<OutboundResponse>((resolvePromise, reject) => {
      const remaining = req.deadline - clock.now().getTime();
      if (remaining <= 0) return reject(new OutboundError('timeout', NOT_SENT_TIMEOUT));
      if (req.signal?.aborted) return reject(new OutboundError('cancelled', NOT_SENT_CANCEL));

      const headers: Record<string, string> = { ...req.headers };
      headers['host'] = url.host;
      headers['accept-encoding'] = 'identity';
      if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));

      const https_ = url.protocol === 'https:';
      const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      const r = (https_ ? https : http).request({
        protocol: url.protocol,
        hostname,
        port: url.port || (https_ ? 443 : 80),
        path: url.pathname + url.search,
        method: req.method ?? (req.body === undefined ? 'GET' : 'POST'),
        headers,
        agent: https_ ? httpsAgent : httpAgent,
      });

      let settled = false;
      let responded = false;
      const finish = () => {
        settled = true;
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: unknown) => {
        if (settled) return;
        const e = classify(err, responded);
        // A pooled socket the server closed while idle: one fresh attempt, within the same deadline.
        const code = (err as NodeJS.ErrnoException)?.code;
        if (retryStale && !responded && r.reusedSocket && code && STALE_SOCKET_CODES.has(code)) {
          finish();
          r.destroy();
          // The server may have read the request before the reset: the retry's failure is never "not sent".
          once(url, req, false).then(resolvePromise, (again: unknown) =>
            reject(again instanceof OutboundError && neverSent(again.errorClass, again.message) ? new OutboundError('connect', `${again.message} after a reset`, { cause: again }) : again),
          );
          return;
        }
        finish();
        r.destroy();
        reject(e);
      };
      const onAbort = () => fail(new OutboundError('cancelled', 'the call was cancelled while the add-on was answering; Toolport hung up'));
      // One timer for the whole exchange: a slow connect, slow headers or a drip-fed body all end here.
      const timer = setTimeout(() => fail(new OutboundError('timeout', `no complete answer within ${Math.round(remaining)} ms`)), remaining);
      req.signal?.addEventListener('abort', onAbort, { once: true });

      r.on('error', fail);
      r.on('response', (res) => {
        responded = true;
        const declared = Number(res.headers['content-length']);
        if (declared > req.maxBytes) return fail(new OutboundError('too_large', `answer declares ${declared} bytes, limit ${req.maxBytes}`));
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          size += chunk.length;
          if (size > req.maxBytes) return fail(new OutboundError('too_large', `answer exceeds ${req.maxBytes} bytes`));
          chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('close', () => {
          if (!res.complete) fail(new OutboundError('protocol', 'connection closed before the answer was complete'));
        });
        res.on('end', () => {
          if (settled) return;
          finish();
          resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks, size) });
        });
      });
      r.end(req.body);
    });
  }

  return {
    async request(req) {
      const url = checkUrl(req.url, allowPrivate);
      return once(url, req, true);
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
