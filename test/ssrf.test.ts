import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { addressRange } from '../packages/core/src/outbound/address';
import { createOutboundClient, OutboundError, type Resolver } from '../packages/core/src/outbound/http-client';
import type { OutboundClient } from '../packages/core/src/outbound/types';
import { notesManifest } from './helpers/addon-server';
import { newPerson } from './helpers/http';
import { startToolport } from './helpers/target';

// Network guard: every TCP connect in this process passes through here. Anything that is not loopback
// is refused before a syscall (so even a regression cannot send a packet off this machine), and
// every attempt is recorded so a test can prove that no connection was even tried.
const attempts: string[] = [];
const tcp = (process as unknown as { binding(name: string): { TCP: { prototype: Record<string, (...a: unknown[]) => number> } } }).binding('tcp_wrap');
for (const method of ['connect', 'connect6']) {
  const original = tcp.TCP.prototype[method]!;
  tcp.TCP.prototype[method] = function (this: unknown, req: unknown, address: unknown, port: unknown, ...rest: unknown[]) {
    attempts.push(`${address}:${port}`);
    if (!/^127\./.test(String(address)) && address !== '::1') return -13; // UV_EACCES
    return original.call(this, req, address, port, ...rest);
  };
}

const offLoopback = () => attempts.filter((a) => !a.startsWith('127.') && !a.startsWith('::1:'));

