import { Router } from 'express';
import { isWellFormedApiKey, type EventRepository } from '@herald/db';
import type { EventPage } from '@herald/domain';
import type { ApiKeyAuthenticator } from '../auth/api-key-cache';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import { HttpError } from '../http/http-error';
import type { RateLimit } from '../http/rate-limit';
import { checkRequiredHeaders } from './headers';
import { parseEventsQuery } from './query';

/** GET /events: the merchant API. A merchant key lists its merchant's events; a program key every event of its program. */
export function eventsRouter(deps: {
  apiKeys: Pick<ApiKeyAuthenticator, 'authenticate'>;
  events: EventRepository;
  rateLimit: RateLimit;
  failedAuth: FailedAuthThrottle;
}): Router {
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

    const { count, events } = await deps.events.list({ ...query, scope: auth.scope });
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
