import { Router } from 'express';
import { problemType, sendProblem } from '../http/problem';
import { withTimeout } from '../util/timeout';

/** A dependency the API needs to serve requests, e.g. PostgreSQL; `check` rejects when it does not answer. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<unknown>;
}

/**
 * GET /healthz: the process is up (for a liveness probe; never touches a dependency).
 * GET /readyz: every dependency answers within the timeout; 503 names the ones that did not.
 */
export function healthRouter(checks: readonly ReadinessCheck[], timeoutMs: number): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
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
    const checksByName = Object.fromEntries(
      results.map((r) => [r.name, r.ok ? { status: 'up' } : { status: 'down', error: r.error }]),
    );
    const down = results.filter((r) => !r.ok).map((r) => r.name);
    if (down.length === 0) {
      res.json({ status: 'ready', checks: checksByName });
      return;
    }
    sendProblem(res, {
      type: problemType('not_ready'),
      title: 'Service Unavailable',
      status: 503,
      detail: `Not ready: ${down.join(', ')} did not answer.`,
      down,
      checks: checksByName,
    });
  });
  return router;
}
