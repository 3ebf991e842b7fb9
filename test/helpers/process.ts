import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** Runs a program to the end, asynchronously (a Toolport in this same process serves meanwhile): its exit code and output. */
export function runToEnd(
  bin: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; input?: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: opts.cwd, env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * The arguments that run Toolport's entry point: the bundle the test runner made of it
 * (scripts/bundle-tests.mjs), else its source through tsx. With the test processes' V8 flags
 * (NODE_FLAGS in scripts/test.mjs): a child that lives seconds need not optimise PGlite's module.
 */
export function toolportEntry(): string[] {
  return ['--liftoff-only', ...(process.env.TOOLPORT_TEST_MAIN ? [process.env.TOOLPORT_TEST_MAIN] : ['--import', 'tsx', 'apps/api/src/main.ts'])];
}

/**
 * Toolport's real entry point as a child process (`ROLE` api, worker or all) on one backing, ready
 * once its /readyz answers. The child is added to `procs`, for the caller to kill after its tests.
 */
export async function spawnToolport(
  procs: ChildProcess[],
  opts: { env: NodeJS.ProcessEnv; role: 'api' | 'worker' | 'all'; port: number; publicUrl: string },
): Promise<ChildProcess> {
  const child = spawn(process.execPath, toolportEntry(), {
    env: { ...process.env, ...opts.env, ROLE: opts.role, PORT: String(opts.port), PUBLIC_URL: opts.publicUrl },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  procs.push(child);
  for (let i = 0; i < 600; i++) {
    if (await fetch(`http://127.0.0.1:${opts.port}/readyz`).then((r) => r.ok, () => false)) return child;
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`the ${opts.role} process on ${opts.port} did not become ready`);
}
