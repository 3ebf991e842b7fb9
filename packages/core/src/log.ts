/** Structured JSON logs on stdout. Never pass secrets, tokens or a destructive call's arguments. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(base: Record<string, unknown> = {}, silent = false): Logger {
  const write = (level: string, msg: string, fields?: Record<string, unknown>) => {
    if (silent) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base, ...fields };
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
