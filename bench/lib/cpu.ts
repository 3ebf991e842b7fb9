import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Where a load point's CPU went, process by process, read from /proc: every server child, the
 * add-on, Redis, Postgres (every backend) and this process (the load generator), and how busy the
 * whole machine was. On 2 cores a closed-loop point saturates the machine, so calls/s is set by the
 * CPU one call costs across all of them, not only in the server under test.
 */

/** Linux's USER_HZ: /proc reports CPU time in ticks of 10 ms. */
const TICK_US = 10_000;

/** CPU time (user + system, every thread) a process has used, in µs; 0 when it is gone. */
function processCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces; the fields after it start at state (field 3).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The processes a process started, from every thread's /proc children list. */
function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/**
 * CPU time of a process and every live process under it: a peer's child is a wrapper, and the work
 * is done by the gateway it spawned and the stdio servers that gateway spawned in turn.
 */
function treeCpuUs(pid: number): number {
  return childPids(pid).reduce((sum, child) => sum + treeCpuUs(child), processCpuUs(pid));
}

function pidsNamed(name: string): number[] {
  try {
    return execFileSync('pgrep', ['-x', name], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The machine's busy and total CPU time so far, all cores, from the first line of /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  try {
    const [, ...v] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th values.
    return { busy: total - v[3]! - v[4]!, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

type Sample = { groups: Record<string, number>; machine: { busy: number; total: number } };

export interface CpuUse {
  /** µs of CPU per call, by process group. */
  perCallUs: Record<string, number>;
  /** Share of the whole machine (all cores) that was busy during the point, 0–1. */
  machineBusy: number;
}

/**
 * A sampler over named children (their pids) plus `redis`, `postgres` and `load generator` (this
 * process, autocannon included).
 */
export function cpuSampler(children: () => Array<{ name: string; pid: number | undefined }>) {
  const take = (): Sample => {
    const groups: Record<string, number> = {};
    for (const c of children()) if (c.pid) groups[c.name] = treeCpuUs(c.pid);
    for (const [group, name] of [['redis', 'redis-server'], ['postgres', 'postgres']] as const) {
      groups[group] = pidsNamed(name).reduce((sum, pid) => sum + processCpuUs(pid), 0);
    }
    const self = process.cpuUsage();
    groups['load generator'] = self.user + self.system;
    return { groups, machine: machineTicks() };
  };
  return {
    take,
    /** CPU per call between two samples; groups that used less than a tick in all are left out. */
    between(a: Sample, b: Sample, calls: number): CpuUse {
      const perCallUs: Record<string, number> = {};
      for (const [group, after] of Object.entries(b.groups)) {
        const used = after - (a.groups[group] ?? 0);
        if (used >= TICK_US && calls > 0) perCallUs[group] = Math.round(used / calls);
      }
      const total = b.machine.total - a.machine.total;
      return { perCallUs, machineBusy: total > 0 ? Math.round(((b.machine.busy - a.machine.busy) / total) * 100) / 100 : NaN };
    },
  };
}
