import { createBullBoard } from '@bull-board/api';
import type { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type RequestHandler } from 'express';
import type { DashboardConfig } from '@herald/config';
import { problemType, type FailedAuthThrottle } from '@herald/lifecycle';
import { redact, type Logger } from '@herald/logging';
import type { DashboardQueueAction, HeraldMetrics } from '@herald/metrics';
import type { DeliveryQueue } from '@herald/queue';
import { requireBasicAuth } from '../auth/basic-auth';
import { notFound } from '../http/error-handler';
import { boardScript, withBoardScript } from './board-page';
import { DeliveriesBoardAdapter } from './deliveries-adapter';
import { sendProblem } from '../http/plain-adapter';

/** Where the Bull dashboard lives. */
export const DASHBOARD_PATH = '/admin/queues';

type BoardHooks = NonNullable<NonNullable<Parameters<typeof createBullBoard>[0]['options']>['handlerHooks']>;

// What the dashboard may not do to the deliveries queue. Job data is Herald's (ids only, never a
// secret), so nobody adds jobs (the page's "duplicate" adds one) or edits their data by hand; a
// job's run time and priority are the retry policy's and the fair share's, and moved by hand they
// could hide a delivery (a delay to the year 2100 keeps it pending for ever); emptying the queue or
// cleaning unfinished jobs would drop deliveries the outbox counts as enqueued, which nothing would
// send again; and the worker does not send a delivered callback again, so retrying a completed job
// would do nothing (the replay API does it). Herald schedules no repeating jobs and its jobs have
// no children. Retrying failed jobs, promoting delayed ones and removing single jobs stay (the
// reconciler gives a removed pending delivery a new job), and so does cleaning finished jobs.
const REFUSED_ROUTES: ReadonlyMap<string, string> = new Map([
  ['/api/queues/:queueName/add', 'Jobs are added by Herald only.'],
  ['/api/queues/:queueName/:jobId/update-data', 'Job data is written by Herald only.'],
  ['/api/queues/:queueName/:jobId/delay', "A job's run time is the retry policy's (its backoff); promote a delayed job to run it now."],
  ['/api/queues/:queueName/:jobId/priority', "A job's priority is the fair share between targets'; it is not set by hand."],
  ['/api/queues/:queueName/job-schedulers/:schedulerId', 'Herald schedules no repeating jobs.'],
  ['/api/queues/:queueName/job-schedulers/:schedulerId/run', 'Herald schedules no repeating jobs.'],
  ['/api/queues/:queueName/job-schedulers/:schedulerId/remove', 'Herald schedules no repeating jobs.'],
  ['/api/queues/:queueName/:jobId/remove-unprocessed-children', "Herald's jobs have no children."],
  ['/api/queues/:queueName/empty', 'Emptying the queue would drop deliveries; use the replay API to send them again.'],
  ['/api/queues/:queueName/obliterate', 'Obliterating the queue would drop deliveries.'],
  // Kept in Redis and obeyed by every worker, silently: the workers' own WORKER_CONCURRENCY (and
  // the merchants' answers) set the pace, not a button.
  ['/api/queues/:queueName/concurrency', 'A queue-wide concurrency would throttle every worker; each worker takes WORKER_CONCURRENCY.'],
  ['/api/queues/:queueName/rate-limit', 'A queue-wide rate limit would throttle every worker; each worker takes WORKER_CONCURRENCY.'],
  ['/api/queues/:queueName/rate-limit/release', 'The queue has no rate limit to release.'],
]);
// Every change the dashboard allows, logged with the dashboard user and what it acted on (the
// job, or the status of the jobs) and counted by action. Pausing and resuming stop or restart
// every callback, so they are warnings; the rest is ops' daily work.
const AUDITED_ROUTES: ReadonlyMap<string, { action: DashboardQueueAction; message: string; level: 'warn' | 'info' }> = new Map([
  ['/api/queues/:queueName/pause', { action: 'pause', message: 'dashboard: queue paused', level: 'warn' }],
  ['/api/queues/pause', { action: 'pause', message: 'dashboard: queue paused', level: 'warn' }],
  ['/api/queues/:queueName/resume', { action: 'resume', message: 'dashboard: queue resumed', level: 'warn' }],
  ['/api/queues/resume', { action: 'resume', message: 'dashboard: queue resumed', level: 'warn' }],
  ['/api/queues/:queueName/:jobId/retry', { action: 'retry', message: 'dashboard: job retried', level: 'info' }],
  ['/api/queues/:queueName/retry/:queueStatus', { action: 'retry', message: 'dashboard: jobs retried', level: 'info' }],
  ['/api/queues/:queueName/:jobId/promote', { action: 'promote', message: 'dashboard: job promoted', level: 'info' }],
  ['/api/queues/:queueName/promote', { action: 'promote', message: 'dashboard: delayed jobs promoted', level: 'info' }],
  ['/api/queues/:queueName/:jobId/clean', { action: 'remove', message: 'dashboard: job removed', level: 'info' }],
  ['/api/queues/:queueName/clean/:queueStatus', { action: 'clean', message: 'dashboard: jobs cleaned', level: 'info' }],
  ['/api/metrics/history/purge', { action: 'purge_metrics', message: "dashboard: the board's metrics history purged", level: 'info' }],
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
        const { jobId, queueStatus } = context.request.params as Record<string, string | undefined>;
        audit.logger[audited.level](audited.message, {
          user: audit.user,
          queue: queue.name,
          ...(jobId === undefined ? {} : { jobId }),
          ...(queueStatus === undefined ? {} : { status: queueStatus }),
        });
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

/**
 * The board's page, rendered by bull-board through Express, without links to other hosts (it asks
 * nobody else for anything) and with Herald's script (board-page.ts).
 */
const withoutOutsideLinks: RequestHandler = (_req, res, next) => {
  const render = res.render.bind(res);
  res.render = ((view: string, options?: object) => {
    render(view, options ?? {}, (error: Error | null, html?: string) =>
      error ? next(error) : res.send(withBoardScript(String(html).replace(OUTSIDE_LINK, ''))),
    );
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
  /** Which delayed jobs wait for the previous callback of their object, and for which delivery (deliveryHistoryRepository's waitingFor). */
  waitingFor: (deliveryIds: readonly string[]) => Promise<ReadonlyMap<string, string>>;
  credentials: DashboardConfig;
  failedAuth: FailedAuthThrottle;
  logger: Logger;
  metrics: Pick<HeraldMetrics, 'dashboardQueueAction'>;
}): Router {
  const serverAdapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
  const audit = { user: deps.credentials.username, logger: deps.logger, metrics: deps.metrics };
  createBullBoard({
    queues: [new DeliveriesBoardAdapter(deps.queue, ADAPTER_OPTIONS, deps.waitingFor)],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Herald deliveries' }, handlerHooks: hooks(deps.queue, audit) },
  });
  // bull-board serves from an Express app of its own, which would name Express in every answer.
  const board = serverAdapter.getRouter() as Router & { disable?: (setting: string) => void };
  board.disable?.('x-powered-by');
  const router = Router();
  router.use(
    requireBasicAuth(deps.credentials, 'Herald dashboard', deps.failedAuth),
    problemErrors,
    withoutOutsideLinks,
    revalidatedAssets,
    boardScript,
    board,
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
