// The audit chain's format and its verification, with no dependency beyond node:crypto: the server
// hashes with these functions and `toolport audit verify` checks with them (docs/audit.md).
import { createHash, createPublicKey, verify as verifySignature, type JsonWebKey } from 'node:crypto';

/** The `prev` of each chain's first event. */
export const GENESIS = '0'.repeat(64);

/** An audit event as exported: one line of NDJSON. `hash` covers every other field. */
export interface AuditEvent {
  v: 1;
  /** `usr_…` for a person's chain, `operator` for the operators' decisions. */
  chain: string;
  /** 1, 2, 3… within the chain, with no gaps. */
  seq: number;
  /** The previous event's `hash`; GENESIS for seq 1. */
  prev: string;
  at: string;
  kind: string;
  data: Record<string, unknown>;
  hash: string;
}

/**
 * RFC 8785 (JSON Canonicalization Scheme): keys sorted by UTF-16 code units, no whitespace, and
 * ECMAScript's number and string serialisation, which is JSON.stringify's.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('A canonical JSON number is finite.');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`${typeof value} has no JSON form.`);
}

/** SHA-256, in hex, of the event's canonical JSON without its `hash`. */
export function eventHash(event: Omit<AuditEvent, 'hash'> & { hash?: string }): string {
  const { hash: _hash, ...hashed } = event;
  return createHash('sha256').update(canonicalJson(hashed)).digest('hex');
}

/**
 * The event's hash and its line as exported: canonicalJson of the event with and without `hash`,
 * built around `data` serialised once (the writer's cost per event; test/audit-chain.test.ts holds
 * it to canonicalJson).
 */
export function sealEvent(e: Omit<AuditEvent, 'hash'>): { hash: string; line: string } {
  const before = `{"at":${JSON.stringify(e.at)},"chain":${JSON.stringify(e.chain)},"data":${canonicalJson(e.data)},`;
  const after = `"kind":${JSON.stringify(e.kind)},"prev":${JSON.stringify(e.prev)},"seq":${canonicalJson(e.seq)},"v":${canonicalJson(e.v)}}`;
  const hash = createHash('sha256').update(before + after).digest('hex');
  return { hash, line: `${before}"hash":"${hash}",${after}` };
}

/**
 * What stands in a chain's first place once retention removed its events 1..seq: event seq's hash,
 * so event seq + 1 still links to it, and the deployment's signature over the rest of it.
 */
export interface AuditCheckpoint {
  v: 1;
  chain: string;
  seq: number;
  /** Event seq's `at`: the events up to this time were removed. */
  at: string;
  kind: 'checkpoint';
  /** Event seq's hash. */
  hash: string;
  /** A compact JWS (ES256) whose payload is checkpointPayload(this), signed with a key of the deployment's JWKS. */
  sig: string;
}

/** What a checkpoint's signature covers: its canonical JSON without `sig`. */
export function checkpointPayload(c: Omit<AuditCheckpoint, 'sig'> & { sig?: string }): string {
  const { sig: _sig, ...signed } = c;
  return canonicalJson(signed);
}

/** A JSON Web Key Set, as the authorization server's jwks_uri serves it. */
export interface Jwks {
  keys: Array<JsonWebKey & { kid?: string }>;
}

