import type { Logger } from '@toolport/core';

/**
 * A Logger that keeps every line as JSON text (errors with their message and stack), for tests
 * that look through what was logged for what must never be there (a token, a secret).
 */
export function captureLog(): { log: Logger; logged: string[] } {
  const logged: string[] = [];
  const line = (m: string, f: unknown) => logged.push(JSON.stringify({ m, f }, (_k, v) => (v instanceof Error ? { message: v.message, stack: v.stack } : v)));
  return { log: { info: line, warn: line, error: line }, logged };
}
