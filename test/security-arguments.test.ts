import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { checkArguments, compileArguments, type ManifestArgument } from '@toolport/core';
import { startAddonServer } from './helpers/addon-server';
import { newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';
import { connect, register } from './helpers/oauth-flow';

/**
 * The arguments suite (issue #10): hostile values against the argument gate, in process and through
 * the real MCP endpoint to a real webhook. What each class of value gets is written in
 * docs/security.md ("Arguments"); this file is the proof.
 */
const ARGS: ManifestArgument[] = [
  { name: 'text', summary: 'Some text.', kind: { text: { maxLength: 8 } }, required: false },
  { name: 'count', summary: 'A count.', kind: { number: { minimum: -5, maximum: 5, whole: true } }, required: false },
  { name: 'ratio', summary: 'A share.', kind: { number: { minimum: 0, maximum: 1 } }, required: false },
  { name: 'flag', summary: 'A switch.', kind: 'boolean', required: false },
  { name: 'colour', summary: 'A colour.', kind: { choice: ['red', 'caf\u00e9', 'fi'] }, required: false },
];
const schema = compileArguments(ARGS);

/** JSON texts for values a hostile app can send, including what JSON.parse turns into something else. */
const HOSTILE_LITERALS = [
  '1e400', '-1e400', '9007199254740993', '-9007199254740993', '1e308', '5e-324', '-0', '2.0', '"3"',
  '"\\ud800"', '"a\\udc00b"', '"\\ud83d"', '"e\\u0301"', '"cafe\\u0301"', '"caf\\u00e9"', '"\\ufb01"',
  '"a\\u200bb"', '"red\\u200b"', '"\\u202eabc"', '"\\u2066x\\u2069"', '"\\ufeff"', '"\\u0000"',
  '"\\ud83d\\udc68\\u200d\\ud83d\\udc69\\u200d\\ud83d\\udc67"', 'null', 'true', '[]', '{}', '{"__proto__":{"polluted":1}}',
];
const KEYS = ['text', 'count', 'ratio', 'flag', 'colour', '__proto__', 'constructor', 'prototype', 'te\\u0078t', 'extra'];
const literalArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_LITERALS) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 10, unit: 'binary' }).map((s) => JSON.stringify(s)) },
);
/** A JSON object text for `arguments`: keys from the tool, hostile names, escapes; values as above. */
const argumentsText = fc
  .array(fc.tuple(fc.constantFrom(...KEYS), literalArb), { maxLength: 4 })
  .map((pairs) => `{${pairs.map(([k, v]) => `"${k}":${v}`).join(',')}}`);

const LONE = /\p{Surrogate}/u;
/** The contract, written plainly, for a value JSON.parse produced. */
function validFor(arg: ManifestArgument, v: unknown): boolean {
  const kind = arg.kind;
  if (kind === 'boolean') return typeof v === 'boolean';
  if ('text' in kind) return typeof v === 'string' && !LONE.test(v) && [...v.normalize('NFC')].length <= kind.text.maxLength;
  if ('choice' in kind) return typeof v === 'string' && !LONE.test(v) && kind.choice.includes(v.normalize('NFC'));
  if (typeof v !== 'number' || !Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) return false;
  const { minimum, maximum, whole } = kind.number;
  return (!whole || Number.isInteger(v)) && (minimum === undefined || v >= minimum) && (maximum === undefined || v <= maximum);
}
function oracle(text: string): boolean {
  const given = JSON.parse(text) as Record<string, unknown>;
  const keys = Object.keys(given);
  if (keys.length !== new Set(keys.map((k) => k.normalize('NFC'))).size) return false;
  return keys.every((k) => {
    const arg = ARGS.find((a) => a.name === k);
    return !!arg && validFor(arg, given[k]);
  });
}

const prototypes = [Object.prototype, Array.prototype, Function.prototype, String.prototype, Number.prototype];
const snapshot = () => prototypes.map((p) => Object.getOwnPropertyNames(p).sort().join(','));

