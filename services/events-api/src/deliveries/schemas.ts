import { DELIVERY_STATUSES } from '@herald/db';
import { eventSchema, TENANT_ID_PATTERN, UUID_PATTERN } from '@herald/domain';
import { pagingParameters } from '../http/query';

/** Replays take at most this many deliveries at once, and this many when no limit is given. */
const REPLAY_MAX_LIMIT = 1000;
export const REPLAY_DEFAULT_LIMIT = 100;

/**
 * The filter of the delivery list and of bulk replay, field by field; every field given must match.
 * Each is a string, as in a query string; the replay body uses the same rules.
 */
const filterProperties = {
  status: { type: 'string', enum: DELIVERY_STATUSES, description: 'pending, succeeded or failed.' },
  programId: { type: 'string', pattern: TENANT_ID_PATTERN, description: "Deliveries of this program's events." },
  merchantId: {
    type: 'string',
    pattern: TENANT_ID_PATTERN,
    description: "Deliveries of this merchant's events, to its own target and to its program's.",
  },
  eventId: { ...eventSchema.properties.id, description: 'Deliveries of this event.' },
  targetId: { type: 'string', pattern: UUID_PATTERN, description: 'Deliveries to this notification target.' },
  createdFrom: { type: 'string', format: 'date-time', description: 'Deliveries created at or after this time (RFC 3339).' },
  createdTo: { type: 'string', format: 'date-time', description: 'Deliveries created before this time (RFC 3339).' },
} as const;

/**
 * What a bulk replay must name besides a status, so that nobody replays every delivery by accident:
 * one of these ids, or else a time range with both ends (see REPLAY_MAX_DAYS).
 */
export const REPLAY_SCOPE_FIELDS = ['programId', 'merchantId', 'eventId', 'targetId'] as const;

/** Query of GET /admin/deliveries. Unknown parameters are refused. */
export const deliveriesQuerySchema = {
  $id: 'herald:admin/deliveries-query',
  type: 'object',
  additionalProperties: false,
  properties: { ...filterProperties, ...pagingParameters },
} as const;

/**
 * Query of GET /deliveries, the merchant API: the admin filter's fields a tenant may use, and its
 * events' objectId; the target is the key's own. Unknown parameters (programId, targetId…) are
 * refused, so a typo never silently lists everything.
 */
export const merchantDeliveriesQuerySchema = {
  $id: 'herald:api/deliveries-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    status: filterProperties.status,
    eventId: filterProperties.eventId,
    objectId: { ...eventSchema.properties.objectId, description: 'Deliveries of the events of this object.' },
    createdFrom: filterProperties.createdFrom,
    createdTo: filterProperties.createdTo,
    ...pagingParameters,
  },
} as const;

/** Body of POST /admin/deliveries/replay. */
export const replayBodySchema = {
  $id: 'herald:admin/replay-deliveries',
  type: 'object',
  additionalProperties: false,
  properties: {
    ...filterProperties,
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: REPLAY_MAX_LIMIT,
      description: `Most deliveries replayed, oldest first: 1 to ${REPLAY_MAX_LIMIT}, default ${REPLAY_DEFAULT_LIMIT}.`,
    },
  },
} as const;

type Filter = Partial<Record<keyof typeof filterProperties, string>>;
export type DeliveriesQuery = Filter & { page?: number; pageSize?: number };
export type ReplayBody = Filter & { limit?: number };
export type MerchantDeliveriesQuery = Partial<Record<'status' | 'eventId' | 'objectId' | 'createdFrom' | 'createdTo', string>> & {
  page?: number;
  pageSize?: number;
};
