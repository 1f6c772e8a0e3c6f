import { withTimeout } from '@herald/domain';

/** A dependency a service needs to do its work, e.g. PostgreSQL; `check` rejects when it does not answer. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<unknown>;
}

/** The state of every dependency, as /readyz reports it. */
export interface ReadinessReport {
  /** Whether every check answered in time. */
  ready: boolean;
  checks: Record<string, { status: 'up' } | { status: 'down'; error: string }>;
  /** Names of the checks that did not answer, in the order given. */
  down: string[];
}

/** Runs every check at once, each bounded by `timeoutMs`. Never rejects. */
export async function checkReadiness(checks: readonly ReadinessCheck[], timeoutMs: number): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async ({ name, check }) => {
      try {
        await withTimeout(check(), timeoutMs, `${name} did not answer within ${timeoutMs} ms`);
        return { name, ok: true as const };
      } catch (error) {
        return { name, ok: false as const, error: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
  const down = results.filter((r) => !r.ok).map((r) => r.name);
  const byName = Object.fromEntries(results.map((r) => [r.name, r.ok ? { status: 'up' as const } : { status: 'down' as const, error: r.error }]));
  return { ready: down.length === 0, checks: byName, down };
}
