import { ConfigError, StartupError } from '@toolport/core';

/** Bad settings or unusable dependencies exit 78 (EX_CONFIG); anything else unexpected exits 1. */
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
