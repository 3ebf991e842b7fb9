import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
// A namespace import: on a core without the table this file still runs, and fails on what it checks.
import * as core from '@toolport/core';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

/**
 * Issue #29, one closed error map: every ToolportError code has one HTTP status (core's
 * HTTP_STATUS), and every adapter answers by it; no error carries a status of its own.
 */
let tp: Toolport;
before(async () => { tp = await startToolport(); });
after(async () => { await tp?.stop(); });

const table = () => (core as { HTTP_STATUS?: Record<string, number> }).HTTP_STATUS ?? {};

describe('one closed error map', () => {
  it('answers signup sent as text/plain with 415 and a code whose status is 415', async () => {
    const res = await new Client(tp.url).request('POST', '/api/session/signup', JSON.stringify({ email: 'a@example.com', password: 'long enough pass' }), {
      'content-type': 'text/plain',
    });
    assert.equal(res.status, 415);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.equal(res.body.status, 415);
    assert.equal(res.body.detail, 'Send the body as application/json.');
    assert.equal(res.body.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.equal(table()[res.body.code], 415, 'the code maps to the status it is answered with');
  });

  it('answers every code the REST API can raise with the status of the table, in the body too', async () => {
    const anyone = new Client(tp.url);
    const { client: person, email } = await newPerson(tp.url, 'errors');
    const signupAs = (body: string, type = 'application/json') => anyone.request('POST', '/api/session/signup', body, { 'content-type': type });
    const wrongPassword = () => new Client(tp.url).post('/api/session/login', { email, password: 'not the password' });
    for (let i = 0; i < 5; i++) await wrongPassword();

    const answers = {
      MALFORMED: await signupAs('{"email":'),
      UNSUPPORTED_MEDIA_TYPE: await signupAs('email=a', 'application/x-www-form-urlencoded'),
      PAYLOAD_TOO_LARGE: await signupAs(JSON.stringify({ email: 'x@example.com', password: 'y'.repeat(300 * 1024) })),
      VALIDATION: await signupAs(JSON.stringify({ email: 'not-an-email' })),
      CONFLICT: await signupAs(JSON.stringify({ email, password: 'another long password' })),
      UNAUTHORIZED: await anyone.get('/api/me'),
      FORBIDDEN: await person.get('/api/operator/listings'),
      NOT_FOUND: await person.delete('/api/keys/key_none'),
      LIMIT_EXCEEDED: await wrongPassword(),
    };
    for (const [code, res] of Object.entries(answers)) {
      assert.equal(res.body?.code, code, `${code}: ${res.text}`);
      assert.equal(res.status, table()[code], `${code} is answered with the status of the table`);
      assert.equal(res.body.status, res.status, `${code}: the problem's status member is the response's`);
    }

    // The rest of the table, and why this test does not raise it over HTTP.
    const elsewhere: Record<string, string> = {
      BAD_REQUEST: "OAuth's errors, answered in the OAuth format (below)",
      GONE: 'raised by no route today',
      INTERNAL: 'an unexpected error is answered without its code',
      UNAVAILABLE: 'needs a database that is down (test/faults.test.ts)',
    };
    assert.deepEqual(Object.keys(table()).sort(), [...Object.keys(answers), ...Object.keys(elsewhere)].sort(), 'every code is accounted for');
    for (const status of Object.values(table())) assert.ok(Number.isInteger(status) && status >= 400 && status <= 599, String(status));
  });

  it('answers OAuth errors with the status of their code, in the OAuth format', async () => {
    const c = new Client(tp.url);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const grant = await c.request('POST', '/oauth/token', 'grant_type=password', form);
    assert.equal(grant.status, table().BAD_REQUEST);
    assert.equal(grant.body.error, 'unsupported_grant_type');
    const client = await c.request('POST', '/oauth/token', 'grant_type=authorization_code&code=x&client_id=cli_none', form);
    assert.equal(client.status, table().UNAUTHORIZED);
    assert.equal(client.body.error, 'invalid_client');
    const text = await c.request('POST', '/oauth/register', '{"redirect_uris":["https://app.example/cb"]}', { 'content-type': 'text/plain' });
    assert.equal(text.status, table().UNSUPPORTED_MEDIA_TYPE);
    assert.equal(text.body.error, 'invalid_client_metadata');
    const big = await c.request('POST', '/oauth/token', `grant_type=refresh_token&refresh_token=${'x'.repeat(17 * 1024)}`, form);
    assert.equal(big.status, table().PAYLOAD_TOO_LARGE);
    assert.equal(big.body.error, 'invalid_request');
  });
});
