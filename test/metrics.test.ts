import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createMetrics, dispatcherDepth } from '@toolport/core';
import { approvals } from '../packages/core/src/db/schema/calls';
import { newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
before(async () => { tp = await startToolport(); });
after(async () => { await tp?.stop(); });

async function scrape(headers: Record<string, string> = {}) {
  const res = await fetch(`${tp.url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The value of one series line, e.g. `toolport_approvals_pending` or `x{a="b"}`. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it('serves Prometheus text with request durations labelled by route pattern', async () => {
    const { client } = await newPerson(tp.url);
    for (let i = 0; i < 3; i++) assert.equal((await client.get('/api/me')).status, 200);
    const secretPath = `/api/no-such-${randomBytes(6).toString('hex')}`;
    assert.equal((await client.get(secretPath)).status, 404);
    assert.equal((await fetch(`${tp.url}/healthz`)).status, 200);

    const m = await scrape();
    assert.equal(m.status, 200);
    assert.match(m.type, /^text\/plain; version=0\.0\.4/);
    for (const name of [
      'toolport_http_request_duration_seconds',
      'toolport_tool_call_duration_seconds',
      'toolport_webhook_failures_total',
      'toolport_approvals_total',
      'toolport_approvals_pending',
      'toolport_queue_depth',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.match(m.text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
    }
    assert.equal(
      value(m.text, 'toolport_http_request_duration_seconds_count{route="/api/me",method="GET",status="200"}'),
      3,
    );
    assert.match(m.text, /toolport_http_request_duration_seconds_count\{route="\/healthz",method="GET",status="200"\} 1/);
    assert.match(m.text, /route="\/api\/session\/signup",method="POST",status="201"/);
    // An unmatched path is labelled by the wildcard that answered, never by the raw path.
    assert.ok(!m.text.includes(secretPath), 'raw paths never become labels');
    assert.match(m.text, /status="404"/);
  });

  it('counts pending approvals from the database', async () => {
    const { user } = await newPerson(tp.url, 'approver');
    const before = value((await scrape()).text, 'toolport_approvals_pending');
    assert.equal(before, 0);
    const now = Date.now();
    const row = (id: string, status: 'pending' | 'allowed', expiresIn: number) => ({
      id: `apr_${id}`,
      userId: user.id,
      callId: `call_${id}`,
      appName: 'Test app',
      addonId: 'notes',
      toolName: 'delete_note',
      arguments: '{"id":"n1"}',
      status,
      expiresAt: new Date(now + expiresIn),
    });
    await tp.svc.db.insert(approvals).values([
      row('metrics1', 'pending', 30_000),
      row('metrics2', 'pending', 30_000),
      row('metrics3', 'allowed', 30_000),
      // Past its expiry: the sweeper will mark it expired, it no longer waits for anyone.
      row('metrics4', 'pending', -1_000),
    ]);
    assert.equal(value((await scrape()).text, 'toolport_approvals_pending'), 2);
  });

  it('records what the call path, the dispatcher and approvals report', async () => {
    tp.svc.metrics.toolCall('notes', 'result', 0.2);
    tp.svc.metrics.toolCall('notes', 'timeout', 31);
    tp.svc.metrics.webhookFailure('notes', 'http_5xx');
    tp.svc.metrics.approval('denied');
    const { text } = await scrape();
    assert.equal(value(text, 'toolport_tool_call_duration_seconds_count{addon="notes",outcome="result"}'), 1);
    assert.equal(value(text, 'toolport_tool_call_duration_seconds_bucket{le="30",addon="notes",outcome="timeout"}'), 0);
    assert.equal(value(text, 'toolport_tool_call_duration_seconds_bucket{le="45",addon="notes",outcome="timeout"}'), 1);
    assert.equal(value(text, 'toolport_webhook_failures_total{addon="notes",error_class="http_5xx"}'), 1);
    assert.equal(value(text, 'toolport_approvals_total{outcome="denied"}'), 1);
    assert.equal(typeof value(text, 'toolport_queue_depth'), 'number');
  });

  it('does not answer through a proxy', async () => {
    assert.equal((await scrape({ 'x-forwarded-for': '203.0.113.7' })).status, 404);
    assert.equal((await scrape({ forwarded: 'for=203.0.113.7' })).status, 404);
  });

  it('keeps one registry per instance and reads the queue depth from the dispatcher if it can', async () => {
    const a = createMetrics({ queueDepth: () => 7 });
    const b = createMetrics();
    try {
      a.approval('allowed');
      assert.match(await a.render(), /toolport_approvals_total\{outcome="allowed"\} 1/);
      assert.doesNotMatch(await b.render(), /outcome="allowed"/);
      assert.equal(value(await a.render(), 'toolport_queue_depth'), 7);
      assert.equal(value(await b.render(), 'toolport_queue_depth'), 0);
      // Unknown methods are folded so a client cannot grow the label set.
      a.httpRequest('/x', 'BREW', 418, 0.01);
      assert.match(await a.render(), /route="\/x",method="OTHER",status="418"/);
    } finally {
      a.close();
      b.close();
    }
    assert.equal(await dispatcherDepth({ depth: async () => 4 }), 4);
    assert.equal(await dispatcherDepth({ dispatch() {} }), 0);
  });
});
