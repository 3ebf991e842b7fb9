// Writes examples/notes/addon.json from the kit's definition, so the two never drift apart.
// `--check` only compares and exits 1 when the file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { notesAddon } from './addon';

export const MANIFEST_PATH = fileURLToPath(new URL('../addon.json', import.meta.url));
const rendered = `${JSON.stringify(notesAddon.manifest(), null, 2)}\n`;

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(MANIFEST_PATH, 'utf8');
  } catch {
    /* missing counts as stale */
  }
  if (current !== rendered) {
    console.error(`${MANIFEST_PATH} is out of date; run: npm run manifest -w @toolport/example-notes`);
    process.exit(1);
  }
  console.log(`${MANIFEST_PATH} is up to date.`);
} else {
  writeFileSync(MANIFEST_PATH, rendered);
  console.log(`Wrote ${MANIFEST_PATH}`);
}
