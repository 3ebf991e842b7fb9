import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import { AddOnError, defineAddon, serveNode, text, tool, type AddonManifest } from '@toolport/addon-kit';
import { spawnToolport } from './helpers/process';
import { developerKey, installPacked, outsideTheRepository, runToolportCli, startToolportCli, type CliProcess } from './helpers/cli';
import { installFor, listPublicly, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { createBacking, freePort, startToolport, TARGET, type Backing, type Toolport } from './helpers/target';

// `toolport dev` against a real Toolport, with a real add-on made with the kit behind the webhook:
// it pushes, pushes again on each save, refuses to push a broken manifest, and streams deliveries.

/** A kit add-on with a tool that answers and one whose code throws; its secret is set once known. */
async function startKitAddon(id: string) {
  let secrets: string[] = [];
  const addon = defineAddon({
    id,
    name: 'Dev loop',
    description: 'Echoes and explodes, for the dev loop test.',
    webhook: 'http://127.0.0.1:1/webhook',
    tools: {
      echo: tool({
        title: 'Echo',
        summary: 'Answers with the text it is given, unchanged, for the test.',
        readOnly: true,
        arguments: { text: text({ maxLength: 200, summary: 'The text to answer with.' }) },
        run: ({ text: said }) => `echo: ${said}`,
      }),
      refuse: tool({
        title: 'Refuse',
        summary: 'Refuses every call with a sentence and returns nothing, for the test.',
        readOnly: true,
        arguments: {},
        run: () => {
          throw new AddOnError('Not today: this tool refuses, for the test.');
        },
      }),
      explode: tool({
        title: 'Explode',
        summary: 'Throws an exception every time it runs, for the test.',
        readOnly: true,
        arguments: {},
        run: () => {
          throw new Error('kaboom (stays in the add-on)');
        },
      }),
    },
  });
  const server: Server = await serveNode(addon.handler({ secrets: () => secrets, onError: () => {} }), await freePort(), '127.0.0.1');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook`;
  const full = addon.manifest({ webhook: url });
  return {
    url,
    full,
    /** The manifest with only the echo tool: the first version, before a tool is added. */
    first: { ...full, tools: full.tools.filter((t) => t.name === 'echo') } as AddonManifest,
    setSecret: (s: string) => (secrets = [s]),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Saves as editors do that write a temporary file and rename it over the manifest. */
function saveByRename(file: string, content: string) {
  const tmp = `${file}.swp`;
  writeFileSync(tmp, content);
  renameSync(tmp, file);
}

const json = (m: unknown) => `${JSON.stringify(m, null, 2)}\n`;

async function checkScript(baseUrl: string, key: string, id: string, steps: unknown[]) {
  const res = await fetch(`${baseUrl}/api/addons/${id}/check`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(steps),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

const procs: ChildProcess[] = [];
const killAll = () => {
  for (const p of procs.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
};
after(killAll);

/** Starts `toolport dev` in `cwd`; it is killed after its test if the test leaves it running. */
async function startDev(cwd: string, args: string[], env: Record<string, string>, entry?: string): Promise<CliProcess> {
  const dev = await startToolportCli(['dev', ...args], { config: path.join(cwd, 'config.json'), env, cwd, ...(entry ? { entry } : {}) });
  procs.push(dev.child);
  return dev;
}

describe('toolport dev', () => {
  let tp: Toolport;
  let kit: Awaited<ReturnType<typeof startKitAddon>>;
  let key: string;
  let otherKey: string;
  let dir: string;
  const id = 'dev-loop';

  before(async () => {
    tp = await startToolport();
    [key, otherKey] = await Promise.all([developerKey(tp.url, 'dev'), developerKey(tp.url, 'dev-other')]);
    kit = await startKitAddon(id);
    // A space in the folder: paths are resolved against where the command runs and printed whole.
    dir = mkdtempSync(path.join(os.tmpdir(), 'toolport dev '));
  });
  // A failed test's `toolport dev` would hold its stream into the next test.
  afterEach(killAll);
  after(async () => {
    await kit?.close();
    await tp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates the add-on, pushes each changed save, pushes nothing broken, streams deliveries, stops on Ctrl-C', async () => {
    const file = path.join(dir, 'addon.json');
    writeFileSync(file, json(kit.first));
    const env = { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key };
    const dev = await startDev(dir, ['addon.json'], env);

    await dev.waitFor(new RegExp(`^Watching ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
    await dev.waitFor(new RegExp(`^Created add-on ${id}\\.`));
    await dev.waitFor(/DEV_LOOP_SECRET/);
    const secret = (await dev.waitFor(/^ {2}whsec_/)).trim();
    kit.setSecret(secret);
    await dev.waitFor(new RegExp(`^Streaming deliveries of ${id} live\\.`));

    // A tool added, saved by rename: a new version.
    saveByRename(file, json(kit.full));
    await dev.waitFor(new RegExp(`^Updated add-on ${id} to version 2\\.`));

    // The same manifest laid out differently: nothing to push.
    saveByRename(file, JSON.stringify(kit.full));
    await dev.waitFor(/saved without changes; nothing pushed\./);

    // A broken manifest: its errors, with their paths, and nothing pushed.
    const broken = { ...kit.full, tools: [...kit.full.tools, { ...kit.full.tools[0]!, name: 'Not A Name' }] };
    writeFileSync(file, json(broken));
    await dev.waitFor(new RegExp(`^error /tools/${kit.full.tools.length}/name: `));
    await dev.waitFor(/1 error.*Nothing pushed/);
    const versions = await fetch(`${tp.url}/api/addons/${id}/versions`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json());
    assert.deepEqual(versions.map((v: { version: number }) => v.version), [2, 1], 'the broken save made no version');

    // Calls through a check script: one line per delivery with tool, arguments, outcome and latency.
    const long = '😀'.repeat(150);
    const steps = [{ tool: 'echo', arguments: { text: 'héllo dev ✓' } }, { tool: 'echo', arguments: { text: long } }, { tool: 'refuse' }, { tool: 'explode' }];
    const report = await checkScript(tp.url, key, id, steps);
    assert.equal(report.tools.length, 4, JSON.stringify(report));
    const echoed = await dev.waitFor(/ echo {2}/);
    assert.match(echoed, /^\d\d:\d\d:\d\d\.\d{3} {2}echo {2}\{"text":"héllo dev ✓"\} {2}ok {2}HTTP 200 {2}\d+ ms {2}attempt 1$/);
    // Long arguments are cut, at a character, never inside one.
    const cutLine = await dev.waitFor(/ echo {2}/);
    assert.match(cutLine, /echo {2}\{"text":"(😀)+… {2}ok {2}HTTP 200 /);
    assert.ok(cutLine.length < JSON.stringify({ text: long }).length, 'the arguments are cut');
    assert.ok(!cutLine.includes('\uFFFD'), 'no character was cut in half');
    assert.match(await dev.waitFor(/ refuse {2}/), /refuse {2}\{\} {2}refused {2}HTTP 200 {2}\d+ ms {2}attempt 1 {2}Not today: this tool refuses, for the test\.$/);
    const exploded = await dev.waitFor(/ explode {2}/);
    assert.match(exploded, /explode {2}\{\} {2}addon_failed {2}HTTP 200 {2}\d+ ms {2}attempt 1 {2}.*The add-on failed; try again later”\. Its own logs have the details\./);
    assert.doesNotMatch(dev.stdout(), /kaboom/, "the exception's own text stays in the add-on");
    assert.doesNotMatch(dev.stdout(), /v1,/, 'no signature is shown');

    // The delivery log says the same: a kit-side exception is not "HTTP 200 ok".
    const log = await runToolportCli(['addon', 'deliveries', id, '--limit', '3'], { config: path.join(dir, 'config.json'), env });
    assert.equal(log.code, 0, log.stderr);
    const [failed, refused, answered] = log.stdout.split('\n').filter((l) => /^\d{4}-/.test(l));
    assert.match(failed!, /HTTP 200 addon_failed/);
    assert.match(refused!, /HTTP 200 refused/);
    assert.match(log.stdout, /^ {4}Not today: this tool refuses/m);
    assert.match(answered!, /HTTP 200 ok/);

    dev.child.kill('SIGINT');
    assert.equal(await dev.exited, 0, dev.stderr());
    assert.match(dev.stdout(), /^Stopped\.$/m);
  });

  it('--json prints one JSON object per event', async () => {
    const sub = mkdtempSync(path.join(dir, 'json '));
    const file = path.join(sub, 'addon.json');
    writeFileSync(file, json(kit.full));
    const dev = await startDev(sub, ['addon.json', '--json'], { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key });
    await dev.waitFor(/"event":"stream","state":"open"/);
    await checkScript(tp.url, key, id, [{ tool: 'echo', arguments: { text: 'as json' } }]);
    await dev.waitFor(/"event":"delivery"/);
    dev.child.kill('SIGINT');
    assert.equal(await dev.exited, 0, dev.stderr());
    const events = dev.stdout().trim().split('\n').map((line) => JSON.parse(line));
    assert.deepEqual(events[0], { event: 'watching', file });
    // The first test published this very manifest as version 2: nothing is pushed again.
    assert.ok(events.some((e) => e.event === 'unchanged' && e.id === id && e.version === 2 && e.ownInstall?.status === 'not_installed'), JSON.stringify(events));
    assert.ok(!events.some((e) => e.event === 'pushed'), JSON.stringify(events));
    const delivery = events.find((e) => e.event === 'delivery');
    assert.equal(delivery.tool, 'echo');
    assert.equal(delivery.arguments, '{"text":"as json"}');
    assert.equal(delivery.outcome, 'result');
    assert.equal(delivery.status, 200);
    assert.equal(delivery.errorClass, null);
    assert.equal(typeof delivery.latencyMs, 'number');
    assert.match(delivery.subject, /^usr_check_/);
    assert.equal(events.at(-1).event, 'stopped');
  });

  it('refuses a bad key and an unreachable server at start, with their exit codes', async () => {
    const file = path.join(dir, 'addon.json');
    const config = path.join(dir, 'config.json');
    const [badKey, unreachable] = await Promise.all([
      runToolportCli(['dev', file], { config, env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: 'tpk_not-a-real-key' } }),
      runToolportCli(['dev', file], { config, env: { TOOLPORT_URL: `http://127.0.0.1:${await freePort()}`, TOOLPORT_API_KEY: key } }),
    ]);
    assert.equal(badKey.code, 3, badKey.stdout + badKey.stderr);
    assert.match(badKey.stderr, /API key/);
    assert.equal(unreachable.code, 4, unreachable.stdout + unreachable.stderr);
    assert.match(unreachable.stderr, /Could not reach Toolport/);
  });

  it('streams only the owner\'s add-on, and a bounded number per developer', async () => {
    const open = async (k: string) => {
      const ac = new AbortController();
      const res = await fetch(`${tp.url}/api/addons/${id}/deliveries/live`, { headers: { authorization: `Bearer ${k}` }, signal: ac.signal });
      return { res, close: () => ac.abort() };
    };
    const theirs = await open(otherKey);
    assert.equal(theirs.res.status, 404);
    assert.equal((await theirs.res.json()).code, 'NOT_FOUND');

    const streams = [];
    try {
      let over;
      while (streams.length < 100) {
        const s = await open(key);
        if (s.res.status !== 200) {
          over = s;
          break;
        }
        assert.match(s.res.headers.get('content-type') ?? '', /^text\/event-stream/);
        streams.push(s);
      }
      assert.equal(over?.res.status, 429, `${streams.length} streams opened, none refused`);
      const bound = /At most (\d+) live delivery streams/.exec((await over!.res.json()).detail);
      assert.ok(bound, 'the 429 says the bound');
      assert.equal(streams.length, Number(bound[1]));
      assert.ok(Number(over!.res.headers.get('retry-after')) > 0);
    } finally {
      for (const s of streams) s.close();
    }
    // Closed streams give their places back.
    let again;
    for (let i = 0; i < 100; i++) {
      again = await open(key);
      if (again.res.status === 200) break;
      again.close();
      await sleep(50);
    }
    assert.equal(again!.res.status, 200);
    again!.close();
  });
});

