import { createBullBoard } from '@bull-board/api';
import type { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type RequestHandler } from 'express';
import type { DashboardConfig } from '@herald/config';
import { redact } from '@herald/logging';
import type { DeliveryQueue } from '@herald/queue';
import { requireBasicAuth } from '../auth/basic-auth';
import { notFound } from '../http/error-handler';
import { DeliveriesBoardAdapter } from './deliveries-adapter';

/** Where the Bull dashboard lives. */
export const DASHBOARD_PATH = '/admin/queues';

type BoardHooks = NonNullable<NonNullable<Parameters<typeof createBullBoard>[0]['options']>['handlerHooks']>;

// What the dashboard may not do to the deliveries queue. Job data is Herald's (ids only, never a
// secret), so nobody adds jobs or edits their data by hand; emptying the queue or cleaning
// unfinished jobs would drop deliveries the outbox counts as enqueued, which nothing would send
// again; and the worker does not send a delivered callback again, so retrying a completed job
// would do nothing (the replay API does it). Retrying failed jobs, promoting delayed ones and
// removing single jobs stay, and so does cleaning finished jobs.
const REFUSED_ROUTES: ReadonlyMap<string, string> = new Map([
  ['/api/queues/:queueName/add', 'Jobs are added by Herald only.'],
  ['/api/queues/:queueName/:jobId/update-data', 'Job data is written by Herald only.'],
  ['/api/queues/:queueName/empty', 'Emptying the queue would drop deliveries; use the replay API to send them again.'],
  ['/api/queues/:queueName/obliterate', 'Obliterating the queue would drop deliveries.'],
]);
const FINISHED_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed']);
const COMPLETED_RETRY = 'A delivered callback is sent again with POST /admin/deliveries/:id/replay, not by a retry.';

function hooks(queue: DeliveryQueue): BoardHooks {
  return {
    before: async ({ route, request }) => {
      const refused = REFUSED_ROUTES.get(route);
      if (refused) return { allow: false, status: 403, message: refused };
      const { queueStatus, jobId } = request.params as Record<string, string | undefined>;
      if (route === '/api/queues/:queueName/clean/:queueStatus' && !FINISHED_STATUSES.has(String(queueStatus))) {
        return { allow: false, status: 403, message: 'Only completed and failed jobs may be cleaned.' };
      }
      if (route === '/api/queues/:queueName/retry/:queueStatus' && queueStatus === 'completed') {
        return { allow: false, status: 403, message: COMPLETED_RETRY };
      }
      if (route === '/api/queues/:queueName/:jobId/retry' && (await queue.getJobState(String(jobId))) === 'completed') {
        return { allow: false, status: 403, message: COMPLETED_RETRY };
      }
      return { allow: true };
    },
    // Failure reasons and stack traces are written by the worker, whose messages hold no secret;
    // the log redaction rules (Authorization values, URL user info) apply anyway, as a second line.
    after: (_context, result) => ({ ...result, body: redact(result.body) as typeof result.body }),
  };
}

// allowCompletedRetries (which hides the retry button of completed jobs) is read by bull-board's
// base adapter but missing from the BullMQ adapter's option type.
const ADAPTER_OPTIONS: ConstructorParameters<typeof BullMQAdapter>[1] & { allowCompletedRetries: boolean } = {
  description: 'One job per delivery (an event for one notification target); the job id is the delivery id.',
  allowCompletedRetries: false,
};

// A <link> to a stylesheet or font on another host: bull-board's page fetches its fonts (IBM Plex)
// from one. Without them the board falls back to local fonts.
const OUTSIDE_LINK = /<link\b[^>]*\bhref="(https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/** The board's page, rendered by bull-board through Express, without links to other hosts: it asks nobody else for anything. */
const withoutOutsideLinks: RequestHandler = (_req, res, next) => {
  const render = res.render.bind(res);
  res.render = ((view: string, options?: object) => {
    render(view, options ?? {}, (error: Error | null, html?: string) => (error ? next(error) : res.send(String(html).replace(OUTSIDE_LINK, ''))));
  }) as typeof res.render;
  next();
};

/**
 * The Bull dashboard of the deliveries queue, behind HTTP Basic with the dashboard credentials.
 * Mount it at DASHBOARD_PATH, before the bearer-token admin routes.
 */
export function dashboardRouter(deps: { queue: DeliveryQueue; credentials: DashboardConfig }): Router {
  const serverAdapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: [new DeliveriesBoardAdapter(deps.queue, ADAPTER_OPTIONS)],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Herald deliveries' }, handlerHooks: hooks(deps.queue) },
  });
  const router = Router();
  router.use(requireBasicAuth(deps.credentials, 'Herald dashboard'), withoutOutsideLinks, serverAdapter.getRouter(), notFound);
  return router;
}
