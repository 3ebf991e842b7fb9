// Issue #45, "a verifiable audit trail": the chain's canonical form (RFC 8785) and the verifier that
// `toolport audit verify` runs, on exports changed, cut and reordered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson, eventHash, GENESIS, sealEvent, verifyAuditExport } from '../packages/core/src/audit/chain';

/** A chain as the server writes it: `n` events, each naming the previous one's hash. */
function chainOf(chain: string, n: number, data: (seq: number) => Record<string, unknown> = (seq) => ({ call: `call_${seq}`, outcome: 'ok' })): string[] {
  const lines: string[] = [];
  let prev = GENESIS;
  for (let seq = 1; seq <= n; seq++) {
    const { hash, line } = sealEvent({ v: 1, chain, seq, prev, at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(), kind: 'call', data: data(seq) });
    lines.push(line);
    prev = hash;
  }
  return lines;
}
const text = (lines: string[]) => `${lines.join('\n')}\n`;

describe('the canonical form (RFC 8785)', () => {
  it('sorts keys by UTF-16 code units and writes numbers and strings as ECMAScript does (the RFC’s own examples)', () => {
    // RFC 8785 §3.2.3: the sorting example.
    const sorted = JSON.parse('{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}');
    // Read off the text: JSON.parse would put the integer-like key "1" first again.
    assert.deepEqual([...canonicalJson(sorted).matchAll(/:"([^"]*)"/g)].map((m) => m[1]), [
      'Carriage Return', 'One', 'Control', 'Latin Small Letter O With Diaeresis', 'Euro Sign', 'Emoji: Grinning Face', 'Hebrew Letter Dalet With Dagesh',
    ]);
    // RFC 8785 §3.2.2: the serialisation example.
    const input = JSON.parse('{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}');
    assert.equal(canonicalJson(input), '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
    assert.equal(canonicalJson([-0, 1e21, 1e-7, 9007199254740991]), '[0,1e+21,1e-7,9007199254740991]');
    assert.throws(() => canonicalJson({ n: Number.NaN }), /finite/);
    assert.equal(canonicalJson({ b: undefined, a: 1 }), '{"a":1}', 'an absent field is not null');
  });

  it('the writer’s line is the canonical JSON of the event, and its hash that of the event without it', () => {
    const data = { call: 'call_1', app: 'Claude “desktop” ✓\n', tools: ['a__b', 'c'], n: 12, yes: true, none: null, gone: undefined, '\u00f6': 'x', Z: 'y' };
    const { hash, line } = sealEvent({ v: 1, chain: 'usr_x', seq: 3, prev: GENESIS, at: '2026-01-01T00:00:00.000Z', kind: 'call', data });
    const event = JSON.parse(line);
    assert.equal(line, canonicalJson(event));
    assert.equal(hash, event.hash);
    assert.equal(eventHash(event), hash);
    assert.match(hash, /^[0-9a-f]{64}$/);
  });
});

describe('verifying an export', () => {
  const good = [...chainOf('usr_a', 9), ...chainOf('operator', 3)];

  it('counts the events and chains of an untouched export, and gives each chain’s head', () => {
    const v = verifyAuditExport(text(good));
    assert.deepEqual([v.ok, v.events, v.chains, v.problems], [true, 12, 2, []]);
    assert.equal(v.heads.usr_a!.seq, 9);
    assert.equal(v.heads.usr_a!.hash, JSON.parse(good[8]!).hash);
  });

  it('names the changed event, the missing one and the two reordered', () => {
    const changed = [...good];
    changed[6] = changed[6]!.replace('"outcome":"ok"', '"outcome":"denied"');
    assert.deepEqual(verifyAuditExport(text(changed)).problems, ['chain usr_a: event seq 7 was changed (its hash does not match)']);

    const removed = good.filter((_, i) => i !== 7);
    assert.deepEqual(verifyAuditExport(text(removed)).problems, ['chain usr_a: event seq 8 is missing']);
    const stretch = good.filter((_, i) => i < 2 || i > 5);
    assert.deepEqual(verifyAuditExport(text(stretch)).problems, ['chain usr_a: events seq 3 to 6 are missing']);
    assert.deepEqual(verifyAuditExport(text(good.slice(1))).problems, ['chain usr_a: event seq 1 is missing']);

    const reordered = [...good];
    [reordered[4], reordered[5]] = [reordered[5]!, reordered[4]!];
    assert.deepEqual(verifyAuditExport(text(reordered)).problems, ['chain usr_a: event seq 5 comes after seq 6']);
  });

  it('catches an event rewritten with a fresh hash at the next link, and a duplicate, a stranger and a forged first event', () => {
    const rewritten = [...good];
    const e = JSON.parse(rewritten[6]!);
    e.data.outcome = 'denied';
    e.hash = eventHash(e);
    rewritten[6] = canonicalJson(e);
    assert.deepEqual(verifyAuditExport(text(rewritten)).problems, ['chain usr_a: event seq 7 was changed or replaced (event seq 8 names another hash as its prev)']);

    const twice = [...good.slice(0, 4), good[3]!, ...good.slice(4)];
    assert.deepEqual(verifyAuditExport(text(twice)).problems, ['chain usr_a: event seq 4 appears twice']);

    // A chain forged from seq 1 with a prev that is not the genesis value.
    const forged = JSON.parse(chainOf('usr_b', 1)[0]!);
    forged.prev = 'f'.repeat(64);
    forged.hash = eventHash(forged);
    assert.deepEqual(verifyAuditExport(canonicalJson(forged)).problems, ['chain usr_b: event seq 1 is not the first of its chain (its prev is not the genesis value)']);

    assert.deepEqual(verifyAuditExport(text([good[0]!, 'not json', '{"chain":"usr_a"}'])).problems, ['line 2 is not JSON', 'line 3 is not an audit event (chain, seq, prev and hash)']);
    assert.deepEqual(verifyAuditExport('').problems, ['there are no audit events in it']);
  });
});
