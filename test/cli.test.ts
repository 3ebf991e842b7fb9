import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { developerKey, runToolportCli, runToolportCliHere } from './helpers/cli';
import { freePort, startToolport, type Toolport } from './helpers/target';

let tp: Toolport;
let dir: string;
let key: string;

const cli = (args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string; config?: string } = {}) =>
  runToolportCli(args, { ...opts, config: opts.config ?? path.join(dir, 'config.json') });
const here = (args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string; config?: string } = {}) =>
  runToolportCliHere(args, { ...opts, config: opts.config ?? path.join(dir, 'config.json') });

before(async () => {
  tp = await startToolport();
  dir = mkdtempSync(path.join(os.tmpdir(), 'toolport-cli-'));
  key = await developerKey(tp.url, 'cli-dev');
});
after(async () => {
  await tp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('toolport login', () => {
  it('stores a key Toolport accepts, with mode 0600, from --key or from stdin', async () => {
    const config = path.join(dir, 'login-1', 'config.json');
    const run = await cli(['login', '--url', tp.url, '--key', key], { config });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Logged in to/);
    assert.deepEqual(JSON.parse(readFileSync(config, 'utf8')), { url: tp.url, key });
    assert.equal(statSync(config).mode & 0o777, 0o600);

    const config2 = path.join(dir, 'login-2.json');
    const piped = await cli(['login', '--url', `${tp.url}/`, '--json'], { config: config2, stdin: `${key}\n` });
    assert.equal(piped.code, 0, piped.stderr);
    assert.deepEqual(piped.json, { url: tp.url, configPath: config2 });
    assert.equal(JSON.parse(readFileSync(config2, 'utf8')).key, key);
  });

  it('refuses a wrong key (3), a non-key (1), an unreachable server (4) and stores nothing', async () => {
    const config = path.join(dir, 'refused.json');
    const downUrl = `http://127.0.0.1:${await freePort()}`;
    const [wrong, notKey, down] = await Promise.all([
      cli(['login', '--url', tp.url, '--key', 'tpk_notarealkey'], { config }),
      here(['login', '--url', tp.url], { config, stdin: 'hunter2\n' }),
      here(['login', '--url', downUrl, '--key', key], { config }),
    ]);
    assert.equal(wrong.code, 3);
    assert.match(wrong.stderr, /API key/);
    assert.equal(notKey.code, 1);
    assert.match(notKey.stderr, /tpk_/);
    assert.equal(down.code, 4);
    assert.match(down.stderr, /Could not reach Toolport/);
    assert.equal(existsSync(config), false);
  });

  it('logs out by forgetting the stored key; API commands then need a login again', async () => {
    const config = path.join(dir, 'logout', 'config.json');
    assert.equal((await cli(['login', '--url', tp.url, '--key', key], { config })).code, 0);
    assert.equal((await here(['addon', 'deliveries', 'nosuch'], { config })).code, 1, 'logged in: the add-on does not exist');
    const out = await here(['logout', '--json'], { config });
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(out.json, { configPath: config, removed: true });
    assert.equal(existsSync(config), false);
    const after = await here(['addon', 'deliveries', 'nosuch'], { config });
    assert.equal(after.code, 3);
    assert.match(after.stderr, /Not logged in/);
    const again = await here(['logout'], { config, env: { TOOLPORT_API_KEY: key } });
    assert.equal(again.code, 0);
    assert.match(again.stdout, /Not logged in here/);
    assert.match(again.stdout, /TOOLPORT_API_KEY is set/);
  });

  it('needs a login for API commands (3), and TOOLPORT_URL/TOOLPORT_API_KEY stand in for one', async () => {
    const [none, viaEnv] = await Promise.all([
      cli(['addon', 'deliveries', 'notes'], { config: path.join(dir, 'none.json') }),
      here(['addon', 'rotate-secret', 'nosuch', '--json'], { config: path.join(dir, 'none.json'), env: { TOOLPORT_URL: tp.url, TOOLPORT_API_KEY: key } }),
    ]);
    assert.equal(none.code, 3);
    assert.match(none.stderr, /Not logged in/);
    assert.equal(viaEnv.code, 1, 'authenticated, and the add-on does not exist');
    assert.equal(viaEnv.json.error.status, 404);
  });
});
