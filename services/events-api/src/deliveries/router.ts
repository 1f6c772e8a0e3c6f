import { Router } from 'express';
import type { DeliveryFilter, DeliveryHistoryRepository, DeliveryStatus, ReplaySelection } from '@herald/db';
import { compileValidator, toDate, ValidationError } from '@herald/domain';
import { HttpError } from '../http/http-error';
import { pageOf, parseQuery } from '../http/query';
import { parseBody } from '../http/validate-body';
import type { ReplayAnswer } from './replay';
import { deliveriesQuerySchema, REPLAY_DEFAULT_LIMIT, REPLAY_SCOPE_FIELDS, replayBodySchema, type DeliveriesQuery, type ReplayBody } from './schemas';
import { deliveryDetailView, deliveryView } from './views';

const validateQuery = compileValidator<DeliveriesQuery>(deliveriesQuerySchema);
const validateReplayBody = compileValidator<ReplayBody>(replayBodySchema);

export interface DeliveriesRouterDependencies {
  history: DeliveryHistoryRepository;
  replay: (selection: ReplaySelection) => Promise<ReplayAnswer>;
  /** REPLAY_MAX_DAYS: the longest time range a bulk replay scoped by time alone may take. */
  replayMaxDays: number;
}

/**
 * Delivery history and replay for support and ops (mounted under /admin, behind the admin token):
 * list and filter deliveries, show one with every attempt, list an event's deliveries, and replay
 * one delivery or a bounded set of them.
 */
export function deliveriesRouter(deps: DeliveriesRouterDependencies): Router {
  const router = Router();

  router.get('/deliveries', async (req, res) => {
    const query = parseQuery(validateQuery, req.query);
    const { page, pageSize } = pageOf(query);
    const { count, deliveries } = await deps.history.list({ filter: filterOf(query), page, pageSize });
    res.json({ page, pageSize, count, totalPages: Math.ceil(count / pageSize), data: deliveries.map(deliveryView) });
  });

  // Before /deliveries/:id/replay would match it with the id "replay".
  router.post('/deliveries/replay', async (req, res) => {
    const body = parseBody(validateReplayBody, req.body ?? {});
    checkReplayScope(body, deps.replayMaxDays);
    res.status(202).json(await deps.replay({ filter: filterOf(body), limit: body.limit ?? REPLAY_DEFAULT_LIMIT }));
  });

  router.get('/deliveries/:id', async (req, res) => {
    const detail = await deps.history.find(req.params.id!);
    if (!detail) throw noDelivery(req.params.id!);
    res.json(deliveryDetailView(detail));
  });

  router.post('/deliveries/:id/replay', async (req, res) => {
    const answer = await deps.replay({ deliveryId: req.params.id! });
    if (answer.deliveries.length === 0) throw noDelivery(req.params.id!);
    res.status(202).json(answer);
  });

  router.get('/events/:eventId/deliveries', async (req, res) => {
    const eventId = req.params.eventId!;
    const deliveries = await deps.history.listForEvent(eventId);
    if (!deliveries) throw new HttpError(404, 'not_found', 'Not Found', `No event "${eventId}".`);
    res.json({ eventId, data: deliveries.map(deliveryDetailView) });
  });

  return router;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A bulk replay takes the deliveries of one program, merchant, event or target, or else of a time
 * range with both ends at most `maxDays` apart: a lone createdFrom (1970, say) would take everything.
 * Throws ValidationError naming the field to add or change.
 */
function checkReplayScope(body: ReplayBody, maxDays: number): void {
  if (REPLAY_SCOPE_FIELDS.some((field) => body[field] !== undefined)) return;
  const refuse = (pointer: string, message: string): never => {
    throw new ValidationError([{ pointer, message, keyword: 'scope' }]);
  };
  const range = `or both createdFrom and createdTo at most ${maxDays} days apart`;
  if (body.createdFrom === undefined && body.createdTo === undefined) {
    refuse(
      '',
      `must name ${REPLAY_SCOPE_FIELDS.slice(0, -1).join(', ')} or ${REPLAY_SCOPE_FIELDS.at(-1)}, ${range}, so that a replay never takes every delivery`,
    );
  }
  if (body.createdTo === undefined) refuse('/createdTo', `createdTo is required with createdFrom when no ${REPLAY_SCOPE_FIELDS.join(', ')} is given`);
  if (body.createdFrom === undefined) refuse('/createdFrom', `createdFrom is required with createdTo when no ${REPLAY_SCOPE_FIELDS.join(', ')} is given`);
  if (toDate(body.createdTo!).getTime() - toDate(body.createdFrom!).getTime() > maxDays * DAY_MS) {
    refuse('/createdTo', `must be at most ${maxDays} days after createdFrom when no ${REPLAY_SCOPE_FIELDS.join(', ')} is given (REPLAY_MAX_DAYS)`);
  }
}

/** The filter fields of a valid query or body, typed. */
function filterOf(input: DeliveriesQuery | ReplayBody): DeliveryFilter {
  return {
    ...(input.status === undefined ? {} : { status: input.status as DeliveryStatus }),
    ...(input.programId === undefined ? {} : { programId: input.programId }),
    ...(input.merchantId === undefined ? {} : { merchantId: input.merchantId }),
    ...(input.eventId === undefined ? {} : { eventId: input.eventId }),
    ...(input.targetId === undefined ? {} : { targetId: input.targetId }),
    ...(input.createdFrom === undefined ? {} : { createdFrom: toDate(input.createdFrom) }),
    ...(input.createdTo === undefined ? {} : { createdTo: toDate(input.createdTo) }),
  };
}

function noDelivery(id: string): HttpError {
  return new HttpError(404, 'not_found', 'Not Found', `No delivery "${id}".`);
}
