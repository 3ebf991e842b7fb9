import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installFor, newPerson } from './helpers/http';
import { connectApp } from './helpers/mcp';
import { nodeBinary, OTHER_NODES } from './helpers/node-versions';
import { freePort, startToolport, type Toolport } from './helpers/target';

// The kit and the CLI as a developer gets them: packed, installed into an empty folder outside
// the repository with `npm install --omit=dev`, and run with plain `node` (no tsx, no workspace).
const root = path.resolve(import.meta.dirname, '..');
let tmp: string;
let tarballs: { kit: string; cli: string };
/** An installed project (with a space in its path): the tarballs and nothing else. */
let project: string;
/** Node 20 (this process), 22 and 24: name → the directory holding its `node`. */
const nodes = new Map<string, string>();
let tp: Toolport;
/** Packing, npm installs and Node downloads are slow on a loaded machine: bounded, but generously. */
const SLOW = 600_000;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, never throwing: the exit code is part of what a test checks. */
function sh(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string | undefined>; input?: string; node?: string }): Promise<Ran> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...isolated(), ...opts.env })) if (v !== undefined) env[k] = v;
  // The Node release under test comes first on PATH: `npx` and the bin's `#!/usr/bin/env node` run on it.
  if (opts.node) env.PATH = `${opts.node}${path.delimiter}${env.PATH}`;
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, env, timeout: 170_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
    child.stdin!.end(opts.input ?? '');
  });
}

/** No workspace resolution, no stored login, no tsx: what a machine without the repository has. */
const isolated = () => ({
  NODE_OPTIONS: undefined,
  INIT_CWD: undefined,
  npm_lifecycle_event: undefined,
  TOOLPORT_URL: undefined,
  TOOLPORT_API_KEY: undefined,
  TOOLPORT_CONFIG: path.join(tmp, 'toolport-config.json'),
});

const npmInstall = (cwd: string) =>
  sh('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', tarballs.kit, tarballs.cli], { cwd });