/** An add-on made with the kit as a developer writes one: addon.json rewritten at each start. */
const diaryAddon = (id: string, port: number) => `
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { defineAddon, serveNode, text, tool } from '@toolport/addon-kit';

const addon = defineAddon({
  id: '${id}', name: 'Diary', description: 'Plans meetings, for the dev loop test.', visibility: 'public',
  webhook: 'http://127.0.0.1:${port}/webhook',
  tools: {
    plan: tool({
      title: 'Plan a meeting', summary: 'Plans a meeting and returns what it was given.', readOnly: true,
      arguments: {},
      run: (args) => 'planned with ' + JSON.stringify(args),
    }),
  },
});
writeFileSync('addon.json', JSON.stringify(addon.manifest(), null, 2) + '\\n');
// The secret \`toolport dev\` printed, once it has: read at each delivery.
const secrets = () => (existsSync('secret.txt') ? [readFileSync('secret.txt', 'utf8').trim()] : []);
await serveNode(addon.handler({ secrets }), ${port}, '127.0.0.1');
`;

const textOf = (r: unknown) => ((r as { content: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join(' ');

// Issue #43: the developer's own install follows what `toolport dev` pushes, a refused call shows in
// its stream, and an unchanged manifest is not published again; run from a fresh folder, with the
// packed CLI and kit, the add-on under `node --watch` as docs/addons.md says.
describe('the dev loop from a fresh folder', { skip: TARGET === 'services' ? 'the same verbs and SQL as the embedded pass, which runs it' : false }, () => {
  let tp: Toolport;
  let dir: string;
  let addonProcess: ChildProcess | undefined;
  before(async () => {
    tp = await startToolport();
    dir = mkdtempSync(path.join(os.tmpdir(), 'toolport dev loop '));
  });
  after(async () => {
    addonProcess?.kill();
    await tp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("follows the developer's own install, and only theirs, shows refused calls, and pushes only a changed manifest", { timeout: 600_000 }, async () => {
    const cli = await installPacked(dir);
    const id = 'diary';
    const port = await freePort();
    const source = path.join(dir, 'addon.mjs');
    writeFileSync(source, diaryAddon(id, port));
    const isUp = () => fetch(`http://127.0.0.1:${port}/webhook`, { method: 'POST' }).then((r) => r.status === 401, () => false);
    let addonErr = '';
    const until = async (what: string, ok: () => Promise<boolean>) => {
      for (let i = 0; !(await ok()); i++) {
        assert.ok(i < 1200, `${what} did not happen: ${addonErr}`);
        await sleep(50);
      }
    };
    // As docs/addons.md says: `node --watch` starts the add-on again on each save, which rewrites addon.json.
    addonProcess = spawn(process.execPath, ['--watch', 'addon.mjs'], { cwd: dir, env: outsideTheRepository(), stdio: ['ignore', 'ignore', 'pipe'] });
    procs.push(addonProcess);
    addonProcess.stderr!.setEncoding('utf8').on('data', (t: string) => (addonErr += t));
    // Under --watch a crashed add-on leaves node waiting for a save: its error says so at once.
    await until('the add-on listening', async () => (await isUp()) || (assert.doesNotMatch(addonErr, /Error/), false));

    const developer = await newPerson(tp.url, 'diary-dev');
    const key = await developer.client.post('/api/keys', { name: 'laptop' });
    assert.equal(key.status, 201, key.text);
    const env = { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key.body.key as string };
    const versions = async () =>
      (await developer.client.get(`/api/addons/${id}/versions`)).body.map((v: { version: number }) => v.version);

    let dev = await startDev(dir, ['addon.json'], env, cli);
    await dev.waitFor(/^Created add-on diary\./);
    writeFileSync(path.join(dir, 'secret.txt'), (await dev.waitFor(/^ {2}whsec_/)).trim());
    assert.match(await dev.waitFor(/^You have not installed diary yourself/), new RegExp(`install it at ${tp.url}/addons/diary, and your install follows each push`));
    await dev.waitFor(/^Streaming deliveries of diary live\./);

    // The developer and another person each install it and switch the tool on, and each connects an app.
    await listPublicly(tp.url, id, developer);
    const other = await newPerson(tp.url, 'diary-user');
    await installFor(developer, id, { plan: true });
    await installFor(other, id, { plan: true });
    const mine = (await connectApp(developer.user.mcpUrl, developer.client, { name: 'My editor' })).client;
    const theirs = (await connectApp(other.user.mcpUrl, other.client, { name: 'Their editor' })).client;
    try {
      // The other person's refused call is not the developer's to see; their own is, with its sentence.
      const refusedTheirs = await theirs.callTool({ name: 'diary__plan', arguments: { starts: 'their call' } });
      assert.equal(refusedTheirs.isError, true);
      const refused = await mine.callTool({ name: 'diary__plan', arguments: { starts: '9am' } });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /Unknown argument `starts`; this tool takes no arguments\./);
      assert.match(
        await dev.waitFor(/ plan {2}/),
        /^\d\d:\d\d:\d\d\.\d{3} {2}plan {2}\{"starts":"9am"\} {2}not sent \(invalid_arguments\) {2}Unknown argument `starts`; this tool takes no arguments\.$/,
      );

      // The developer adds the argument and saves: the add-on restarts, rewrites addon.json, dev pushes.
      writeFileSync(source, readFileSync(source, 'utf8').replace('arguments: {},', "arguments: { starts: text({ maxLength: 40, summary: 'When it starts.' }) },"));
      await dev.waitFor(/^Updated add-on diary to version 2\./);
      assert.equal(await dev.waitFor(/^Your install /), 'Your install now uses version 2; your apps were told the tools changed ("plan").');
      await until('the add-on listening again', isUp);

      // The developer's own app: the new argument reaches the add-on, and the delivery is in the stream.
      const { tools } = await mine.listTools();
      assert.deepEqual(Object.keys((tools.find((t) => t.name === 'diary__plan')!.inputSchema.properties ?? {}) as object), ['starts']);
      const planned = await mine.callTool({ name: 'diary__plan', arguments: { starts: '9am' } });
      assert.notEqual(planned.isError, true, textOf(planned));
      assert.equal(textOf(planned), 'planned with {"starts":"9am"}');
      assert.match(await dev.waitFor(/ plan {2}/), / plan {2}\{"starts":"9am"\} {2}ok {2}HTTP 200 /);

      // The other person's install stays on the release they accepted until they review this one.
      const stillRefused = await theirs.callTool({ name: 'diary__plan', arguments: { starts: 'later' } });
      assert.equal(stillRefused.isError, true);
      assert.match(textOf(stillRefused), /Unknown argument `starts`; this tool takes no arguments\./);
      const theirInstall = (await other.client.get('/api/installs')).body.find((i: { addon: { id: string } }) => i.addon.id === id);
      assert.equal(theirInstall.update?.to, 2, JSON.stringify(theirInstall));
      assert.equal(theirInstall.update?.from, 1);
      assert.doesNotMatch(dev.stdout(), /their call|later/, "another person's refused calls are not in the developer's stream");

      // Ctrl-C ends the session: a release pushed after it leaves the developer's install where it is.
      dev.child.kill('SIGINT');
      assert.equal(await dev.exited, 0, dev.stderr());
      writeFileSync(source, readFileSync(source, 'utf8').replace('returns what it was given.', 'returns what it was given, word for word.'));
      await until('addon.json rewritten', async () => readFileSync(path.join(dir, 'addon.json'), 'utf8').includes('word for word'));
      const pushed = await runToolportCli(['addon', 'push', 'addon.json'], { config: path.join(dir, 'config.json'), env: { ...env }, cwd: dir, entry: cli });
      assert.equal(pushed.code, 0, pushed.stderr);
      assert.equal(pushed.stdout.trim(), 'Updated add-on diary to version 3.');
      const myInstall = async () => (await developer.client.get('/api/installs')).body.find((i: { addon: { id: string } }) => i.addon.id === id);
      assert.equal((await myInstall()).update?.to, 3, 'no dev session: the install waits for the developer to accept');

      // A second start with the manifest unchanged publishes nothing, and brings the install along.
      dev = await startDev(dir, ['addon.json'], env, cli);
      await dev.waitFor(/is version 3 of diary already; nothing pushed\.$/);
      assert.equal(await dev.waitFor(/^Your install /), 'Your install now uses version 3; your apps were told the tools changed ("plan").');
      await dev.waitFor(/^Streaming deliveries of diary live\./);
      assert.deepEqual(await versions(), [3, 2, 1]);
      assert.equal((await myInstall()).update, null);
      dev.child.kill('SIGINT');
      assert.equal(await dev.exited, 0, dev.stderr());
      assert.doesNotMatch(dev.stdout(), /^Updated add-on/m);
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
    }
  });
});

const skip = TARGET !== 'services' ? 'needs Postgres + Redis (an API process and a worker share them)' : false;

describe('toolport dev with the API and the worker in separate processes', { skip }, () => {
  let backing: Backing;
  let kit: Awaited<ReturnType<typeof startKitAddon>>;
  let dir: string;

  const spawnProcess = (role: 'api' | 'worker', publicUrl: string, port: number) => spawnToolport(procs, { env: backing.env, role, port, publicUrl });

  before(async () => {
    if (skip) return;
    backing = await createBacking();
    kit = await startKitAddon('dev-split');
    dir = mkdtempSync(path.join(os.tmpdir(), 'toolport dev split '));
  });
  after(async () => {
    await kit?.close();
    await backing?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("shows deliveries the worker made on the API process's stream, and reconnects when that process is replaced", async () => {
    const [pa, pw] = [await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${pa}`;
    let api = await spawnProcess('api', publicUrl, pa);
    await spawnProcess('worker', publicUrl, pw);
    const key = await developerKey(publicUrl, 'dev-split');

    const file = path.join(dir, 'addon.json');
    writeFileSync(file, json(kit.full));
    const dev = await startDev(dir, [file], { TOOLPORT_URL: publicUrl, TOOLPORT_API_KEY: key });
    await dev.waitFor(/^Created add-on dev-split\./);
    kit.setSecret((await dev.waitFor(/^ {2}whsec_/)).trim());
    await dev.waitFor(/^Streaming deliveries of dev-split live\./);

    await checkScript(publicUrl, key, 'dev-split', [{ tool: 'echo', arguments: { text: 'via the worker' } }, { tool: 'explode' }]);
    assert.match(await dev.waitFor(/ echo {2}/), /\{"text":"via the worker"\} {2}ok {2}HTTP 200/);
    assert.match(await dev.waitFor(/ explode {2}/), /addon_failed {2}HTTP 200 .*The add-on failed; try again later”\. Its own logs have the details\./);

    // The API process holding the stream dies; another takes its place on the same address.
    api.kill('SIGKILL');
    await dev.waitFor(/^Live stream dropped \(.+\); reconnecting in \d+ s\./);
    api = await spawnProcess('api', publicUrl, pa);
    await dev.waitFor(/^Live stream back: deliveries of dev-split again/);
    await checkScript(publicUrl, key, 'dev-split', [{ tool: 'echo', arguments: { text: 'after the restart' } }]);
    assert.match(await dev.waitFor(/ echo {2}/), /\{"text":"after the restart"\} {2}ok/);

    dev.child.kill('SIGINT');
    assert.equal(await dev.exited, 0, dev.stderr());
  });
});
