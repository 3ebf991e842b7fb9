import { defineConfig } from 'tsup';

// One ESM file with Toolport's own manifest rules (private @toolport/core) inlined, so `addon lint`
// applies exactly the server's checks; the libraries those rules use stay dependencies.
export default defineConfig({
  entry: { toolport: 'src/main.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  clean: true,
  noExternal: ['@toolport/core'],
});