const tarList = (file: string) => execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).split('\n').filter(Boolean);
const packageJsonOf = (file: string) => JSON.parse(execFileSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' }));

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'toolport-packages-'));
  const others = Promise.all(OTHER_NODES.map(async (v) => [v, path.dirname(await nodeBinary(v))] as const));
  // `npm pack` runs each package's prepack: the build from today's sources.
  const packed = await sh('npm', ['pack', '-w', '@toolport/addon-kit', '-w', '@toolport/cli', '--pack-destination', tmp, '--json'], { cwd: root });
  assert.equal(packed.code, 0, packed.stderr);
  const names = (JSON.parse(packed.stdout) as Array<{ name: string; filename: string }>).map((p) => [p.name, path.join(tmp, p.filename)]);
  tarballs = { kit: Object.fromEntries(names)['@toolport/addon-kit'], cli: Object.fromEntries(names)['@toolport/cli'] };
  project = path.join(tmp, 'my add-ons');
  mkdirSync(project);
  assert.equal((await sh('npm', ['init', '-y'], { cwd: project })).code, 0);
  const installed = await npmInstall(project);
  assert.equal(installed.code, 0, installed.stderr);
  nodes.set(process.version.slice(1), path.dirname(process.execPath));
  for (const [v, dir] of await others) nodes.set(v, dir);
  tp = await startToolport();
}, { timeout: SLOW });
after(async () => {
  await tp?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the repository', () => {
  it('installs with `npm ci` and no engine warning on Node 20, 22 and 24', { timeout: SLOW }, async () => {
    // The manifests and the lock only, as the Dockerfile's first stage copies them: npm ci checks
    // the lock against them and every locked package's engines (no download with --dry-run).
    const copy = path.join(tmp, 'repository');
    mkdirSync(copy);
    copyFileSync(path.join(root, 'package.json'), path.join(copy, 'package.json'));
    copyFileSync(path.join(root, 'package-lock.json'), path.join(copy, 'package-lock.json'));
    for (const group of ['packages', 'apps', 'examples']) {
      for (const name of readdirSync(path.join(root, group))) {
        const manifest = path.join(root, group, name, 'package.json');
        if (!existsSync(manifest)) continue;
        mkdirSync(path.join(copy, group, name), { recursive: true });
        copyFileSync(manifest, path.join(copy, group, name, 'package.json'));
      }
    }
    assert.equal(nodes.size, 3, [...nodes.keys()].join(', '));
    for (const [version, dir] of nodes) {
      const ran = await sh('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: copy, node: dir });
      assert.equal(ran.code, 0, `npm ci on node ${version}: ${ran.stderr}`);
      assert.doesNotMatch(`${ran.stdout}${ran.stderr}`, /EBADENGINE/, `npm ci on node ${version}:\n${ran.stderr}`);
    }
  });
});

describe('the packages as published', () => {
  it('are built JavaScript with declarations, with exports, bin and engines, and no tsx or workspace dependency', () => {
    const kitFiles = tarList(tarballs.kit);
    for (const f of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts', 'README.md', 'package.json']) {
      assert.ok(kitFiles.includes(`package/${f}`), `the kit's tarball holds ${f}: ${kitFiles.join(', ')}`);
    }
    const cliFiles = tarList(tarballs.cli);
    assert.ok(cliFiles.includes('package/dist/toolport.js'), cliFiles.join(', '));
    for (const f of [...kitFiles, ...cliFiles]) assert.doesNotMatch(f, /(?<!\.d)\.c?ts$|\/src\//, `${f}: no TypeScript source is shipped`);

    const kit = packageJsonOf(tarballs.kit);
    const cli = packageJsonOf(tarballs.cli);
    for (const pkg of [kit, cli]) {
      assert.notEqual(pkg.private, true, `${pkg.name} can be published`);
      assert.equal(pkg.engines?.node, '>=20.11');
      assert.equal(pkg.type, 'module');
      assert.equal(pkg.dependencies?.tsx, undefined, `${pkg.name} runs without tsx`);
      for (const dep of Object.keys(pkg.dependencies ?? {})) assert.doesNotMatch(dep, /^@toolport\//, `${pkg.name} depends on nothing unpublished`);
    }
    assert.deepEqual(kit.exports['.'].import, { types: './dist/index.d.ts', default: './dist/index.js' });
    assert.deepEqual(kit.exports['.'].require, { types: './dist/index.d.cts', default: './dist/index.cjs' });
    assert.equal(cli.bin.toolport, 'dist/toolport.js');
    // The CLI inlines core's manifest rules: it must bring the very versions of the libraries they use.
    const core = JSON.parse(readFileSync(path.join(root, 'packages/core/package.json'), 'utf8'));
    for (const [dep, version] of Object.entries(cli.dependencies as Record<string, string>)) assert.equal(version, core.dependencies[dep], `${dep} as in core`);
  });

  for (const version of ['20', ...OTHER_NODES.map((v) => v.split('.')[0]!)]) {
    it(`the kit answers a signed delivery with plain node ${version}, imported as ESM and required as CommonJS`, { timeout: SLOW }, async () => {
      const dir = [...nodes].find(([v]) => v.startsWith(`${version}.`))![1];
      const body = (kit: string, webhooks: string) => `
        const { defineAddon, text, tool } = ${kit};
        const { Webhook } = ${webhooks};
        const secret = 'whsec_' + Buffer.from('a'.repeat(32)).toString('base64');
        const addon = defineAddon({ id: 'echo', name: 'Echo', description: 'Echoes.', webhook: 'https://echo.example.com/h', tools: {
          echo: tool({ title: 'Echo', summary: 'Returns the text.', arguments: { text: text({ maxLength: 20, summary: 'Text.' }) }, run: ({ text }, ctx) => text + ' for ' + ctx.userId }),
        } });
        const payload = JSON.stringify({ type: 'tool.call', tool: 'echo', arguments: { text: 'hi' }, call: { id: 'call_1', attempt: 1, deadline: new Date(Date.now() + 5000).toISOString() }, user: { id: 'usr_1' }, app: { name: 'A', clientId: 'c' } });
        const now = new Date();
        const headers = { 'webhook-id': 'call_1', 'webhook-timestamp': String(Math.floor(now / 1000)), 'webhook-signature': new Webhook(secret).sign('call_1', now, payload) };
        addon.handler({ secrets: [secret] })(new Request('http://x/h', { method: 'POST', headers, body: payload }))
          .then(async (r) => console.log(r.status, await r.text(), addon.manifest().tools[0].name));`;
      writeFileSync(path.join(project, 'esm.mjs'), body("await import('@toolport/addon-kit')", "await import('standardwebhooks')"));
      writeFileSync(path.join(project, 'cjs.cjs'), body("require('@toolport/addon-kit')", "require('standardwebhooks')"));
      for (const file of ['esm.mjs', 'cjs.cjs']) {
        const ran = await sh(path.join(dir, 'node'), [file], { cwd: project });
        assert.equal(ran.code, 0, `${file} on node ${version}: ${ran.stderr}`);
        assert.equal(ran.stdout.trim(), '200 {"text":"hi for usr_1"} echo', `${file} on node ${version}`);
      }
    });

    it(`npx toolport runs on node ${version} from the developer's folder, with spaces in paths, and says why when it fails`, { timeout: SLOW }, async () => {
      const dir = [...nodes].find(([v]) => v.startsWith(`${version}.`))![1];
      const folder = path.join(project, 'my tools');
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, 'addon.json'), JSON.stringify({ id: 'echo', name: 'Echo', description: 'Echoes.', webhook: 'https://echo.example.com/h', tools: [{ name: 'echo', title: 'Echo', summary: 'Returns the text it is given.', arguments: [] }] }));
      writeFileSync(path.join(folder, 'broken.json'), '{"id": ');
      const npx = (...args: string[]) => sh('npx', ['--no-install', 'toolport', ...args], { cwd: project, node: dir });

      const versionOut = await npx('--version');
      assert.equal(versionOut.code, 0, versionOut.stderr);
      assert.equal(versionOut.stdout.trim(), packageJsonOf(tarballs.cli).version);
      const ok = await npx('addon', 'lint', 'my tools/addon.json');
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout.trim(), `${path.join(folder, 'addon.json')}: valid (1 tool), 0 warnings.`);

      const missing = await npx('addon', 'lint', 'my tools/nothing.json');
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, new RegExp(`Cannot read the manifest ${escape(path.join(folder, 'nothing.json'))}: there is no such file\\.`));
      const broken = await npx('addon', 'lint', 'my tools/broken.json');
      assert.equal(broken.code, 1);
      assert.match(broken.stderr, new RegExp(`${escape(path.join(folder, 'broken.json'))} is not valid JSON`));

      const unused = await freePort();
      const [notLoggedIn, wrongKey, unreachable] = await Promise.all([
        npx('addon', 'push', 'my tools/addon.json'),
        npx('login', '--url', tp.url, '--key', 'tpk_notakeyanyoneissued'),
        npx('login', '--url', `http://127.0.0.1:${unused}`, '--key', 'tpk_whatever'),
      ]);
      assert.equal(notLoggedIn.code, 3);
      assert.match(notLoggedIn.stderr, /Not logged in: run `toolport login`/);
      assert.equal(wrongKey.code, 3);
      assert.match(wrongKey.stderr, /toolport: .*\(HTTP 401; run `toolport login` with a valid tpk_ key\.\)/);
      assert.equal(unreachable.code, 4);
      assert.match(unreachable.stderr, new RegExp(`Could not reach Toolport at http://127\\.0\\.0\\.1:${unused}: ECONNREFUSED\\.`));
      assert.ok(!existsSync(isolated().TOOLPORT_CONFIG), 'no refused login is stored');
    });
  }
});

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('docs/quickstart.md, followed literally from an empty folder', () => {
  let addonProcess: ChildProcess | undefined;
  after(() => addonProcess?.kill());

  it('gets a tool answering in an app with at most 20 lines of add-on code', { timeout: SLOW }, async () => {
    const doc = readFileSync(path.join(root, 'docs/quickstart.md'), 'utf8');
    const code = /^```js\n([\s\S]*?)^```/m.exec(doc)?.[1];
    assert.ok(code, 'the quickstart has the add-on as a js block');
    assert.ok(code.trimEnd().split('\n').length <= 20, `the add-on is at most 20 lines: ${code.trimEnd().split('\n').length}`);
    // The commands this test runs are the ones the page gives.
    for (const command of [
      'mkdir dice && cd dice',
      'npm init -y',
      'npm install /tmp/toolport-addon-kit-0.1.0.tgz /tmp/toolport-cli-0.1.0.tgz',
      'node addon.mjs',
      'npx toolport login --url http://localhost:8080',
      'npx toolport addon lint addon.json',
      'npx toolport addon push addon.json',
      'DICE_SECRET=whsec_... node addon.mjs',
    ]) {
      assert.ok(doc.includes(command), `the page says: ${command}`);
    }

    const dice = path.join(tmp, 'dice');
    mkdirSync(dice);
    assert.equal((await sh('npm', ['init', '-y'], { cwd: dice })).code, 0);
    const installed = await npmInstall(dice);
    assert.equal(installed.code, 0, installed.stderr);
    writeFileSync(path.join(dice, 'addon.mjs'), code);

    const port = await freePort();
    const start = async (env: Record<string, string>) => {
      rmSync(path.join(dice, 'addon.json'), { force: true });
      const child = spawn(process.execPath, ['addon.mjs'], { cwd: dice, env: { ...process.env, ...isolated(), PORT: String(port), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      // Up once it answers on its port (it writes addon.json before it listens).
      for (let i = 0; ; i++) {
        if (child.exitCode !== null) assert.fail(`node addon.mjs exited ${child.exitCode}: ${stderr}`);
        const up = await fetch(`http://127.0.0.1:${port}/webhook`, { method: 'POST' }).then((r) => r.status, () => 0);
        if (up === 401) break;
        assert.ok(i < 600, `node addon.mjs did not listen on ${port}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return child;
    };
    addonProcess = await start({});
    assert.ok(existsSync(path.join(dice, 'addon.json')), 'addon.mjs wrote addon.json');

    const person = await newPerson(tp.url, 'quickstart');
    const key = await person.client.post('/api/keys', { name: 'laptop' });
    assert.equal(key.status, 201, key.text);
    const npx = (args: string[], input?: string) => sh('npx', ['--no-install', 'toolport', ...args], { cwd: dice, input });

    const login = await npx(['login', '--url', tp.url], `${key.body.key}\n`);
    assert.equal(login.code, 0, login.stderr);
    const lint = await npx(['addon', 'lint', 'addon.json']);
    assert.equal(lint.code, 0, lint.stdout + lint.stderr);
    const push = await npx(['addon', 'push', 'addon.json']);
    assert.equal(push.code, 0, push.stdout + push.stderr);
    assert.match(push.stdout, /Created add-on dice\./);
    assert.match(push.stdout, /as DICE_SECRET\)/);
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec(push.stdout)?.[0];
    assert.ok(secret, push.stdout);

    addonProcess.kill();
    await new Promise((r) => addonProcess!.once('exit', r));
    addonProcess = await start({ DICE_SECRET: secret });

    // Step 4: the person's own dashboard switches (tested through the dashboard elsewhere), then the app.
    await installFor(person, 'dice', { roll: true });
    const { client: app } = await connectApp(person.user.mcpUrl, person.client, { name: 'Quickstart app' });
    try {
      const { tools } = await app.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['dice__roll']);
      const result = (await app.callTool({ name: 'dice__roll', arguments: { count: 3 } })) as { isError?: boolean; content: Array<{ type: string; text?: string }> };
      assert.notEqual(result.isError, true, JSON.stringify(result));
      const rolled = JSON.parse(result.content[0]!.text!) as { faces: number[]; total: number };
      assert.equal(rolled.faces.length, 3);
      assert.ok(rolled.faces.every((f) => Number.isInteger(f) && f >= 1 && f <= 6), String(rolled.faces));
      assert.equal(rolled.total, rolled.faces.reduce((a, b) => a + b, 0));
    } finally {
      await app.close();
    }
  });
});
