// Bundles the test files, with the sources they import, into plain JavaScript once per run.
// Loading the same graph through tsx's loader cost each test file (and each Toolport a test
// starts) a second or more of CPU; a bundle of the same sources loads in a fraction of that.
// Packages are bundled too (Node 20's loader took 0.9 CPU-s a process to find and read their
// files), except those in IMPORTED; the workspace's own packages are bundled from their
// TypeScript source, as the tests use them.
import { build, transform } from 'esbuild';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Bundles `files` (test files under `root`/test) and Toolport's entry point into `outdir`, shared
 * code split into chunks. Returns each test file's bundle, in order, and the entry point's.
 */
export async function bundleTests(root, files, outdir) {
  const testDir = path.join(root, 'test');
  const entryPoints = Object.fromEntries(files.map((f) => [path.relative(testDir, f).replace(/\.ts$/, ''), f]));
  entryPoints['toolport-main'] = path.join(root, 'apps/api/src/main.ts');
  await rm(outdir, { recursive: true, force: true });
  await build({
    entryPoints,
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    conditions: ['@toolport/source'],
    sourcemap: 'linked',
    logLevel: 'error',
    outExtension: { '.js': '.mjs' },
    // Bundled CommonJS code calls require(); give it one.
    banner: { js: "import { createRequire as __tpRequire } from 'node:module'; const require = __tpRequire(import.meta.url);" },
    plugins: [ownSources],
  });
  return {
    tests: files.map((f) => path.join(outdir, `${path.relative(testDir, f).replace(/\.ts$/, '')}.mjs`)),
    main: path.join(outdir, 'toolport-main.mjs'),
  };
}

/**
 * The packages in IMPORTED stay imports. A module of ours that asks where it is (import.meta.url,
 * dirname, filename) is told where its source is, not where the bundle is: the tests and the
 * dashboard find their files beside their source.
 */
const ownSources = {
  name: 'own-sources',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => (IMPORTED.some((p) => args.path === p || args.path.startsWith(`${p}/`)) ? { external: true } : undefined));
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta')) return undefined;
      const { code } = await transform(source, {
        loader: 'ts',
        format: 'esm',
        sourcefile: args.path,
        sourcemap: 'inline',
        define: {
          'import.meta.url': JSON.stringify(pathToFileURL(args.path).href),
          'import.meta.dirname': JSON.stringify(path.dirname(args.path)),
          'import.meta.filename': JSON.stringify(args.path),
        },
      });
      return { contents: code, loader: 'js' };
    });
  },
};

/**
 * Packages that stay imports: those that read files beside their code (PGlite its WebAssembly,
 * BullMQ its Lua scripts, TypeScript its libs) or run programs from there (Playwright, esbuild),
 * axe-core whose source the tests send to the page, and ioredis, which BullMQ imports itself: one
 * copy of it, so that its errors are the same classes for Toolport and for BullMQ.
 */
const IMPORTED = ['@electric-sql/pglite', 'bullmq', 'ioredis', 'playwright-core', 'esbuild', 'axe-core', 'typescript'];
