import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const cache = path.join(root, 'node_modules/.cache/toolport-node');

/** The Node.js releases the packages promise to work on, beside the one running the tests. */
export const OTHER_NODES = ['22.23.3', '24.21.0'] as const;

const installing = new Map<string, Promise<string>>();

/**
 * The `node` binary of one release, from the npm registry's `node` package (the only place this
 * machine can get one), installed once into node_modules/.cache. Resolves to the binary's path.
 */
export function nodeBinary(version: string): Promise<string> {
  let p = installing.get(version);
  if (!p) {
    p = (async () => {
      const prefix = path.join(cache, version);
      const bin = path.join(prefix, 'node_modules/node/bin/node');
      if (!existsSync(bin)) {
        mkdirSync(prefix, { recursive: true });
        try {
          await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `node@${version}`], { timeout: 170_000 });
        } catch (err) {
          throw new Error(`Could not install Node.js ${version} from the npm registry (the node package): ${(err as Error).message}`);
        }
      }
      const { stdout } = await run(bin, ['--version']);
      if (stdout.trim() !== `v${version}`) throw new Error(`${bin} is ${stdout.trim()}, not v${version}`);
      return bin;
    })();
    p.catch(() => installing.delete(version));
    installing.set(version, p);
  }
  return p;
}
