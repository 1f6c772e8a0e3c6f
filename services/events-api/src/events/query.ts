import { EVENT_TYPES, OBJECT_TYPES, ORIGINS, compileValidator, toDate } from '@herald/domain';
import { pagesFoundThroughCounters, type EventListQuery } from '@herald/db';
import { HttpError } from '../http/http-error';
import { integerParameters, invalidQuery, pageOf, pagingParameters, parseQuery } from '../http/query';

/** The filter value `plan` selects events whose objectType is `subscription.plan` (the spec's note). */
const OBJECT_TYPE_FILTERS = ['plan', ...OBJECT_TYPES] as const;

/**
 * Query parameters of GET /events: strings, and the integers page and pageSize (see parseQuery).
 * The spec's are origin, page, pageSize and objectType; objectId, eventType, createdFrom,
 * createdTo and afterSequence are Herald's documented extensions. Anything else is refused, so a typo never silently lists everything.
 */
export const eventsQuerySchema = {
  $id: 'herald:api/events-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    origin: { type: 'string', enum: ORIGINS, description: 'Origin that triggered the event: api, widget or automated.' },
    ...pagingParameters,
    objectType: {
      type: 'string',
      enum: OBJECT_TYPE_FILTERS,
      description: 'Type of the object linked to the event. `plan` selects events whose objectType is subscription.plan.',
    },
    objectId: { type: 'string', minLength: 1, maxLength: 255, description: 'Extension: only the events of this object.' },
    eventType: { type: 'string', enum: EVENT_TYPES, description: 'Extension: only events of this type.' },
    createdFrom: { type: 'string', format: 'date-time', description: 'Extension: events created at or after this time.' },
    createdTo: { type: 'string', format: 'date-time', description: 'Extension: events created before this time.' },
    afterSequence: {
      type: 'integer',
      minimum: 0,
      maximum: 2_147_483_647,
      description:
        "Extension: with objectType and objectId, only that object's events whose sequence is greater, in sequence order " +
        '(0 lists them all): what a merchant missed after the last callback it processed.',
    },
  },
} as const;

type RawQuery = Partial<Record<Exclude<keyof (typeof eventsQuerySchema)['properties'], 'page' | 'pageSize' | 'afterSequence'>, string>> & {
  page?: number;
  pageSize?: number;
  afterSequence?: number;
};
const validateQuery = compileValidator<RawQuery>(eventsQuerySchema);
const INTEGERS = integerParameters(eventsQuerySchema);

/** Parses and checks the query; a bad or unknown parameter is a 400 naming it. */
export function parseEventsQuery(query: unknown): Omit<EventListQuery, 'scope'> {
  const q = parseQuery(validateQuery, query, INTEGERS);
  if (q.afterSequence !== undefined) requireObject(q);
  return {
    ...pageOf(q),
    ...(q.origin === undefined ? {} : { origin: q.origin }),
    ...(q.objectType === undefined ? {} : { objectType: q.objectType === 'plan' ? 'subscription.plan' : q.objectType }),
    ...(q.objectId === undefined ? {} : { objectId: q.objectId }),
    ...(q.eventType === undefined ? {} : { eventType: q.eventType }),
    ...(q.createdFrom === undefined ? {} : { createdFrom: toDate(q.createdFrom) }),
    ...(q.createdTo === undefined ? {} : { createdTo: toDate(q.createdTo) }),
    ...(q.afterSequence === undefined ? {} : { afterSequence: q.afterSequence }),
  };
}

/**
 * A sequence number counts within one object, so afterSequence needs the object named whole; a 400
 * naming each missing parameter otherwise. (objectType `plan` names subscription.plan, as always.)
 */
function requireObject(q: RawQuery): void {
  const missing = (['objectType', 'objectId'] as const).filter((name) => q[name] === undefined);
  if (missing.length === 0) return;
  throw invalidQuery(
    missing.map((parameter) => ({
      parameter,
      message: 'is required with afterSequence: a sequence number counts the events of one object, named by objectType and objectId',
    })),
  );
}

/**
 * Refuses a page that would skip more than `maxSkip` events: under eventType or objectId a page is
 * found by skipping every event before it, so its cost grows with its depth. Without them (the
 * spec's filters, createdFrom, createdTo) any page is found through the counters, at the same cost
 * whatever its depth.
 */
export function checkPageDepth(query: Omit<EventListQuery, 'scope'>, maxSkip: number): void {
  const skipped = (query.page - 1) * query.pageSize;
  if (skipped <= maxSkip || pagesFoundThroughCounters(query)) return;
  const deepest = Math.floor(maxSkip / query.pageSize) + 1;
  const message = `must be at most ${deepest} with pageSize ${query.pageSize} under eventType or objectId: a page may skip at most ${maxSkip} events`;
  throw new HttpError(
    400,
    'page_too_deep',
    'Page too deep',
    `Invalid query parameter: page ${message}. To read further, narrow the time range instead: set createdFrom to the createdAt of the last event read (or createdTo earlier) and start again at page 1.`,
    { errors: [{ parameter: 'page', message }], maxSkip },
  );
}

/**
 * Whether the query's cost can grow with the data, so that it takes one of its key's turns
 * (EVENTS_CONCURRENCY_PER_KEY) and spends its database time (EVENTS_EXPENSIVE_MS_PER_SECOND):
 * counted and paged over the index (eventType or objectId), whose cost grows with the tenant's
 * events; or bounded in time (createdFrom, createdTo), whose count walks the bucket counters over
 * the span, up to a year of days, a day of minutes and a minute of seconds (85 to 103 ms of
 * database time each, measured). Only the spec's other filters stay cheap: a few counter rows.
 */
export function isExpensive(query: Omit<EventListQuery, 'scope'>): boolean {
  return !pagesFoundThroughCounters(query) || query.createdFrom !== undefined || query.createdTo !== undefined;
}
