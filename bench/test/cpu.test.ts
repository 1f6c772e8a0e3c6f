import { cpuAgainst, cpuByRole, formatCpu, type CpuSnapshot } from '../cpu';

/** A snapshot of processes' CPU ms by pid, with their roles. */
const snapshot = (processes: Record<number, [role: string, ms: number]>): CpuSnapshot => ({
  byPid: new Map(Object.entries(processes).map(([pid, [role, ms]]) => [Number(pid), { role, ms }])),
  busy: 0,
  total: 0,
});

describe('cpuByRole', () => {
  it('sums each role over its processes, in µs per unit, largest first, and leaves out idle roles', () => {
    const before = snapshot({ 1: ['worker', 100], 2: ['PostgreSQL', 50], 3: ['PostgreSQL', 10], 4: ['Redis', 7] });
    // Process 5 started meanwhile and counts from zero; Redis spent nothing.
    const after = snapshot({ 1: ['worker', 400], 2: ['PostgreSQL', 150], 3: ['PostgreSQL', 30], 4: ['Redis', 7], 5: ['PostgreSQL', 80] });
    const cpu = cpuByRole(before, after, 1_000);
    expect([...cpu]).toEqual([
      ['worker', 300],
      ['PostgreSQL', 200],
    ]);
    expect(formatCpu(cpu)).toBe('worker 300 µs, PostgreSQL 200 µs');
  });
});

describe('cpuAgainst', () => {
  it("sets Herald's worker against the ceiling's, the other roles role by role, largest difference first", () => {
    const ours = {
      role: 'delivery-worker',
      cpu: new Map([
        ['delivery-worker', 380],
        ['PostgreSQL', 164],
        ['Redis', 137],
        ['receiver', 45],
      ]),
    };
    const ceiling = {
      role: 'bare durable worker',
      cpu: new Map([
        ['bare durable worker', 210],
        ['PostgreSQL', 96],
        ['Redis', 94],
        ['receiver', 45],
        ['everything else', 5],
      ]),
    };
    expect(cpuAgainst(ours, ceiling)).toBe(
      "CPU of all processes 726 µs against 450 µs (the ceiling's 0.620 of Herald's); the difference: " +
        'delivery-worker (against bare durable worker) +170 µs, PostgreSQL +68 µs, Redis +43 µs, everything else -5 µs',
    );
  });
});
