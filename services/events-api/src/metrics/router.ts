import { Router, type RequestHandler } from 'express';
import type { HeraldMetrics } from '@herald/metrics';
import { requireBearerToken } from '../auth/bearer-token';

/**
 * GET /metrics: the events-api's Prometheus metrics, text format. Behind `Authorization: Bearer
 * METRICS_TOKEN` when that is set; open otherwise (no series holds a secret or a tenant's id).
 */
export function metricsRouter(deps: { metrics: HeraldMetrics; token: string | undefined }): Router {
  const guard: RequestHandler[] = deps.token === undefined ? [] : [requireBearerToken(deps.token, 'herald-metrics')];
  const router = Router();
  router.get('/metrics', ...guard, async (_req, res) => {
    const body = await deps.metrics.exposition();
    res.set('Content-Type', deps.metrics.contentType).send(body);
  });
  return router;
}
