import { Router } from 'express';
import { checkReadiness, type ReadinessCheck } from '@herald/lifecycle';
import { problemType, sendProblem } from '../http/problem';

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
    const { ready, checks: checksByName, down } = await checkReadiness(checks, timeoutMs);
    if (ready) {
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
