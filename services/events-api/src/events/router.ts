import type { RequestHandler, Response } from 'express';
import { isWellFormedApiKey, type EventListPage, type EventListQuery, type EventRepository } from '@herald/db';
import type { ApiKeyAuthenticator } from '../auth/api-key-cache';
import { clientKey } from '../http/client-address';
import { HttpError } from '../http/http-error';
import type { KeyConcurrency } from '../http/key-concurrency';
import type { KeyTimeBudget } from '../http/key-time-budget';
import type { RateLimit } from '../http/rate-limit';
import { checkRequiredHeaders } from './headers';
import { checkPageDepth, isExpensive, parseEventsQuery } from './query';

export interface EventsRouterDependencies {
  apiKeys: Pick<ApiKeyAuthenticator, 'authenticate'>;
  events: EventRepository;
  rateLimit: RateLimit;
  /** How many of one key's expensive requests (isExpensive) query the database at once. */
  concurrency: KeyConcurrency;
  /** How much database time one key's expensive requests may take per second. */
  timeBudget: KeyTimeBudget;
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
    const key = req.get('x-api-key');
    if (!key) throw unauthorized('The x-api-key header is required.');
    // Wrong keys do not count against the client's address (the failed-authentication throttle):
    // a key is 256 random bits, so guessing one is hopeless, and counting them would let one
    // tenant behind a shared address lock out the others. What a made-up key could cost, a
    // database lookup, the lookup limits bound per address and per prefix (unknown-key-limit.ts).
    // Not of the form Herald gives keys: no lookup, no cache entry.
    if (!isWellFormedApiKey(key)) throw unauthorized('The x-api-key is not a Herald API key: hk_ followed by 43 letters, digits, - or _.');
    const auth = await deps.apiKeys.authenticate(key, clientKey(req));
    if (!auth) throw unauthorized('The x-api-key is unknown or revoked.');
    deps.rateLimit(auth.keyId, res);
    checkRequiredHeaders(req);
    const query = parseEventsQuery(req.query);
    checkPageDepth(query, deps.maxSkip);

    const list = () => deps.events.list({ ...query, scope: auth.scope });
    // Only the reads that count and skip over the index take a turn of the key: the others cost
    // a few small counter rows whatever the data, and a busy key's cheap pages need no queue.
    // They are bounded in time too, checked before the turn so that a key over its budget holds no turn.
    let result: EventListPage;
    if (isExpensive(query)) {
      await deps.timeBudget.check(auth.keyId);
      result = await deps.concurrency(auth.keyId, () => deps.timeBudget.spend(auth.keyId, list));
    } else {
      result = await list();
    }
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

function unauthorized(detail: string): HttpError {
  return new HttpError(401, 'unauthorized', 'Unauthorized', detail, { header: 'x-api-key' });
}
