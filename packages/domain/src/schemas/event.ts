import { paymentSeriesSchema } from './payment-series';
import { prefixedUuidPattern, ref, schemaId } from './schema-helpers';

/** Allowed values of Event.sourceSystem. */
const SOURCE_SYSTEMS = ['subscription-module'] as const;
/** Allowed values of Event.origin: an API call, an action in the widget, or the service backend. */
export const ORIGINS = ['api', 'widget', 'automated'] as const;
/** Allowed values of Event.eventType. */
export const EVENT_TYPES = ['updated', 'created', 'deleted', 'status.updated', 'billing.expires', 'billing.updated', 'billing.scheduled'] as const;
/** Allowed values of Event.objectType. */
export const OBJECT_TYPES = [
  'subscription',
  'subscription.plan',
  'billing-cycle',
  'payment-series',
  'transactions',
  'manual-retry',
  'payment',
  'refund',
] as const;

/** The fields of an event, shared by the stored Event and the producer's IngestEvent. */
export const eventProperties = {
  id: { type: 'string', pattern: prefixedUuidPattern('Event'), description: 'The literal prefix Event, a hyphen, then a UUID.' },
  createdAt: { type: 'string', format: 'date-time', description: 'Creation time of the event.' },
  sourceSystem: { type: 'string', enum: SOURCE_SYSTEMS, description: 'The system the event comes from.' },
  origin: {
    type: 'string',
    enum: ORIGINS,
    description: 'What triggered the event: an API call, an action in the widget, or the service backend.',
  },
  eventType: { type: 'string', enum: EVENT_TYPES, description: 'The kind of event.' },
  objectId: {
    type: 'string',
    minLength: 1,
    // The spec gives no limit; 255 bounds storage and indexes and fits any id the platform issues.
    maxLength: 255,
    description: 'Identifier of the object linked to the event and notification. 1 to 255 characters.',
  },
  objectType: { type: 'string', enum: OBJECT_TYPES, description: 'Type of the object linked to the event.' },
  metadata: {
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'Additional identifiers and details; property names are free, property values are strings.',
  },
  data: {
    type: 'array',
    // A union that admits any object, so it never decides validity (paymentSeriesDataRule does):
    // it is there for code generators, which drop if/then and would otherwise type an item as an
    // object with no members, refusing a Payment Series.
    items: {
      anyOf: [
        ref(paymentSeriesSchema),
        { type: 'object', additionalProperties: true, description: 'The data of an object of another type: its shape is not specified.' },
      ],
    },
    description:
      'Data of the object linked to the event. Items are Payment Series when objectType is payment-series; ' +
      'for other object types their shape is not specified.',
  },
  context: { type: 'string', description: 'The request body, for events whose origin is api or widget.' },
} as const;

/** Required fields of an event other than the server-assigned id and createdAt. */
export const EVENT_CONTENT_REQUIRED = ['origin', 'eventType', 'objectId', 'objectType'] as const;

/** The items of data are Payment Series when objectType is payment-series. */
export const paymentSeriesDataRule = {
  if: { required: ['objectType'], properties: { objectType: { const: 'payment-series' } } },
  then: { properties: { data: { type: 'array', items: ref(paymentSeriesSchema) } } },
} as const;

const { metadata, data, context, ...identity } = eventProperties;

/** Event: one event processed for an object, as listed by GET /events. */
export const eventSchema = {
  $id: schemaId('event'),
  title: 'Event',
  description: 'An event processed for an object (for example a subscription or a payment series).',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'createdAt', ...EVENT_CONTENT_REQUIRED, 'sequence'],
  properties: {
    ...identity,
    // Herald's addition to the spec's Event: the producer never sends it (the ingest assigns it).
    sequence: {
      type: 'integer',
      minimum: 1,
      maximum: 2_147_483_647,
      description:
        "Extension: the event's place among the events of its object (same program, merchant, objectType and objectId), " +
        'from 1, in the order Herald stored them, without gaps. A merchant that sees a gap has missed a callback: ' +
        'GET /events?objectType=…&objectId=…&afterSequence=… lists what follows a number.',
    },
    metadata,
    data,
    context,
  },
  allOf: [paymentSeriesDataRule],
} as const;