describe('arguments: hostile values in process', () => {
  it('never throws, never changes a prototype, and agrees with the contract for hostile JSON', () => {
    const before = snapshot();
    fc.assert(
      fc.property(argumentsText, (text) => {
        const input = JSON.parse(text);
        const r = checkArguments(schema, input);
        assert.equal(r.ok, oracle(text), `${text} → ${JSON.stringify(r)}`);
        if (r.ok) {
          assert.equal(Object.getPrototypeOf(r.value), Object.prototype);
          for (const v of Object.values(r.value)) if (typeof v === 'string') assert.equal(v, v.normalize('NFC'));
        } else {
          assert.ok(r.problems.length > 0 && r.problems.every((p) => /^Argument|^Arguments|^The arguments|\.$/.test(p)), JSON.stringify(r.problems));
        }
        assert.equal(({} as Record<string, unknown>).polluted, undefined);
      }),
      { numRuns: 1000 },
    );
    assert.deepEqual(snapshot(), before);
  });

  it('answers each class of hostile text and number as docs/security.md says', () => {
    const accepted = (args: string, value: Record<string, unknown>) => {
      const r = checkArguments(schema, JSON.parse(args));
      assert.ok(r.ok, `${args}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.value, value);
    };
    const refused = (args: string, sentence: RegExp) => {
      const r = checkArguments(schema, JSON.parse(args));
      assert.ok(!r.ok, `${args} accepted`);
      assert.ok(r.problems.some((p) => sentence.test(p)), `${args}: ${JSON.stringify(r.problems)}`);
    };
    // Non-finite (1e400 parses to Infinity) and unsafe integers.
    refused('{"ratio":1e400}', /must be a finite number/);
    refused('{"count":-1e400}', /must be a finite number/);
    refused('{"count":9007199254740993}', /too large to be exact/);
    const negativeZero = checkArguments(schema, JSON.parse('{"count":-0}'));
    assert.ok(negativeZero.ok && negativeZero.value.count === 0, 'accepted; JSON sends it as 0');
    accepted('{"count":2.0}', { count: 2 });
    refused('{"count":"3"}', /must be a whole number/);
    // Lone surrogates: not text.
    refused('{"text":"\\ud800"}', /lone UTF-16 surrogate/);
    refused('{"colour":"\\udfff"}', /lone UTF-16 surrogate|must be one of/);
    // NFC: decomposed text is composed, counted composed, and matches a composed choice.
    accepted('{"text":"cafe\\u0301","colour":"cafe\\u0301"}', { text: 'caf\u00e9', colour: 'caf\u00e9' });
    accepted(`{"text":"${'e\\u0301'.repeat(8)}"}`, { text: '\u00e9'.repeat(8) });
    refused(`{"text":"${'e\\u0301'.repeat(9)}"}`, /at most 8 characters/);
    // NFC is not NFKC: a compatibility form (the ﬁ ligature) is not the letters it looks like.
    refused('{"colour":"\\ufb01"}', /must be one of/);
    // Zero-width and bidi controls are text: kept as sent, counted, and never equal to a choice
    // without them. People see them marked in the approval (test/dashboard-unicode.test.ts).
    accepted('{"text":"a\\u200bb"}', { text: 'a\u200bb' });
    accepted('{"text":"\\u202eabc"}', { text: '\u202eabc' });
    accepted('{"text":"\\u2066x\\u2069"}', { text: '\u2066x\u2069' });
    refused('{"colour":"red\\u200b"}', /must be one of/);
    refused('{"colour":"\\u202ered"}', /must be one of/);
    refused(`{"text":"${'\\u200b'.repeat(9)}"}`, /at most 8 characters/);
    // Length is in code points after NFC: a family emoji (5 code points) is 5 characters.
    accepted('{"text":"\\ud83d\\udc68\\u200d\\ud83d\\udc69\\u200d\\ud83d\\udc67"}', { text: '\u{1F468}\u200d\u{1F469}\u200d\u{1F467}' });
    // Prototype keys, however spelled in JSON.
    refused('{"__proto__":{"polluted":1}}', /never accepted as names/);
    refused('{"\\u005f_proto__":1}', /never accepted as names/);
    refused('{"constructor":{"prototype":{"polluted":1}}}', /never accepted as names/);
    // One key in two Unicode forms.
    const twoForms = checkArguments(compileArguments([{ name: 'caf\u00e9', summary: 'x', kind: 'boolean', required: false }]), JSON.parse('{"caf\\u00e9":true,"cafe\\u0301":true}'));
    assert.equal(twoForms.ok, false);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe('arguments: hostile values through the MCP endpoint', () => {
  let tp: Toolport;
  let hook: Awaited<ReturnType<typeof startAddonServer>>;
  let mcpUrl: string;
  let token: string;
  let tool: string;

  before(async () => {
    tp = await startToolport();
    hook = await startAddonServer({ probe: (b) => ({ json: { got: b.arguments } }) });
    const dev = await newPerson(tp.url, 'dev');
    const addonId = `probe-${process.pid % 1000}`;
    const created = await dev.client.post('/api/addons', {
      id: addonId, name: 'Probe', description: 'Echoes its arguments.', webhook: hook.url,
      tools: [{ name: 'probe', title: 'Probe', summary: 'Returns the arguments it was given.', arguments: ARGS }],
    });
    assert.equal(created.status, 201, created.text);
    hook.setSecret(created.body.signingSecret);
    for (const [method, path, body] of [
      ['PATCH', '/api/settings', { aiApps: true }],
      ['POST', '/api/installs', { addon: addonId }],
      ['PATCH', `/api/installs/${addonId}`, { tools: { probe: true } }],
    ] as const) assert.ok((await dev.client.request(method, path, body)).status < 300);
    const app = await register(tp.url);
    token = (await connect(tp.url, dev.client, app.client_id, dev.user.mcpUrl)).access_token;
    mcpUrl = dev.user.mcpUrl;
    tool = `${addonId}__probe`;
  });
  after(async () => {
    await hook?.close();
    await tp?.stop();
  });

  const call = async (args: string, id: number) => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":${args}}}`,
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.ok(body.result, `${args} → ${JSON.stringify(body)}`);
    return body.result as { isError?: boolean; content: Array<{ text: string }>; structuredContent?: { got: unknown } };
  };

  it('reaches the webhook only with valid arguments, exactly as checked (NFC), and refuses the rest as a tool error', async () => {
    let id = 0;
    let reached = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(argumentsText, async (text) => {
        const before = hook.calls().length;
        const result = await call(text, ++id);
        const expected = oracle(text);
        assert.equal(!result.isError, expected, `${text} → ${JSON.stringify(result)}`);
        if (expected) {
          reached++;
          assert.equal(hook.calls().length, before + 1);
          const sent = hook.calls().at(-1)!.body.arguments as Record<string, unknown>;
          // Strings arrive in NFC; -0 arrives as 0 (JSON has no negative zero on the way out).
          const want = Object.fromEntries(
            Object.entries(JSON.parse(text)).map(([k, v]) => [k, typeof v === 'string' ? v.normalize('NFC') : Object.is(v, -0) ? 0 : v]),
          );
          assert.deepEqual(sent, want);
        } else {
          refused++;
          assert.equal(hook.calls().length, before, `${text} reached the add-on`);
          assert.ok(result.content[0]!.text.length > 0);
        }
      }),
      { numRuns: 80 },
    );
    assert.ok(reached > 3 && refused > 20, `reached ${reached}, refused ${refused}`);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('answers arguments the SDK cannot read (not an object, a constructor key) as a tool error too', async () => {
    const before = hook.calls().length;
    for (const args of ['"x"', '[1]', '7', '{"constructor":""}', '{"constructor":{"prototype":{"polluted":1}}}', '{"text":"ok","__proto__":{"polluted":1}}']) {
      const result = await call(args, 1);
      assert.equal(result.isError, true, args);
      assert.match(result.content[0]!.text, /Argument|arguments/, args);
    }
    assert.equal(hook.calls().length, before);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    // null is taken as no arguments, like an absent field (this tool needs none).
    assert.deepEqual((await call('null', 2)).structuredContent, { got: {} });
  });
});