// Made-up host names; the injected resolver is the only DNS these tests use.
const zone: Record<string, Array<{ address: string; family: number }>> = {
  'internal.evil.test': [{ address: '10.0.0.1', family: 4 }],
  'metadata.evil.test': [{ address: '169.254.169.254', family: 4 }],
  'metadata6.evil.test': [{ address: 'fd00:ec2::254', family: 6 }],
  'loop.evil.test': [{ address: '127.0.0.1', family: 4 }],
  'mapped.evil.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  'cgnat.evil.test': [{ address: '100.64.0.1', family: 4 }],
  'ula.evil.test': [{ address: 'fc00::1', family: 6 }],
  'nat64.evil.test': [{ address: '64:ff9b::a9fe:a9fe', family: 6 }],
  'mixed.evil.test': [
    { address: '10.0.0.1', family: 4 },
    { address: '8.8.8.8', family: 4 },
  ],
  'public.example.test': [{ address: '8.8.8.8', family: 4 }],
  'localhost.test': [{ address: '127.0.0.1', family: 4 }],
  // The root-anchored spelling of a name is the same name to DNS.
  'internal.evil.test.': [{ address: '10.0.0.1', family: 4 }],
  'unspecified.evil.test': [{ address: '0.0.0.0', family: 4 }],
  'unspecified6.evil.test': [{ address: '::', family: 6 }],
  'mapped-hex.evil.test': [{ address: '::ffff:a9fe:a9fe', family: 6 }],
  'zone.evil.test': [{ address: 'fe80::1%eth0', family: 6 }],
  'not-an-ip.evil.test': [{ address: 'evil.example', family: 4 }],
};
// Answers a public address, then loopback: a rebinding name that changes between a check and a connect.
let flips = 0;
zone['rebind.evil.test'] = [];
Object.defineProperty(zone, 'rebind.evil.test', {
  get: () => (flips++ % 2 === 0 ? [{ address: '8.8.4.4', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]),
});
const resolved: string[] = [];
const resolve: Resolver = async (hostname) => {
  resolved.push(hostname);
  const records = zone[hostname];
  if (!records) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return records;
};

let listener: http.Server;
let port: number;
let connections = 0;
let strict: OutboundClient;
let lenient: OutboundClient;

before(async () => {
  listener = http.createServer((_q, res) => res.end('{"text":"reached"}'));
  listener.on('connection', () => connections++);
  await new Promise<void>((ok) => listener.listen(0, '127.0.0.1', ok));
  port = (listener.address() as AddressInfo).port;
  strict = createOutboundClient({ allowPrivate: false, resolve });
  lenient = createOutboundClient({ allowPrivate: true, resolve });
});
after(async () => {
  strict.close();
  lenient.close();
  listener.closeAllConnections();
  await new Promise((ok) => listener.close(ok));
});
beforeEach(() => {
  attempts.length = 0;
  resolved.length = 0;
  connections = 0;
});

const get = (client: OutboundClient, url: string) => client.request({ url, deadline: Date.now() + 2_000, maxBytes: 1024 });

async function assertBlocked(url: string) {
  await assert.rejects(get(strict, url), (e: unknown) => {
    assert.ok(e instanceof OutboundError, `${url}: ${e}`);
    assert.equal(e.errorClass, 'blocked_address', `${url}: ${e.message}`);
    return true;
  });
}

describe('SSRF: literal addresses are refused before any connection', () => {
  it('the URL parser turns every numeric spelling of 127.0.0.1 into dotted form', () => {
    for (const host of ['2130706433', '0x7f.1', '0x7f000001', '017700000001', '0177.0.0.1', '127.1', '127.0.0.1.', '127.000.000.001', '0x7F.0.0.1']) {
      assert.equal(new URL(`http://${host}:${port}/`).hostname, '127.0.0.1', host);
    }
    for (const host of ['[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', '[::FFFF:7f00:1]']) {
      assert.equal(new URL(`http://${host}:${port}/`).hostname, '[::ffff:7f00:1]', host);
    }
    assert.equal(new URL('http://0xa9fea9fe/').hostname, '169.254.169.254');
    assert.equal(new URL('http://0/').hostname, '0.0.0.0');
  });

  const spellings = [
    // loopback, every spelling
    '127.0.0.1', '2130706433', '0x7f.1', '0x7f000001', '017700000001', '0177.0.0.1', '127.1', '127.0.0.1.', '127.000.000.001', '127.255.255.254',
    // unspecified (0.0.0.0 reaches local services on Linux)
    '0.0.0.0', '0',
    // private, CGNAT, link-local and cloud metadata
    '10.0.0.1', '172.16.0.1', '192.168.1.1', '100.64.0.1', '100.127.255.254', '169.254.169.254', '0xa9fea9fe', '2852039166',
    // multicast, broadcast, reserved, documentation, benchmarking
    '224.0.0.1', '239.255.255.250', '255.255.255.255', '240.0.0.1', '192.0.2.1', '198.18.0.1', '192.0.0.1',
    // IPv6: loopback, unspecified, IPv4-mapped and -compatible, link-local, ULA, metadata, multicast
    '[::1]', '[0:0:0:0:0:0:0:1]', '[::]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', '[::ffff:10.0.0.1]',
    '[::ffff:169.254.169.254]', '[::127.0.0.1]', '[fe80::1]', '[febf::1]', '[fc00::1]', '[fd12:3456::1]', '[fd00:ec2::254]', '[ff02::1]',
    // IPv6 forms carrying a private IPv4: NAT64, 6to4, Teredo; and documentation space
    '[64:ff9b::7f00:1]', '[64:ff9b::a9fe:a9fe]', '[64:ff9b:1::1]', '[2002:7f00:1::1]', '[2002:a9fe:a9fe::]', '[2001:0:a00:1::1]', '[2001:db8::1]',
  ];

  it('refuses every spelling of loopback, private, link-local, metadata, CGNAT, multicast and mapped IPv6', async () => {
    for (const host of spellings) await assertBlocked(`http://${host}:${port}/hook`);
    for (const host of ['127.0.0.1', '[::1]', '169.254.169.254']) await assertBlocked(`https://${host}:${port}/`);
    assert.deepEqual(attempts, [], 'no connection was attempted');
    assert.equal(connections, 0, 'the local listener got nothing');
    assert.deepEqual(resolved, [], 'literal addresses never reach DNS');
  });

  it('refuses percent-encoded, full-width and other spellings the URL parser turns into a private address', async () => {
    for (const host of ['%31%32%37.0.0.1', '\uff11\uff12\uff17.0.0.1', '0x7f.0x0.0x0.0x1', '0.0.0.0.', '[::ffff:0.0.0.0]', '[0::1]', '[::0:0:1]', '[::ffff:a9fe:a9fe]', '100.100.100.200', '192.0.0.192', '[fe80::a9fe:a9fe]']) {
      await assertBlocked(`http://${host}:${port}/hook`);
    }
    // A zone id (fe80::1%eth0) is not a URL host at all.
    await assert.rejects(get(strict, `http://[fe80::1%25eth0]:${port}/`), (e: unknown) => e instanceof OutboundError && ['bad_url', 'blocked_address'].includes(e.errorClass));
    assert.deepEqual(attempts, []);
    assert.equal(connections, 0);
  });

  it('refuses the same through a POST with a body', async () => {
    await assert.rejects(
      strict.request({ url: `http://127.1:${port}/`, method: 'POST', body: '{"x":1}', deadline: Date.now() + 1_000, maxBytes: 10 }),
      (e: unknown) => e instanceof OutboundError && e.errorClass === 'blocked_address',
    );
    assert.equal(connections, 0);
  });
});

describe('SSRF: host names are checked after resolution', () => {
  it('refuses a name that resolves to a private, metadata, CGNAT, ULA, NAT64-private or mapped loopback address', async () => {
    for (const name of ['internal.evil.test', 'metadata.evil.test', 'metadata6.evil.test', 'loop.evil.test', 'mapped.evil.test', 'cgnat.evil.test', 'ula.evil.test', 'nat64.evil.test']) {
      await assertBlocked(`http://${name}:${port}/hook`);
    }
    assert.ok(resolved.includes('internal.evil.test') && resolved.includes('metadata.evil.test'), 'the injected resolver was asked');
    assert.deepEqual(attempts, []);
    assert.equal(connections, 0);
  });

  it('refuses a trailing-dot name, unspecified and hex-mapped answers, and an answer that is not an address', async () => {
    for (const name of ['internal.evil.test.', 'unspecified.evil.test', 'unspecified6.evil.test', 'mapped-hex.evil.test', 'zone.evil.test']) {
      await assertBlocked(`http://${name}:${port}/hook`);
    }
    await assert.rejects(get(strict, `http://not-an-ip.evil.test:${port}/`), (e: unknown) => e instanceof OutboundError && e.errorClass === 'dns');
    assert.deepEqual(attempts, []);
  });

  it('connects to the address it checked: a name that rebinds to loopback between lookups never reaches it', async () => {
    flips = 0;
    for (let i = 0; i < 4; i++) {
      await assert.rejects(get(strict, `http://rebind.evil.test:${port}/`), (e: unknown) => e instanceof OutboundError && ['connect', 'blocked_address'].includes(e.errorClass));
    }
    assert.ok(flips >= 2, 'the name was looked up more than once');
    assert.deepEqual(attempts.filter((a) => a.startsWith('127.')), [], 'loopback was never dialled');
    assert.equal(connections, 0);
  });

  it('refuses localhost by the system resolver, with or without a trailing dot', async () => {
    const system = createOutboundClient({ allowPrivate: false });
    try {
      for (const host of ['localhost', 'localhost.', 'LOCALHOST']) {
        await assert.rejects(
          system.request({ url: `http://${host}:${port}/`, deadline: Date.now() + 2_000, maxBytes: 10 }),
          (e: unknown) => e instanceof OutboundError && ['blocked_address', 'dns'].includes(e.errorClass),
          host,
        );
      }
    } finally {
      system.close();
    }
    assert.equal(connections, 0);
  });

  it('refuses a name when any of its addresses is private, even next to a public one', async () => {
    await assertBlocked(`http://mixed.evil.test:${port}/`);
    assert.deepEqual(attempts, []);
  });

  it('lets a global unicast address through the check (the guard above stops the actual connection)', async () => {
    await assert.rejects(get(strict, 'http://public.example.test/'), (e: unknown) => e instanceof OutboundError && e.errorClass === 'connect');
    assert.deepEqual(offLoopback(), ['8.8.8.8:80'], 'the client tried the checked address, which the test guard refused');
  });

  it('reports an unknown name as dns', async () => {
    await assert.rejects(get(strict, 'http://nowhere.test/'), (e: unknown) => e instanceof OutboundError && e.errorClass === 'dns');
    assert.deepEqual(attempts, []);
  });
});

describe('SSRF through the API: WEBHOOK_ALLOW_PRIVATE=false', () => {
  it('refuses to register an add-on whose webhook is loopback, private or metadata, with a sentence, without a request', async () => {
    const tp = await startToolport({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    try {
      const dev = await newPerson(tp.url, 'ssrf');
      for (const webhook of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`, `http://[::1]:${port}/hook`, `http://2130706433:${port}/hook`, 'http://169.254.169.254/latest/meta-data/', `http://[::ffff:7f00:1]:${port}/`]) {
        const res = await dev.client.post('/api/addons', notesManifest(`ssrf-${connections}-${Math.random().toString(36).slice(2, 8)}`, webhook));
        assert.equal(res.status, 422, `${webhook}: ${res.text}`);
        assert.equal(res.body.errors[0].path, '/webhook');
        assert.match(res.body.errors[0].message, /private, loopback, link-local or metadata address|does not resolve/, webhook);
      }
      assert.equal(connections, 0, 'the local listener got nothing');
      assert.deepEqual(offLoopback(), []);
    } finally {
      await tp.stop();
    }
  });
});

describe('allowPrivate: true (local development)', () => {
  it('reaches 127.0.0.1, by address and by name', async () => {
    for (const url of [`http://127.0.0.1:${port}/`, `http://localhost.test:${port}/`, `http://2130706433:${port}/`]) {
      const res = await get(lenient, url);
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), '{"text":"reached"}');
    }
    assert.ok(connections >= 1);
    assert.ok(attempts.every((a) => a.startsWith('127.0.0.1:')));
  });

  it('still refuses bad schemes and credentials', async () => {
    for (const url of [`ftp://127.0.0.1:${port}/`, `http://a:b@127.0.0.1:${port}/`]) {
      await assert.rejects(get(lenient, url), (e: unknown) => e instanceof OutboundError && e.errorClass === 'bad_url');
    }
  });
});

describe('addressRange', () => {
  it('allows only global unicast, checking the IPv4 inside IPv6 forms', () => {
    const global = ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2001:0:808:808::f7f7:f7f7'];
    for (const a of global) assert.equal(addressRange(a), 'unicast', a);
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '10.1.2.3': 'private',
      '169.254.169.254': 'linkLocal',
      '100.64.0.1': 'carrierGradeNat',
      '224.0.0.251': 'multicast',
      '255.255.255.255': 'broadcast',
      '0.0.0.0': 'unspecified',
      '198.18.0.1': 'reserved',
      '::1': 'loopback',
      'fe80::1%eth0': 'linkLocal',
      'fd00:ec2::254': 'uniqueLocal',
      '::ffff:192.168.0.1': 'private',
      '64:ff9b::a00:1': 'private',
      '2002:c0a8:1::1': 'private',
      '2001:0:808:808::f5ff:fffe': 'private', // Teredo client 10.0.0.1
      '::808:808': 'ipv4Compatible',
      '4000::1': 'reserved',
      'not an ip': 'invalid',
    };
    for (const [a, range] of Object.entries(refused)) assert.equal(addressRange(a), range, a);
  });
});
