import { Router } from 'express';
import type { TraceContext } from '@herald/telemetry';
import { requestTrace } from '../http/request-log';
import type { EventDeliveries, IngestResult } from './ingest-events';

/** Header: how many deliveries (future callbacks) the request created, `0` included. */
export const DELIVERIES_HEADER = 'Herald-Deliveries';
/** Header: the ids of the targets those deliveries go to, comma-separated; absent when there are none. */
export const DELIVERY_TARGETS_HEADER = 'Herald-Delivery-Targets';

/**
 * POST /internal/events: the platform's producers store events (never merchants). The body is one
 * event or `{"events": [...]}`; a batch is stored whole or not at all (see createIngest).
 *
 * The answer says what callbacks will follow, so "no callback" is visible at once, without
 * changing what clients of the body already read: one event answers the stored event (an Event,
 * as GET /events lists it) and the Herald-Deliveries and Herald-Delivery-Targets headers; a batch
 * answers `{"events": [...]}` plus a sibling `deliveries` array, one entry per event in the same
 * order, and the same headers summed over the batch. A producer wanting the per-event detail for
 * one event sends it as a batch of one.
 */
export function ingestRouter(deps: { ingest: (body: unknown, parent?: TraceContext) => Promise<IngestResult> }): Router {
  const router = Router();
  router.post('/events', async (req, res) => {
    const result = await deps.ingest(req.body, requestTrace(res));
    const created = result.deliveries.flatMap((e) => e.deliveries);
    res.set(DELIVERIES_HEADER, String(created.length));
    if (created.length > 0) res.set(DELIVERY_TARGETS_HEADER, unique(created.map((d) => d.targetId)).join(', '));
    res
      .status(result.createdCount > 0 ? 201 : 200)
      .json(result.batch ? { events: result.events, deliveries: result.deliveries.map(deliveriesView) } : result.events[0]);
  });
  return router;
}

/** One entry of a batch answer's `deliveries`: `count` is 0 when no callback will follow for the event. */
function deliveriesView({ eventId, deliveries }: EventDeliveries) {
  return {
    eventId,
    count: deliveries.length,
    targets: deliveries.map(({ targetId, targetOwner, deliveryId }) => ({ targetId, targetOwner, deliveryId })),
  };
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
