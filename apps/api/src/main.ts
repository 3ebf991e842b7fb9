import { checkDependencies, parseConfig, startTracing } from '@toolport/core';
import { runEntry } from './run';
import { startServer } from './server';
import { startWorker } from './worker';

/** What closing the services may take after the drain's grace. */
const EXIT_AFTER_GRACE_MS = 4_000;

async function main() {
  // Every bad setting in one report, missing keys included, before any wait for the database
  // (createServices checks the keys too).
  const config = parseConfig(process.env, { requireKeys: true });
  await checkDependencies(config);
  // Before anything that makes spans; a no-op without OTEL_EXPORTER_OTLP_ENDPOINT.
  const stopTracing = await startTracing(config);
  const mode = config.embedded ? 'embedded (PGlite, in-process queue)' : 'Postgres + Redis';
  // The embedded database's first start creates it, which takes a while: say what is going on.
  const talk = process.stdout.isTTY || config.embedded;
  if (talk) console.log(`\n  Toolport is starting: ${config.database.dataDir ? `opening its database in ${config.database.dataDir} (the first start creates it)` : 'connecting to Postgres and Redis'}...`);
  // ROLE=worker runs only the call worker (with /healthz and /readyz); the other roles serve the API.
  const server = config.role === 'worker' ? await startWorker(config) : await startServer(config);
  server.svc.log.info('toolport started', { url: config.publicUrl, mode, role: config.role });
  if (talk) console.log(`\n  Toolport is running: open ${config.publicUrl}\n`);

  const stop = async (signal: string) => {
    server.svc.log.info('shutting down', { signal });
    // An API process's drain is bounded (server.ts); this bounds closing the services after it,
    // inside Kubernetes' 30 s. A worker lets its deliveries run to their deadline instead.
    if (config.role !== 'worker') {
      setTimeout(() => {
        server.svc.log.error('shutdown took too long; exiting', { signal });
        process.exit(1);
      }, config.shutdownGraceSeconds * 1000 + EXIT_AFTER_GRACE_MS).unref();
    }
    try {
      await server.close();
      // Spans still batched are flushed to the collector before the process goes.
      await stopTracing();
    } catch (err) {
      server.svc.log.error('shutdown failed', { err });
      process.exit(1);
    }
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

runEntry(main);
