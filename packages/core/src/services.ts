import type { Clock } from './clock';
import { systemClock } from './clock';
import type { Config } from './config';
import { ConfigError } from './config';
import type { Database, Db } from './db/client';
import { createDatabase } from './db/client';
import type { EventBus } from './events/bus';
import { createInProcessBus } from './events/bus';
import type { Logger } from './log';
import { createLogger } from './log';
import type { Secrets } from './secrets';
import { loadSecrets } from './secrets';

/** Everything a verb may use, built once at start from the parsed config. */
export interface Services {
  config: Config;
  database: Database;
  db: Db;
  secrets: Secrets;
  clock: Clock;
  log: Logger;
  bus: EventBus;
  /** Things to close on shutdown, last added first. */
  closers: Array<() => Promise<void>>;
}

export interface ServiceOverrides {
  clock?: Clock;
  log?: Logger;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  if (config.database.url && !config.secretKey) {
    throw new ConfigError(['TOOLPORT_SECRET_KEY is required with DATABASE_URL: every process must share one master key.']);
  }
  const log = overrides.log ?? createLogger({ role: config.role });
  const database = await createDatabase(config.database);
  await database.migrate();
  const bus = createInProcessBus();
  const svc: Services = {
    config,
    database,
    db: database.db,
    secrets: loadSecrets(config),
    clock: overrides.clock ?? systemClock,
    log,
    bus,
    closers: [() => database.close(), () => bus.close()],
  };
  return svc;
}

export async function closeServices(svc: Services): Promise<void> {
  for (const close of [...svc.closers].reverse()) {
    try {
      await close();
    } catch (err) {
      svc.log.warn('close failed', { err });
    }
  }
}
