import { Router } from 'express';
import type { EventRepository } from '@herald/db';
import type { EventPage } from '@herald/domain';
import type { ApiKeyAuthenticator } from '../auth/api-key-cache';
import { HttpError } from '../http/http-error';
import type { KeyConcurrency } from '../http/key-concurrency';
import type { RateLimit } from '../http/rate-limit';
import { checkRequiredHeaders } from './headers';
import { checkPageDepth, parseEventsQuery } from './query';

export interface EventsRouterDependencies {
  apiKeys: Pick<ApiKeyAuthenticator, 'authenticate'>;
  events: EventRepository;
  rateLimit: RateLimit;
  /** How many of one key's requests query the database at once. */
  concurrency: KeyConcurrency;
  /** EVENTS_MAX_SKIP: most events a page found by skipping may skip. */
  maxSkip: number;
}

/** GET /events: the merchant API. A merchant key lists its merchant's events; a program key every event of its program. */
export function eventsRouter(deps: EventsRouterDependencies): Router {
  const router = Router();
  router.get('/events', async (req, res) => {
    const key = req.get('x-api-key');
    if (!key) throw unauthorized('The x-api-key header is required.');
    const auth = await deps.apiKeys.authenticate(key);
    if (!auth) throw unauthorized('The x-api-key is unknown or revoked.');
    await deps.rateLimit(auth.keyId, res);
    checkRequiredHeaders(req);
    const query = parseEventsQuery(req.query);
    checkPageDepth(query, deps.maxSkip);

    const { count, events } = await deps.concurrency(auth.keyId, () => deps.events.list({ ...query, scope: auth.scope }));
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
