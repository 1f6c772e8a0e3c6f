import { Router } from 'express';
import type { IngestResult } from './ingest-events';

/**
 * POST /internal/events: the platform's producers store events (never merchants). The body is one
 * event or `{"events": [...]}`; a batch is stored whole or not at all (see createIngest).
 */
export function ingestRouter(deps: { ingest: (body: unknown) => Promise<IngestResult> }): Router {
  const router = Router();
  router.post('/events', async (req, res) => {
    const result = await deps.ingest(req.body);
    res.status(result.createdCount > 0 ? 201 : 200).json(result.batch ? { events: result.events } : result.events[0]);
  });
  return router;
}
