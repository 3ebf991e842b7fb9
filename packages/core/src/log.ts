import { systemClock, type Clock } from './clock';
import { activeTraceId } from './tracing';

/**
 * Structured JSON logs on stdout. Never pass secrets, tokens or a destructive call's arguments.
 * A line written inside a traced span carries its `traceId`, so logs and traces join up.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(base: Record<string, unknown> = {}, silent = false, clock: Clock = systemClock): Logger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) => {
    if (silent) return;
    const entry: Record<string, unknown> = { time: clock.now().toISOString(), level, msg, ...base, ...fields };
    if (entry.traceId === undefined) {
      const traceId = activeTraceId();
      if (traceId) entry.traceId = traceId;
    }
    const err = fields?.err;
    if (err instanceof Error) entry.err = { name: err.name, message: err.message, stack: err.stack };
    process.stdout.write(`${JSON.stringify(entry)}\n`);
  };
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}
