import { ConfigError, StartupError } from '@toolport/core';

/**
 * Runs an entry point: bad settings exit 78 (EX_CONFIG) with every problem listed, as does what
 * they point at when unusable (one line with the fix); anything else unexpected exits 1. A one-shot
 * command exits 0 when done; a server keeps running.
 */
export function runEntry(main: () => Promise<void>, { exitWhenDone = false } = {}) {
  main().then(
    () => {
      if (exitWhenDone) process.exit(0);
    },
    (err) => {
      if (err instanceof ConfigError || err instanceof StartupError) {
        console.error(err.message);
        process.exit(78);
      }
      console.error(err);
      process.exit(1);
    },
  );
}
