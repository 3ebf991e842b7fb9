// Issue #42, "artifacts": an add-on returns files with its answer (`artifacts`: name, media type,
// base64 bytes); Toolport keeps them a stated time and links them in the result, and only the app
// that made the call reads them back (resources/read). A text answer over the inline limit gets a
// preview and the whole text as a file. Through the SDK clients v1 and v2 (2026-07-28), and on
// services through the BullMQ worker, which keeps the files before the outcome travels back.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { personWithNotes, startAddonServer } from './helpers/addon-server';
import { connectApp } from './helpers/mcp';
import { connectAppV2 } from './helpers/mcp-v2';
import { png } from './helpers/png';
import { startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let hook: Awaited<ReturnType<typeof startAddonServer>>;

const CSV = 'month,notes\nNovember,12\nDecember,3\n';
const CHART = png(8, 8);
const LONG = `${'A long report line.\n'.repeat(6_000)}The end.`;
const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64');

/** What the add-on answers, by the query of the call. */
const answers: Record<string, unknown> = {
  files: {
    text: 'The report is ready.',
    artifacts: [
      { name: 'report.csv', mediaType: 'text/csv; charset=utf-8', data: b64(CSV) },
      { name: 'chart.png', mediaType: 'image/png', data: b64(CHART) },
    ],
  },
  long: { text: LONG },
  'long-and-files': { text: LONG, artifacts: [{ name: 'report.csv', mediaType: 'text/csv', data: b64(CSV) }] },
  lying: {
    json: { rows: 2 },
    artifacts: [
      { name: 'photo.png', mediaType: 'image/png', data: b64('<script>alert(1)</script>') },
      { name: 'notes.txt', mediaType: 'text/plain', data: b64('kept') },
      { name: 'page.svg', mediaType: 'image/svg+xml', data: b64('<svg/>') },
    ],
  },
  huge: { text: 'too big', artifacts: [{ name: 'big.bin', mediaType: 'application/octet-stream', data: 'A'.repeat(6 * 1024 * 1024) }] },
  malformed: { text: 'x', artifacts: [{ name: '../etc/passwd', mediaType: 'text/plain', data: b64('x') }] },
};

before(async () => {
  tp = await startToolport();
  hook = await startAddonServer({ search_notes: (body) => answers[body.arguments.query] ?? { text: 'none found' } });
});
after(async () => {
  await hook?.close();
  await tp?.stop();
});

type Block = { type: string; text?: string; uri?: string; name?: string; mimeType?: string; size?: number; description?: string };
const blocks = (r: any) => r.content as Block[];
const linkNamed = (r: any, name: string) => {
  const link = blocks(r).find((b) => b.type === 'resource_link' && b.name === name);
  assert.ok(link, `a resource link to ${name} in ${JSON.stringify(r.content).slice(0, 400)}`);
  return link;
};

describe('files an add-on returns', () => {
  it('are linked in the result and read back by the app that made the call, byte for byte, until they expire (SDK v1)', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'art');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const r = await client.callTool({ name, arguments: { query: 'files' } });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(blocks(r)[0]!.text, 'The report is ready.');
      const csv = linkNamed(r, 'report.csv');
      assert.equal(csv.mimeType, 'text/csv');
      assert.equal(csv.size, Buffer.byteLength(CSV));
      assert.match(csv.uri!, /^toolport:\/\/artifacts\/art_[\w-]{22}\/report\.csv$/);
      assert.match(csv.description!, /kept by Toolport until \d{4}-\d\d-\d\dT/);

      const readCsv = await client.readResource({ uri: csv.uri! });
      assert.deepEqual(readCsv.contents, [{ uri: csv.uri, mimeType: 'text/csv', text: CSV }]);
      const chart = await client.readResource({ uri: linkNamed(r, 'chart.png').uri! });
      assert.equal(chart.contents[0]!.mimeType, 'image/png');
      assert.ok(Buffer.from((chart.contents[0] as { blob: string }).blob, 'base64').equals(CHART));

      // A day and an hour later (files are kept 24 hours).
      const realClock = tp.svc.clock;
      tp.svc.clock = { now: () => new Date(Date.now() + 25 * 3_600_000) };
      try {
        await assert.rejects(client.readResource({ uri: csv.uri! }), /The file "report\.csv" expired at .* \(files are kept 24 hours\); call the tool again/);
      } finally {
        tp.svc.clock = realClock;
      }
    } finally {
      await client.close();
    }
  });

  it('are refused to another app of the same person and to another person (SDK v2)', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'art-own');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Cursor' });
    const { client: otherApp } = await connectAppV2(person.user.mcpUrl, person.client, { name: 'Claude' });
    const stranger = await personWithNotes(tp.url, hook, { search_notes: true }, 'art-stranger');
    const { client: strangersApp } = await connectApp(stranger.user.mcpUrl, stranger.client, { name: 'Claude' });
    try {
      const r = await client.callTool({ name, arguments: { query: 'files' } });
      const uri = linkNamed(r, 'report.csv').uri!;
      assert.equal(((await client.readResource({ uri })).contents[0] as { text: string }).text, CSV, 'its own app reads it on 2026-07-28');
      // 2026-07-28 says Invalid params (SEP-2164); 2025-11-25 its resources' -32002.
      for (const [other, code] of [[otherApp, -32602], [strangersApp, -32002]] as const) {
        await assert.rejects(other.readResource({ uri }), (err: Error & { code?: number; data?: unknown }) => {
          assert.equal(err.code, code);
          assert.deepEqual(err.data, { uri });
          assert.match(err.message, /There is no file at this URI for this app/);
          return true;
        });
      }
      await assert.rejects(client.readResource({ uri: 'toolport://artifacts/art_nothing-here/x' }), /There is no file at this URI/);

    } finally {
      await client.close();
      await otherApp.close();
      await strangersApp.close();
    }
  });

  it('a text answer over 64 KB: a preview with the limit stated, and the whole text as a file', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'art-long');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const r = await client.callTool({ name, arguments: { query: 'long' } });
      assert.equal(r.isError, undefined, JSON.stringify(r).slice(0, 400));
      const said = blocks(r)[0]!.text!;
      assert.match(said, /^The result is 117 KB, more than the 64 KB an answer may hold inline, so only its first 2,000 characters follow; the whole text is in the file "result\.txt" linked below\.\n\nA long report line\./);
      assert.ok(said.length < 2_300, 'only a preview inline');
      const whole = await client.readResource({ uri: linkNamed(r, 'result.txt').uri! });
      assert.equal((whole.contents[0] as { text: string }).text, LONG);

      // With files of its own too: the whole text and each file, all linked.
      const both = await client.callTool({ name, arguments: { query: 'long-and-files' } });
      assert.equal(((await client.readResource({ uri: linkNamed(both, 'result.txt').uri! })).contents[0] as { text: string }).text, LONG);
      assert.equal(((await client.readResource({ uri: linkNamed(both, 'report.csv').uri! })).contents[0] as { text: string }).text, CSV);
    } finally {
      await client.close();
    }
  });

  it('keeps the result and the honest files when a file lies about its type or is of a type not kept, saying which', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'art-lying');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const r = await client.callTool({ name, arguments: { query: 'lying' } });
      assert.equal(r.isError, undefined);
      assert.deepEqual(r.structuredContent, { rows: 2 });
      linkNamed(r, 'notes.txt');
      assert.ok(!blocks(r).some((b) => b.name === 'photo.png' || b.name === 'page.svg'));
      const note = blocks(r).find((b) => b.text?.startsWith('Files the add-on returned that Toolport did not keep'))?.text ?? '';
      assert.match(note, /The file "photo\.png" says it is image\/png, but it is not a PNG image\./);
      assert.match(note, /The file "page\.svg" is image\/svg\+xml, a type Toolport does not keep/);
    } finally {
      await client.close();
    }
  });

  it('refuses an answer past the size Toolport reads, and a malformed file list, with a clear sentence', async () => {
    const person = await personWithNotes(tp.url, hook, { search_notes: true }, 'art-huge');
    const name = `${person.addonId}__search_notes`;
    const { client } = await connectApp(person.user.mcpUrl, person.client, { name: 'Claude' });
    try {
      const huge = await client.callTool({ name, arguments: { query: 'huge' } });
      assert.equal(huge.isError, true);
      assert.match(blocks(huge)[0]!.text!, /larger than Toolport takes \(64 KB inline, and 4 MB of files/);
      const bad = await client.callTool({ name, arguments: { query: 'malformed' } });
      assert.equal(bad.isError, true);
      assert.match(blocks(bad)[0]!.text!, /could not/);
    } finally {
      await client.close();
    }
  });
});
