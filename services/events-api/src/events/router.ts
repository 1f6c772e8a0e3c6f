import { Router } from 'express';
import { isWellFormedApiKey, type EventRepository } from '@herald/db';
import type { EventPage } from '@herald/domain';
import type { ApiKeyAuthenticator } from '../auth/api-key-cache';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import { HttpError } from '../http/http-error';
import type { KeyConcurrency } from '../http/key-concurrency';
import type { RateLimit } from '../http/rate-limit';
import { checkRequiredHeaders } from './headers';
import { checkPageDepth, isExpensive, parseEventsQuery } from './query';

export interface EventsRouterDependencies {
  apiKeys: Pick<ApiKeyAuthenticator, 'authenticate'>;
  events: EventRepository;
  rateLimit: RateLimit;
  /** How many of one key's expensive requests (isExpensive) query the database at once. */
  concurrency: KeyConcurrency;
  /** EVENTS_MAX_SKIP: most events a page found by skipping may skip. */
  maxSkip: number;
  /** Slows down an address after repeated wrong keys. */
  failedAuth: FailedAuthThrottle;
}

/** GET /events: the merchant API. A merchant key lists its merchant's events; a program key every event of its program. */
export function eventsRouter(deps: EventsRouterDependencies): Router {
  const router = Router();
  router.get('/events', async (req, res) => {
    const key = req.get('x-api-key');
    if (!key) throw unauthorized('The x-api-key header is required.');
    deps.failedAuth.check(req);
    // Not of the form Herald gives keys: no lookup, no cache entry.
    if (!isWellFormedApiKey(key)) {
      deps.failedAuth.failed(req);
      throw unauthorized('The x-api-key is not a Herald API key: hk_ followed by 43 letters, digits, - or _.');
    }
    const auth = await deps.apiKeys.authenticate(key);
    if (!auth) {
      deps.failedAuth.failed(req);
      throw unauthorized('The x-api-key is unknown or revoked.');
    }
    await deps.rateLimit(auth.keyId, res);
    checkRequiredHeaders(req);
    const query = parseEventsQuery(req.query);
    checkPageDepth(query, deps.maxSkip);

    const list = () => deps.events.list({ ...query, scope: auth.scope });
    // Only the reads that count and skip over the index take a turn of the key: the others cost
    // a few small counter rows whatever the data, and a busy key's cheap pages need no queue.
    const { count, events } = isExpensive(query) ? await deps.concurrency(auth.keyId, list) : await list();
    const page: EventPage = {
      page: query.page,
      pageSize: query.pageSize,
      count,
      totalPages: Math.ceil(count / query.pageSize),
      data: events,
    };
    res.json(page);
  });
  return router;
}

function unauthorized(detail: string): HttpError {
  return new HttpError(401, 'unauthorized', 'Unauthorized', detail, { header: 'x-api-key' });
}