export interface AuditVerdict {
  ok: boolean;
  /** Events, not counting checkpoints. */
  events: number;
  chains: number;
  /** Where the chains break, first found first; empty when ok. */
  problems: string[];
  /** Each chain's last event: compare with the head you noted elsewhere to know none was cut off the end. */
  heads: Record<string, { seq: number; hash: string }>;
  /** The chains that start at a checkpoint (their earlier events were removed), with the key that signed it. */
  checkpoints: Record<string, { seq: number; hash: string; kid: string | null }>;
  /** Whether the checkpoints' signatures were checked against a JWKS (false also when there are none). */
  signaturesChecked: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;
const B64URL = /^[A-Za-z0-9_-]*$/;

/** The JWS's header and payload, and whether it verifies under `jwks` (undefined without one). */
function readJws(jws: string, jwks: Jwks | undefined): { kid: string | null; payload: string; verified?: 'yes' | 'no' | 'unknown key' } | undefined {
  const parts = jws.split('.');
  if (parts.length !== 3 || !parts.every((p) => B64URL.test(p))) return undefined;
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const kid = typeof header?.kid === 'string' ? header.kid : null;
  const payload = Buffer.from(parts[1]!, 'base64url').toString('utf8');
  if (!jwks) return { kid, payload };
  const jwk = jwks.keys.find((k) => k.kid === kid && k.kty === 'EC' && k.crv === 'P-256');
  if (!jwk || header.alg !== 'ES256') return { kid, payload, verified: 'unknown key' };
  let ok = false;
  try {
    const { kid: _kid, alg: _alg, use: _use, key_ops: _ops, ...key } = jwk as JsonWebKey & Record<string, unknown>;
    ok = verifySignature('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), { key: createPublicKey({ key: key as JsonWebKey, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2]!, 'base64url'));
  } catch {
    ok = false;
  }
  return { kid, payload, verified: ok ? 'yes' : 'no' };
}

/** Pushes an export's lines in order (each its own chain's events in order); `verdict()` at the end. Memory grows with chains, not events. */
export class AuditVerifier {
  private events = 0;
  /**
   * Per chain: its last event so far, the runs of seq numbers skipped ([from, to]), which a late
   * event may fill, and the checkpoint it starts at, if any (events up to its seq were removed).
   */
  private readonly chains = new Map<string, { seq: number; hash: string; missing: Array<[number, number]>; checkpoint?: { seq: number; hash: string; kid: string | null } }>();
  private readonly problems: string[] = [];

  /** With `jwks` (the deployment's, from its jwks_uri), each checkpoint's signature is checked too. */
  constructor(private readonly opts: { jwks?: Jwks } = {}) {}

  line(text: string, lineNo: number): void {
    if (!text.trim()) return;
    let e: AuditEvent;
    try {
      e = JSON.parse(text) as AuditEvent;
    } catch {
      this.problems.push(`line ${lineNo} is not JSON`);
      return;
    }
    if (e && typeof e === 'object' && e.kind === 'checkpoint') {
      this.checkpoint(e as unknown as AuditCheckpoint, lineNo);
      return;
    }
    if (!e || typeof e !== 'object' || typeof e.chain !== 'string' || !Number.isSafeInteger(e.seq) || e.seq < 1 || !HEX64.test(String(e.prev)) || !HEX64.test(String(e.hash))) {
      this.problems.push(`line ${lineNo} is not an audit event (chain, seq, prev and hash)`);
      return;
    }
    this.events++;
    const where = `chain ${e.chain}: event seq ${e.seq}`;
    let changed = false;
    try {
      changed = eventHash(e) !== e.hash;
    } catch {
      changed = true;
    }
    if (changed) this.problems.push(`${where} was changed (its hash does not match)`);
    const chain = this.chains.get(e.chain);
    if (!chain) {
      const missing: Array<[number, number]> = e.seq > 1 ? [[1, e.seq - 1]] : [];
      if (e.seq === 1 && e.prev !== GENESIS) this.problems.push(`${where} is not the first of its chain (its prev is not the genesis value)`);
      this.chains.set(e.chain, { seq: e.seq, hash: e.hash, missing });
      return;
    }
    const cp = chain.checkpoint;
    if (cp && e.seq <= cp.seq) {
      this.problems.push(`${where} is claimed from before the checkpoint at seq ${cp.seq}: the events up to seq ${cp.seq} were removed, and the checkpoint stands for them`);
      return;
    }
    if (e.seq <= chain.seq) {
      // Listed earlier as missing: it is here, out of its place.
      const run = chain.missing.findIndex(([from, to]) => from <= e.seq && e.seq <= to);
      if (run >= 0) {
        const [from, to] = chain.missing[run]!;
        chain.missing.splice(run, 1, ...([[from, e.seq - 1], [e.seq + 1, to]] as Array<[number, number]>).filter(([a, b]) => a <= b));
      }
      this.problems.push(e.seq === chain.seq ? `${where} appears twice` : `${where} comes after seq ${chain.seq}`);
      return;
    }
    if (e.seq === chain.seq + 1) {
      if (e.prev !== chain.hash) {
        this.problems.push(
          cp?.seq === chain.seq
            ? `${where} does not follow the checkpoint at seq ${cp.seq} (its prev is not the checkpoint's hash)`
            : `chain ${e.chain}: event seq ${chain.seq} was changed or replaced (event seq ${e.seq} names another hash as its prev)`,
        );
      }
    } else {
      chain.missing.push([chain.seq + 1, e.seq - 1]);
    }
    chain.seq = e.seq;
    chain.hash = e.hash;
  }

  /**
   * A checkpoint starts its chain: the chain goes on from its (seq, hash). Its signature's payload
   * must be the checkpoint itself; with a JWKS, the signature must verify under the key it names.
   */
  private checkpoint(c: AuditCheckpoint, lineNo: number) {
    if (typeof c.chain !== 'string' || !Number.isSafeInteger(c.seq) || c.seq < 1 || !HEX64.test(String(c.hash)) || typeof c.sig !== 'string') {
      this.problems.push(`line ${lineNo} is not a checkpoint (chain, seq, hash and sig)`);
      return;
    }
    const where = `chain ${c.chain}: the checkpoint at seq ${c.seq}`;
    const known = this.chains.get(c.chain);
    if (known) {
      this.problems.push(`${where} is not the first line of its chain: it stands for the events up to seq ${c.seq}, which were removed, so nothing of the chain comes before it (an export taken while retention removed them: download it again)`);
      return;
    }
    let payload: string | undefined;
    try {
      payload = checkpointPayload(c);
    } catch {
      payload = undefined;
    }
    const jws = readJws(c.sig, this.opts.jwks);
    if (!jws || payload === undefined || jws.payload !== payload) {
      this.problems.push(`${where} was changed (its signature is over another chain, seq, hash or time)`);
    } else if (jws.verified === 'unknown key') {
      this.problems.push(`${where} is signed with key ${jws.kid ?? '(none named)'}, which is not an ES256 key of the JWKS given`);
    } else if (jws.verified === 'no') {
      this.problems.push(`${where} was changed or forged (its signature does not verify with key ${jws.kid})`);
    }
    const point = { seq: c.seq, hash: c.hash, kid: jws?.kid ?? null };
    this.chains.set(c.chain, { seq: c.seq, hash: c.hash, missing: [], checkpoint: point });
  }

  verdict(): AuditVerdict {
    const problems = [...this.problems];
    const heads: AuditVerdict['heads'] = {};
    const checkpoints: AuditVerdict['checkpoints'] = {};
    for (const [id, c] of this.chains) {
      heads[id] = { seq: c.seq, hash: c.hash };
      if (c.checkpoint) checkpoints[id] = c.checkpoint;
      for (const [from, to] of c.missing) problems.push(from === to ? `chain ${id}: event seq ${from} is missing` : `chain ${id}: events seq ${from} to ${to} are missing`);
    }
    if (!this.chains.size) problems.push('there are no audit events in it');
    const signaturesChecked = this.opts.jwks !== undefined && Object.keys(checkpoints).length > 0;
    return { ok: problems.length === 0, events: this.events, chains: this.chains.size, problems, heads, checkpoints, signaturesChecked };
  }
}

/** Verifies a whole export held as text (tests, small files); the CLI streams the file through AuditVerifier. */
export function verifyAuditExport(text: string, opts: { jwks?: Jwks } = {}): AuditVerdict {
  const v = new AuditVerifier(opts);
  text.split('\n').forEach((line, i) => v.line(line, i + 1));
  return v.verdict();
}
