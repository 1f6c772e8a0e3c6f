import { createBullBoard } from '@bull-board/api';
import type { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type RequestHandler } from 'express';
import type { DashboardConfig } from '@herald/config';
import { problemType } from '@herald/lifecycle';
import { redact, type Logger } from '@herald/logging';
import type { DashboardQueueAction, HeraldMetrics } from '@herald/metrics';
import type { DeliveryQueue } from '@herald/queue';
import { requireBasicAuth } from '../auth/basic-auth';
import type { FailedAuthThrottle } from '../auth/failed-auth-throttle';
import { notFound } from '../http/error-handler';
import { DeliveriesBoardAdapter } from './deliveries-adapter';
import { sendProblem } from '../http/plain-adapter';

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
  // Kept in Redis and obeyed by every worker, silently: the workers' own WORKER_CONCURRENCY (and
  // the merchants' answers) set the pace, not a button.
  ['/api/queues/:queueName/concurrency', 'A queue-wide concurrency would throttle every worker; each worker takes WORKER_CONCURRENCY.'],
  ['/api/queues/:queueName/rate-limit', 'A queue-wide rate limit would throttle every worker; each worker takes WORKER_CONCURRENCY.'],
]);
// Kept for incidents (stop sending while a merchant or the network is down), but each one is
// logged with the dashboard user and counted.
const AUDITED_ROUTES: ReadonlyMap<string, { action: DashboardQueueAction; message: string }> = new Map([
  ['/api/queues/:queueName/pause', { action: 'pause', message: 'dashboard: queue paused' }],
  ['/api/queues/pause', { action: 'pause', message: 'dashboard: queue paused' }],
  ['/api/queues/:queueName/resume', { action: 'resume', message: 'dashboard: queue resumed' }],
  ['/api/queues/resume', { action: 'resume', message: 'dashboard: queue resumed' }],
] as const);
const FINISHED_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed']);
const COMPLETED_RETRY = 'A delivered callback is sent again with POST /admin/deliveries/:id/replay, not by a retry.';

interface Audit {
  /** The one dashboard user (DASHBOARD_USERNAME), who passed HTTP Basic. */
  user: string;
  logger: Logger;
  metrics: Pick<HeraldMetrics, 'dashboardQueueAction'>;
}

function hooks(queue: DeliveryQueue, audit: Audit): BoardHooks {
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
    after: (context, result) => {
      const audited = AUDITED_ROUTES.get(context.route);
      if (audited && (result.status ?? 200) < 400) {
        audit.logger.warn(audited.message, { user: audit.user, queue: queue.name });
        audit.metrics.dashboardQueueAction(audited.action);
      }
      return { ...result, body: redact(result.body) as typeof result.body };
    },
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
 * bull-board's own scripts, styles and images (under /static/, with its ETags) are the same for
 * everyone: a browser may keep them and revalidate them, rather than fetch about a megabyte again
 * at every visit. The page and the JSON API, which show job data, stay no-store (app.ts).
 */
const revalidatedAssets: RequestHandler = (req, res, next) => {
  if (req.path.startsWith('/static/')) res.setHeader('Cache-Control', 'no-cache');
  next();
};

/**
 * The Bull dashboard of the deliveries queue, behind HTTP Basic with the dashboard credentials.
 * Mount it at DASHBOARD_PATH, before the bearer-token admin routes.
 */
export function dashboardRouter(deps: {
  queue: DeliveryQueue;
  credentials: DashboardConfig;
  failedAuth: FailedAuthThrottle;
  logger: Logger;
  metrics: Pick<HeraldMetrics, 'dashboardQueueAction'>;
}): Router {
  const serverAdapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
  const audit = { user: deps.credentials.username, logger: deps.logger, metrics: deps.metrics };
  createBullBoard({
    queues: [new DeliveriesBoardAdapter(deps.queue, ADAPTER_OPTIONS)],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Herald deliveries' }, handlerHooks: hooks(deps.queue, audit) },
  });
  const router = Router();
  router.use(
    requireBasicAuth(deps.credentials, 'Herald dashboard', deps.failedAuth),
    problemErrors,
    withoutOutsideLinks,
    revalidatedAssets,
    serverAdapter.getRouter(),
    notFound,
  );
  return router;
}

/**
 * bull-board answers its API's errors (refusals of the hooks above, unknown queues and jobs, bad
 * parameters) as its own `{error, message}` JSON; this turns every such answer into the
 * problem+json every other Herald error is. For a 4xx, bull-board's two members stay as
 * extensions, since the dashboard page shows them in its error notice. A 5xx keeps its status but
 * not bull-board's message (an exception's text).
 */
const problemErrors: RequestHandler = (_req, res, next) => {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if (res.statusCode < 400) return json(body);
    const { error, message } = (body ?? {}) as { error?: unknown; message?: unknown };
    const status = res.statusCode;
    const title = STATUS_TITLES[status] ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request');
    sendProblem(res, {
      type: problemType(status >= 500 ? 'internal' : (DASHBOARD_PROBLEM_CODES[status] ?? 'bad_request')),
      title,
      status,
      ...(status < 500 && typeof message === 'string' ? { detail: message } : {}),
      ...(status < 500 && typeof error === 'string' ? { error } : {}),
      ...(status < 500 && typeof message === 'string' ? { message } : {}),
    });
    return res;
  };
  next();
};

const STATUS_TITLES: Readonly<Record<number, string>> = { 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict' };
const DASHBOARD_PROBLEM_CODES: Readonly<Record<number, string>> = { 400: 'bad_request', 403: 'forbidden', 404: 'not_found', 409: 'conflict' };
