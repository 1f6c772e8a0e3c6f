import { Router } from 'express';
import type { DeliveryFilter, DeliveryHistoryRepository, DeliveryStatus } from '@herald/db';
import { compileValidator, toDate } from '@herald/domain';
import { authenticateMerchantRequest, ownTargetOf, type MerchantKeyDependencies } from '../auth/merchant-key';
import { expensiveRead, type ExpensiveReads } from '../http/expensive-reads';
import { HttpError } from '../http/http-error';
import { pageOf, parseQuery } from '../http/query';
import { merchantDeliveriesQuerySchema, type MerchantDeliveriesQuery } from './schemas';
import { findOwnDelivery, listOwnDeliveries } from './merchant-deliveries';

const validateQuery = compileValidator<MerchantDeliveriesQuery>(merchantDeliveriesQuerySchema);

export interface MerchantDeliveriesDependencies extends MerchantKeyDependencies {
  history: DeliveryHistoryRepository;
  /** The turns and time budget of each key's expensive reads, shared with GET /events. */
  limits: ExpensiveReads;
  /** EVENTS_MAX_SKIP: most deliveries a page may skip. */
  maxSkip: number;
}

/**
 * The merchant's own delivery history (the merchant API, behind x-api-key and the spec's headers):
 * GET /deliveries lists the callbacks to the key's own target, newest first, in the page envelope;
 * GET /deliveries/{id} shows one with every attempt. A delivery to another target is a 404, worded
 * as for an id that does not exist, so an answer never confirms another tenant's delivery.
 */
export function merchantDeliveriesRouter(deps: MerchantDeliveriesDependencies): Router {
  const router = Router();

  router.get('/deliveries', async (req, res) => {
    const caller = await authenticateMerchantRequest(deps, req, res);
    const query = parseQuery(validateQuery, req.query);
    const { page, pageSize } = pageOf(query);
    checkPageDepth(page, pageSize, deps.maxSkip);
    const owner = ownTargetOf(caller.scope);
    // Every list counts the target's deliveries that match, a cost that grows with them: each
    // takes a turn of the key and spends its time budget, as GET /events's expensive reads do.
    const { count, deliveries } = await expensiveRead(deps.limits, caller.keyId, () =>
      listOwnDeliveries(deps.history, owner, { filter: filterOf(query), page, pageSize }),
    );
    res.json({ page, pageSize, count, totalPages: Math.ceil(count / pageSize), data: deliveries });
  });

  router.get('/deliveries/:id', async (req, res) => {
    const caller = await authenticateMerchantRequest(deps, req, res);
    const id = req.params.id!;
    // One delivery by its id: a few index lookups whatever the data, so no turn is taken.
    const detail = await findOwnDelivery(deps.history, ownTargetOf(caller.scope), id);
    if (!detail) throw new HttpError(404, 'not_found', 'Not Found', `No delivery "${id}".`);
    res.json(detail);
  });

  return router;
}

function filterOf(query: MerchantDeliveriesQuery): DeliveryFilter {
  return {
    ...(query.status === undefined ? {} : { status: query.status as DeliveryStatus }),
    ...(query.eventId === undefined ? {} : { eventId: query.eventId }),
    ...(query.objectId === undefined ? {} : { objectId: query.objectId }),
    ...(query.createdFrom === undefined ? {} : { createdFrom: toDate(query.createdFrom) }),
    ...(query.createdTo === undefined ? {} : { createdTo: toDate(query.createdTo) }),
  };
}

/**
 * Refuses a page that would skip more than `maxSkip` deliveries: a page is found by skipping every
 * delivery before it (there are no counters of deliveries), so its cost grows with its depth.
 * Newest first, so reading on means moving createdTo back.
 */
function checkPageDepth(page: number, pageSize: number, maxSkip: number): void {
  if ((page - 1) * pageSize <= maxSkip) return;
  const deepest = Math.floor(maxSkip / pageSize) + 1;
  const message = `must be at most ${deepest} with pageSize ${pageSize}: a page may skip at most ${maxSkip} deliveries`;
  throw new HttpError(
    400,
    'page_too_deep',
    'Page too deep',
    `Invalid query parameter: page ${message}. To read further, narrow the time range instead: set createdTo just after the createdAt of the last delivery read and start again at page 1.`,
    { errors: [{ parameter: 'page', message }], maxSkip },
  );
}
