import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = path.resolve(BENCH_DIR, '..');
const LOG_DIR = path.join(BENCH_DIR, 'results', 'logs');

export interface Child {
  name: string;
  proc: ChildProcess;
  ready: any;
  request<T = any>(msg: Record<string, unknown>, answerType: string, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

/**
 * Forks a server under test in its own Node process (tsx loader, --expose-gc for the memory hook).
 * BENCH_CPU_PROF=1 writes a V8 CPU profile per child to bench/results/profiles/.
 */
export async function startChild(name: string, script: string, opts: { args?: string[]; env?: Record<string, string> } = {}): Promise<Child> {
  mkdirSync(LOG_DIR, { recursive: true });
  // The workspace's packages (the add-on kit) from source, as in the tests: no build to go stale.
  const execArgv = ['--conditions=@toolport/source', '--import', 'tsx', '--expose-gc'];
  if (process.env.BENCH_CPU_PROF) {
    // One directory per child: every thread (tsx's loader runs in a worker) writes its own file.
    const dir = path.join(BENCH_DIR, 'results', 'profiles', name);
    mkdirSync(dir, { recursive: true });
    execArgv.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const out = openSync(path.join(LOG_DIR, `${name}.log`), 'w');
  const proc = fork(path.join(BENCH_DIR, script), opts.args ?? [], {
    cwd: ROOT,
    execArgv,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', out, out, 'ipc'],
  });
  const ready = await new Promise<any>((resolve, reject) => {
    // Generous: migrations on a fresh database take a while on a loaded 2-core machine.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${name} did not start in 180 s (see bench/results/logs/${name}.log)`));
    }, 180_000);
    proc.once('exit', (code) => reject(new Error(`${name} exited with ${code} (see bench/results/logs/${name}.log)`)));
    proc.on('message', (m: any) => {
      if (m?.type === 'ready') {
        clearTimeout(timer);
        resolve(m);
      }
    });
  });
  proc.removeAllListeners('exit');
  let seq = 0;
  return {
    name,
    proc,
    ready,
    request(msg, answerType, timeoutMs = 30_000) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          proc.off('message', on);
          reject(new Error(`${name}: no ${answerType} answer`));
        }, timeoutMs);
        const on = (m: any) => {
          if (m?.type === answerType && (m.id === undefined || m.id === id)) {
            clearTimeout(timer);
            proc.off('message', on);
            resolve(m);
          }
        };
        proc.on('message', on);
        proc.send({ ...msg, id });
      });
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      // SIGINT lets a --cpu-prof child write its profile; the Toolport child closes its services.
      // A child already on its way out has closed its channel: a send then is an error event that
      // would end this process after the results were saved, so it gets the signal instead.
      if (proc.connected) proc.send({ type: 'stop' }, (err) => err && proc.kill('SIGINT'));
      else proc.kill('SIGINT');
      const t = setTimeout(() => proc.kill('SIGINT'), 5_000);
      const k = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(t);
      clearTimeout(k);
    },
  };
}
