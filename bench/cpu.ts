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

/** CPU µs per unit of work by role, largest first. */
export type CpuByRole = ReadonlyMap<string, number>;

/**
 * CPU µs per unit of work by role between two snapshots, largest first. Counts the processes
 * alive at `after` (one started meanwhile from zero); the CPU of one that ended meanwhile is missed.
 */
export function cpuByRole(before: CpuSnapshot, after: CpuSnapshot, units: number): CpuByRole {
  const byRole = new Map<string, number>();
  for (const [pid, { role, ms }] of after.byPid) byRole.set(role, (byRole.get(role) ?? 0) + ms - (before.byPid.get(pid)?.ms ?? 0));
  return new Map(
    [...byRole]
      .map(([role, ms]) => [role, Math.round((ms / units) * 1000)] as const)
      .filter(([, us]) => us > 0)
      .sort((a, b) => b[1] - a[1]),
  );
}

/** "delivery-worker 420 µs, PostgreSQL (its database) 130 µs, …" */
export function formatCpu(cpu: CpuByRole): string {
  return [...cpu].map(([role, us]) => `${role} ${us} µs`).join(', ');
}

/** CPU µs per unit of work by role between two snapshots, as formatCpu writes it. */
export function cpuPerUnit(before: CpuSnapshot, after: CpuSnapshot, units: number): string {
  return formatCpu(cpuByRole(before, after, units));
}

/**
 * Herald's CPU per unit of work against a ceiling's, all processes counted: both totals, the
 * ceiling's as a share of Herald's, and the difference role by role, largest first, Herald's
 * worker set against the ceiling's. When the machine's cores bound both, the share is about the
 * ratio of their rates, and the differences say where Herald's part of the gap is spent.
 */
export function cpuAgainst(ours: { cpu: CpuByRole; role: string }, ceiling: { cpu: CpuByRole; role: string }): string {
  const total = (cpu: CpuByRole): number => [...cpu.values()].reduce((a, b) => a + b, 0);
  const roles = new Set([...ours.cpu.keys(), ...ceiling.cpu.keys()].filter((role) => role !== ours.role && role !== ceiling.role));
  const differences: Array<[string, number]> = [
    [`${ours.role} (against ${ceiling.role})`, (ours.cpu.get(ours.role) ?? 0) - (ceiling.cpu.get(ceiling.role) ?? 0)],
    ...[...roles].map((role): [string, number] => [role, (ours.cpu.get(role) ?? 0) - (ceiling.cpu.get(role) ?? 0)]),
  ];
  const listed = differences
    .filter(([, us]) => us !== 0)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
    .map(([role, us]) => `${role} ${us > 0 ? '+' : ''}${us} µs`);
  const [oursTotal, ceilingTotal] = [total(ours.cpu), total(ceiling.cpu)];
  return `CPU of all processes ${oursTotal} µs against ${ceilingTotal} µs (the ceiling's ${(ceilingTotal / oursTotal).toFixed(3)} of Herald's); the difference: ${listed.join(', ')}`;
}

/** Share of all the machine's cores that were busy between two snapshots, 0 to 1. */
export function machineBusy(before: CpuSnapshot, after: CpuSnapshot): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : NaN;
}
