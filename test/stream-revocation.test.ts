import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { notesManifest, startAddonServer } from './helpers/addon-server';
import { Client, newPerson } from './helpers/http';
import { startToolport, type Toolport } from './helpers/target';

/**
 * A live stream is opened with a credential and lasts as long as the client likes: it must end
 * once that credential stops holding (signed out, key revoked), not stay a window onto the
 * account. The streams check at each heartbeat (15 s; 1 s here, STREAM_HEARTBEAT_SECONDS, so the
 * test does not sleep through it); the wait below is the test's own timeout.
 */
let tp: Toolport;
before(async () => {
  tp = await startToolport({ env: { STREAM_HEARTBEAT_SECONDS: '1' } });
});
after(async () => {
  await tp?.stop();
});

/** Opens an SSE stream and returns a promise that settles when the server ends it. */
async function openStream(url: string, headers: Record<string, string>) {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal });
  assert.equal(res.status, 200, await (res.status === 200 ? Promise.resolve('') : res.text()));
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert.ok(!first.done, 'the stream opened');
  const ended = (async () => {
    for (;;) if ((await reader.read()).done) return 'ended';
  })();
  return { ended, close: () => ac.abort() };
}

const cookieOf = (client: Client) => [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

describe('live streams end with their credential', { timeout: 90_000 }, () => {
  it('the dashboard’s /api/events ends after the person signs out of that session', async () => {
    const p = await newPerson(tp.url);
    const other = await newPerson(tp.url);
    const mine = await openStream(`${tp.url}/api/events`, { cookie: cookieOf(p.client) });
    const theirs = await openStream(`${tp.url}/api/events`, { cookie: cookieOf(other.client) });
    try {
      const out = await p.client.post('/api/session/logout', {});
      assert.ok(out.status < 300, out.text);
      assert.equal(await mine.ended, 'ended');
      // Someone else's stream is not touched by it.
      const still = await Promise.race([theirs.ended, new Promise((r) => setTimeout(r, 100, 'open'))]);
      assert.equal(still, 'open');
    } finally {
      mine.close();
      theirs.close();
    }
  });

  it('an add-on’s live deliveries end after the API key they were opened with is revoked', async () => {
    const dev = await newPerson(tp.url, 'dev');
    const made = await dev.client.post('/api/keys', { name: 'dev loop' });
    assert.equal(made.status, 201, made.text);
    const api = new Client(tp.url, made.body.key);
    const addonId = `rev-${process.pid % 1000}-${Date.now() % 100000}`;
    const hook = await startAddonServer();
    after(() => hook.close());
    const created = await api.post('/api/addons', notesManifest(addonId, hook.url));
    assert.equal(created.status, 201, created.text);
    const live = await openStream(`${tp.url}/api/addons/${addonId}/deliveries/live`, { authorization: `Bearer ${made.body.key}` });
    try {
      const revoked = await dev.client.delete(`/api/keys/${made.body.id}`);
      assert.ok(revoked.status < 300, revoked.text);
      assert.equal(await live.ended, 'ended');
    } finally {
      live.close();
    }
  });
});
