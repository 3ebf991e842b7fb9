import { defineConfig } from 'tsup';

// ESM and CommonJS, each with its declarations bundled into one file (index.d.ts, index.d.cts).
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  platform: 'node',
  clean: true,
  sourcemap: true,
});
