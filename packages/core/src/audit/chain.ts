// The audit chain's format and its verification, with no dependency beyond node:crypto: the server
// hashes with these functions and `toolport audit verify` checks with them (docs/audit.md).
import { createHash } from 'node:crypto';

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

export interface AuditVerdict {
  ok: boolean;
  events: number;
  chains: number;
  /** Where the chains break, first found first; empty when ok. */
  problems: string[];
  /** Each chain's last event: compare with the head you noted elsewhere to know none was cut off the end. */
  heads: Record<string, { seq: number; hash: string }>;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Pushes an export's lines in order (each its own chain's events in order); `verdict()` at the end. Memory grows with chains, not events. */
export class AuditVerifier {
  private events = 0;
  /** Per chain: its last event so far, and the runs of seq numbers skipped ([from, to]), which a late event may fill. */
  private readonly chains = new Map<string, { seq: number; hash: string; missing: Array<[number, number]> }>();
  private readonly problems: string[] = [];

  line(text: string, lineNo: number): void {
    if (!text.trim()) return;
    let e: AuditEvent;
    try {
      e = JSON.parse(text) as AuditEvent;
    } catch {
      this.problems.push(`line ${lineNo} is not JSON`);
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
      if (e.prev !== chain.hash) this.problems.push(`chain ${e.chain}: event seq ${chain.seq} was changed or replaced (event seq ${e.seq} names another hash as its prev)`);
    } else {
      chain.missing.push([chain.seq + 1, e.seq - 1]);
    }
    chain.seq = e.seq;
    chain.hash = e.hash;
  }

  verdict(): AuditVerdict {
    const problems = [...this.problems];
    const heads: AuditVerdict['heads'] = {};
    for (const [id, c] of this.chains) {
      heads[id] = { seq: c.seq, hash: c.hash };
      for (const [from, to] of c.missing) problems.push(from === to ? `chain ${id}: event seq ${from} is missing` : `chain ${id}: events seq ${from} to ${to} are missing`);
    }
    if (!this.events) problems.push('there are no audit events in it');
    return { ok: problems.length === 0, events: this.events, chains: this.chains.size, problems, heads };
  }
}

/** Verifies a whole export held as text (tests, small files); the CLI streams the file through AuditVerifier. */
export function verifyAuditExport(text: string): AuditVerdict {
  const v = new AuditVerifier();
  text.split('\n').forEach((line, i) => v.line(line, i + 1));
  return v.verdict();
}
