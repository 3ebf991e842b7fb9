import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Credentials {
  url: string;
  key: string;
}

export const DEFAULT_URL = 'http://localhost:8080';

/** $TOOLPORT_CONFIG, else $XDG_CONFIG_HOME/toolport/config.json, else ~/.config/toolport/config.json. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.TOOLPORT_CONFIG) return path.resolve(env.TOOLPORT_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'toolport', 'config.json');
}

export function readConfig(file: string): Partial<Credentials> {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    return {
      ...(typeof parsed.url === 'string' ? { url: parsed.url } : {}),
      ...(typeof parsed.key === 'string' ? { key: parsed.key } : {}),
    };
  } catch {
    return {};
  }
}

/** Written with mode 0600 (directory 0700), replacing the file in one rename. */
export function writeConfig(file: string, creds: Credentials) {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ url: creds.url, key: creds.key }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Removes the stored login; false when there was none. */
export function removeConfig(file: string): boolean {
  try {
    rmSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** The stored login, each field overridden by TOOLPORT_URL / TOOLPORT_API_KEY. */
export function resolveCredentials(env: NodeJS.ProcessEnv): Partial<Credentials> & { url: string } {
  const stored = readConfig(configPath(env));
  const key = env.TOOLPORT_API_KEY || stored.key;
  return { url: (env.TOOLPORT_URL || stored.url || DEFAULT_URL).replace(/\/+$/, ''), ...(key ? { key } : {}) };
}
