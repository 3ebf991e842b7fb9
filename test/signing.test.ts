import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signatureHeaders } from '../packages/core/src/outbound/signing';

const now = () => Math.floor(Date.now() / 1000);

describe('Standard Webhooks signing', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const a = newSigningSecret();
    const b = newSigningSecret();
    assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(a.slice(6), 'base64').length, 32);
    assert.notEqual(a, b);
  });

  it('signs in a way the standardwebhooks library verifies', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ type: 'tool.call', arguments: { text: 'é # Shopping\nOat milk' } });
    const headers = signatureHeaders({ id: 'call_abc', timestamp: now(), body, secrets: [secret] });
    assert.equal(headers['webhook-id'], 'call_abc');
    assert.match(headers['webhook-timestamp']!, /^\d{10}$/);
    assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+=*$/);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    // The library's own signature for the same message is the one we send.
    const ts = Number(headers['webhook-timestamp']);
    assert.equal(new Webhook(secret).sign('call_abc', new Date(ts * 1000), body), headers['webhook-signature']);
  });

  it('sends one signature per secret during a rotation; each secret verifies on its own', () => {
    const [oldSecret, newSecret] = [newSigningSecret(), newSigningSecret()];
    const body = '{"type":"tool.call"}';
    const headers = signatureHeaders({ id: 'call_rot', timestamp: now(), body, secrets: [newSecret, oldSecret] });
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    assert.ok(new Webhook(oldSecret).verify(body, headers));
    assert.ok(new Webhook(newSecret).verify(body, headers));
  });

  it('fails verification for a changed body, id, timestamp or another secret', () => {
    const secret = newSigningSecret();
    const body = '{"a":1}';
    const headers = signatureHeaders({ id: 'call_x', timestamp: now(), body, secrets: [secret] });
    assert.throws(() => new Webhook(secret).verify('{"a":2}', headers));
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'call_y' }));
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(now() - 1) }));
    assert.throws(() => new Webhook(newSigningSecret()).verify(body, headers));
  });

  it('refuses to sign without a secret or with a secret too short to be one', () => {
    assert.throws(() => signatureHeaders({ id: 'x', timestamp: now(), body: '', secrets: [] }));
    assert.throws(() => signatureHeaders({ id: 'x', timestamp: now(), body: '', secrets: ['whsec_AAAA'] }));
  });
});
