import type { RequestHandler, Response } from 'express';
import type { EventListPage, EventListQuery, EventRepository } from '@herald/db';
import { authenticateMerchantRequest, type MerchantKeyDependencies } from '../auth/merchant-key';
import { expensiveRead, type ExpensiveReads } from '../http/expensive-reads';
import { checkPageDepth, isExpensive, parseEventsQuery } from './query';

export interface EventsRouterDependencies extends MerchantKeyDependencies {
  events: EventRepository;
  /** The turns and time budget of each key's expensive reads (isExpensive), shared by the merchant API's routes. */
  limits: ExpensiveReads;
  /** EVENTS_MAX_SKIP: most events a page found by skipping may skip. */
  maxSkip: number;
}

/**
 * GET /events: the merchant API. A merchant key lists its merchant's events; a program key every
 * event of its program. A handler, mounted by the app on its own router: one router level less
 * on the hot path than a router of its own.
 */
export function listEvents(deps: EventsRouterDependencies): RequestHandler {
  return async (req, res) => {
    const auth = await authenticateMerchantRequest(deps, req, res);
    const query = parseEventsQuery(req.query);
    checkPageDepth(query, deps.maxSkip);

    const list = () => deps.events.list({ ...query, scope: auth.scope });
    // Only the reads that count and skip over the index take a turn of the key: the others cost
    // a few small counter rows whatever the data, and a busy key's cheap pages need no queue.
    const result = isExpensive(query) ? await expensiveRead(deps.limits, auth.keyId, list) : await list();
    sendPage(res, query, result);
  };
}

/**
 * Writes the page envelope around the events' JSON that PostgreSQL built: nothing is parsed or
 * serialised again. Not res.json, which would also hash the body for an ETag that no client of a
 * list revalidates with (measured: a tenth of the events-api's CPU per request).
 */
function sendPage(res: Response, query: Pick<EventListQuery, 'page' | 'pageSize'>, { count, eventsJson }: EventListPage): void {
  const totalPages = Math.ceil(count / query.pageSize);
  const body = `{"page":${query.page},"pageSize":${query.pageSize},"count":${count},"totalPages":${totalPages},"data":${eventsJson}}`;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
