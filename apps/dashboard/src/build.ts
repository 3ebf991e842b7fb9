import { createHash } from 'node:crypto';
import { brotliCompressSync, constants as zlib } from 'node:zlib';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { dashboardDir, distDir } from './index';

export interface BuildResult {
  outDir: string;
  script: string;
  style: string;
  ms: number;
}

/**
 * Bundles the dashboard into `dist/`: hashed JS and CSS under `assets/`, an `index.html` that names
 * them (no inline script, so the CSP can say script-src 'self'), and an unhashed `sw.js` because a
 * service worker's URL must stay stable. Builds into a temporary directory and swaps it in, so a
 * running server never sees half a build.
 */
export async function buildDashboard({ outDir = distDir, minify = true } = {}): Promise<BuildResult> {
  const started = Date.now();
  const tmp = `${outDir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  try {
    const app = await esbuild.build({
      entryPoints: { app: path.join(dashboardDir, 'src/app/main.ts') },
      bundle: true,
      format: 'esm',
      target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
      minify,
      sourcemap: 'linked',
      outdir: path.join(tmp, 'assets'),
      entryNames: '[name]-[hash]',
      chunkNames: 'chunk-[hash]',
      assetNames: '[name]-[hash]',
      // Unicode's confusables data is its own chunk, loaded only when a name mixes scripts.
      splitting: true,
      metafile: true,
      logLevel: 'silent',
      legalComments: 'none',
    });
    await esbuild.build({
      entryPoints: [path.join(dashboardDir, 'src/sw/sw.ts')],
      bundle: true,
      format: 'iife',
      target: ['es2020'],
      minify,
      outfile: path.join(tmp, 'sw.js'),
      logLevel: 'silent',
    });
    const outputs = Object.keys(app.metafile.outputs).map((p) => path.basename(p));
    const script = outputs.find((f) => /^app-.*\.js$/.test(f));
    const style = outputs.find((f) => /^app-.*\.css$/.test(f));
    if (!script || !style) throw new Error(`dashboard build is missing its outputs: ${outputs.join(', ')}`);

    const template = readFileSync(path.join(dashboardDir, 'src/index.html'), 'utf8');
    writeFileSync(
      path.join(tmp, 'index.html'),
      template.replace('%STYLE%', `/assets/${style}`).replace('%SCRIPT%', `/assets/${script}`),
    );
    cpSync(path.join(dashboardDir, 'public'), tmp, { recursive: true });
    // Precompressed copies for the API to send to browsers that accept brotli (no work per request).
    for (const f of outputs.filter((o) => /\.(js|css)$/.test(o))) {
      const p = path.join(tmp, 'assets', f);
      writeFileSync(`${p}.br`, brotliCompressSync(readFileSync(p), { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
    }
    writeFileSync(path.join(tmp, 'build.json'), JSON.stringify({ script, style, sourceHash: sourceHash() }));

    const old = `${outDir}.old-${process.pid}-${Date.now()}`;
    if (existsSync(outDir)) renameSync(outDir, old);
    renameSync(tmp, outDir);
    rmSync(old, { recursive: true, force: true });
    return { outDir, script, style, ms: Date.now() - started };
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** A digest of the sources, so a build can be skipped when nothing changed. */
export function sourceHash(): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSorted(dir)) {
      const p = path.join(dir, name);
      if (isDir(p)) walk(p);
      else h.update(p.slice(dashboardDir.length)).update(readFileSync(p));
    }
  };
  walk(path.join(dashboardDir, 'src'));
  walk(path.join(dashboardDir, 'public'));
  // Bundled from core (the rule the Web Push body shares).
  h.update(readFileSync(path.join(dashboardDir, '../../packages/core/src/text/reveal.ts')));
  h.update(readFileSync(path.join(dashboardDir, 'package.json'))); // dependency versions
  return h.digest('hex').slice(0, 16);
}

/** Builds only when `dist/` is missing or older than the sources; `onBuilding` is told first. */
export async function ensureDashboardBuilt({ outDir = distDir, onBuilding }: { outDir?: string; onBuilding?: () => void } = {}): Promise<'fresh' | 'built'> {
  try {
    const meta = JSON.parse(readFileSync(path.join(outDir, 'build.json'), 'utf8')) as { sourceHash?: string };
    if (meta.sourceHash === sourceHash() && existsSync(path.join(outDir, 'index.html'))) return 'fresh';
  } catch {
    /* no build yet */
  }
  onBuilding?.();
  await buildDashboard({ outDir });
  return 'built';
}

const readdirSorted = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);
const isDir = (p: string) => statSync(p).isDirectory();

// `npm start`'s and `npm test`'s first step (`--force` builds even when up to date, `--out DIR`
// elsewhere than dist/). A first build can take a minute on a slow machine: it says so before it
// starts, so the start does not look stuck, and says when it is done.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const out = args.indexOf('--out');
  const outDir = out >= 0 && args[out + 1] ? path.resolve(args[out + 1]!) : distDir;
  const started = Date.now();
  const building = () => console.log('dashboard: building the web dashboard (the first start takes up to a minute)...');
  let result: 'fresh' | 'built' = 'built';
  if (args.includes('--force')) {
    building();
    await buildDashboard({ outDir });
  } else {
    result = await ensureDashboardBuilt({ outDir, onBuilding: building });
  }
  console.log(result === 'fresh' ? 'dashboard: up to date.' : `dashboard: built in ${Date.now() - started} ms.`);
}
