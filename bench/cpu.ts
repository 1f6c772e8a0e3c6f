/**
 * CPU accounting from /proc, for the bench and bench/profile.ts: the CPU time each process spent
 * during a measurement, grouped by role, and how busy the machine's cores were meanwhile.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * A snapshot of CPU time (user + system, ms) by process with its role, and of the machine's busy
 * and total jiffies. By process, not summed by role: a process that ends between two snapshots
 * (a pool's idle PostgreSQL backend, say) must not take its whole lifetime's CPU off its role.
 */
export interface CpuSnapshot {
  byPid: Map<number, { role: string; ms: number }>;
  busy: number;
  total: number;
}

/**
 * Roles of the processes to account for: pids the caller started, and the PostgreSQL backends
 * serving `database` (their command line names it). Redis is found by name; everything else is
 * summed as "everything else".
 */
export class CpuAccounts {
  readonly #roles = new Map<number, string>();
  constructor(private readonly database: string) {}

  /** Counts the process under `role` (several processes may share one). */
  add(pid: number | undefined, role: string): void {
    if (pid) this.#roles.set(pid, role);
  }

  snapshot(): CpuSnapshot {
    const byPid = new Map<number, { role: string; ms: number }>();
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
        const role =
          this.#roles.get(Number(pid)) ??
          (pid === String(process.pid)
            ? 'this process'
            : name === 'postgres' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(this.database)
              ? 'PostgreSQL (its database)'
              : name === 'redis-server'
                ? 'Redis'
                : 'everything else');
        byPid.set(Number(pid), { role, ms });
      } catch {
        // The process ended meanwhile.
      }
    }
    // The first line of /proc/stat: jiffies of all cores by state; idle and iowait are not busy.
    const jiffies = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = jiffies.reduce((a, b) => a + b, 0);
    return { byPid, busy: total - jiffies[3]! - jiffies[4]!, total };
  }
}

/**
 * CPU µs per unit of work by role between two snapshots, largest first, e.g. "delivery-worker 420 µs, …".
 * Counts the processes alive at `after` (one started meanwhile from zero); the CPU of one that
 * ended meanwhile is missed.
 */
export function cpuPerUnit(before: CpuSnapshot, after: CpuSnapshot, units: number): string {
  const byRole = new Map<string, number>();
  for (const [pid, { role, ms }] of after.byPid) byRole.set(role, (byRole.get(role) ?? 0) + ms - (before.byPid.get(pid)?.ms ?? 0));
  return [...byRole]
    .map(([role, ms]) => [role, Math.round((ms / units) * 1000)] as const)
    .filter(([, us]) => us > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([role, us]) => `${role} ${us} µs`)
    .join(', ');
}

/** Share of all the machine's cores that were busy between two snapshots, 0 to 1. */
export function machineBusy(before: CpuSnapshot, after: CpuSnapshot): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : NaN;
}
