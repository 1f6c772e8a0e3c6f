import {
  AUTO_DISABLED_REASON,
  CALLBACK_AUTH_MODES,
  DEFERRAL_REASONS,
  EVENT_TYPES,
  eventSchema,
  OBJECT_TYPES,
  PAGE_ENVELOPE,
  TARGET_ORDERINGS,
} from '@herald/domain';
import { DELIVERY_STATUSES } from '@herald/db';

// Schemas of what the merchant API answers besides events (its delivery history, its target), by component
// name. additionalProperties is false throughout: the tests check real answers against them, so a
// field added to an answer (a target id, a URL) fails until it is documented here on purpose.

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const ERROR_KIND_DESCRIPTION =
  'Why the attempt failed when no status code tells: timeout, connection, tls, address_refused, redirect, http_status (the answer was not a 2xx), ' +
  "oauth (the token request failed), configuration (the target's settings cannot be used), target_unavailable (the target was switched off); null when it succeeded.";

const deliveryProperties = {
  id: { type: 'string', format: 'uuid', description: 'The delivery: one callback of one event to your notification target.' },
  eventId: eventSchema.properties.id,
  objectType: eventSchema.properties.objectType,
  objectId: eventSchema.properties.objectId,
  status: {
    type: 'string',
    enum: [...DELIVERY_STATUSES],
    description: 'pending (waiting for an attempt, or for a retry), succeeded (your endpoint answered 2xx) or failed (every attempt failed).',
  },
  attemptsMade: { type: 'integer', minimum: 0, description: 'HTTP attempts made so far.' },
  lastAttemptAt: { ...nullableDateTime, description: 'When the last attempt started; null before the first.' },
  lastStatusCode: { type: ['integer', 'null'], description: 'The status code of the last attempt; null when it got no answer or none was made.' },
  lastErrorKind: { type: ['string', 'null'], description: `Of the last attempt. ${ERROR_KIND_DESCRIPTION}` },
  createdAt: { ...dateTime, description: 'When Herald created the delivery (with its event).' },
  completedAt: { ...nullableDateTime, description: 'When it succeeded or failed for good; null while pending.' },
  waitingFor: {
    type: ['string', 'null'],
    format: 'uuid',
    description:
      "A target with ordering object: the delivery of the same object's previous event that this one waits for (sent once that one is delivered or has failed for good); null when it waits for none.",
  },
} as const;

const DELIVERY_REQUIRED = Object.keys(deliveryProperties);

/** The merchant API's delivery answers, by component name. */
export const merchantDeliverySchemas = {
  Delivery: {
    type: 'object',
    description: 'One callback to your notification target and where it stands.',
    additionalProperties: false,
    required: DELIVERY_REQUIRED,
    properties: deliveryProperties,
  },
  DeliveryPage: {
    type: 'object',
    description: 'One page of deliveries, newest first: the response of GET /deliveries.',
    additionalProperties: false,
    required: PAGE_ENVELOPE.required,
    properties: {
      ...PAGE_ENVELOPE.properties,
      data: { type: 'array', items: ref('Delivery'), description: 'The deliveries of the page.' },
    },
  },
  DeliveryDetail: {
    type: 'object',
    description: 'One delivery with every attempt and its deferrals: the response of GET /deliveries/{id}.',
    additionalProperties: false,
    required: [...DELIVERY_REQUIRED, 'deferrals', 'attempts'],
    properties: {
      ...deliveryProperties,
      deferrals: {
        type: 'object',
        description:
          "Times the callback was held back without an HTTP attempt, because your target's circuit breaker was open, it had as many callbacks in flight as allowed, or (ordering object) the previous callback of the object had no final outcome yet. Not attempts: they spend none.",
        additionalProperties: false,
        required: ['count', 'lastAt', 'lastReason'],
        properties: {
          count: { type: 'integer', minimum: 0 },
          lastAt: nullableDateTime,
          lastReason: { type: ['string', 'null'], enum: [...DEFERRAL_REASONS, null] },
        },
      },
      attempts: {
        type: 'array',
        description: 'Every HTTP attempt, oldest first.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['number', 'startedAt', 'durationMs', 'statusCode', 'errorKind', 'responseBody'],
          properties: {
            number: { type: 'integer', minimum: 1, description: '1 for the first attempt; attempts after a replay continue the count.' },
            startedAt: dateTime,
            durationMs: { type: 'integer', minimum: 0 },
            statusCode: { type: ['integer', 'null'], description: 'The status code your endpoint answered; null when there was no answer.' },
            errorKind: { type: ['string', 'null'], description: ERROR_KIND_DESCRIPTION },
            responseBody: {
              type: ['string', 'null'],
              description: 'The first bytes of your endpoint\'s answer, as stored, with credentials it echoed replaced by "[REDACTED]".',
            },
          },
        },
      },
    },
  },
  Recovery: {
    type: 'object',
    description:
      'A recovery: the callbacks your target had not received in a window, sent once more, and how they are going. The response of POST /deliveries/recover and GET /deliveries/recoveries/{id}. The counts are of the callbacks it queued.',
    additionalProperties: false,
    required: [
      'id',
      'status',
      'from',
      'to',
      'coveredTo',
      'complete',
      'createdAt',
      'finishedAt',
      'queued',
      'neverSent',
      'pending',
      'sent',
      'delivered',
      'failed',
    ],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'The recovery, to follow at GET /deliveries/recoveries/{id}.' },
      status: {
        type: 'string',
        enum: ['running', 'finished'],
        description:
          'running while a callback it queued is pending (the next recovery of the target waits for it: 409); finished once each succeeded or failed for good.',
      },
      from: { ...dateTime, description: "The window asked for, on the events' createdAt: from (inclusive)…" },
      to: { ...dateTime, description: '…to (exclusive).' },
      coveredTo: {
        ...dateTime,
        description:
          'Every event created before this time was taken: `to`, or earlier when the window held more callbacks than one recovery queues (RECOVERY_MAX_DELIVERIES); recover from here once this one has finished.',
      },
      complete: { type: 'boolean', description: 'Whether it reached `to` (coveredTo = to).' },
      createdAt: dateTime,
      finishedAt: { ...nullableDateTime, description: 'When the last callback it queued succeeded or failed for good; null while running.' },
      queued: { type: 'integer', minimum: 0, description: 'Callbacks queued: failed ones sent again, and those of events never sent (neverSent).' },
      neverSent: {
        type: 'integer',
        minimum: 0,
        description:
          'Of those, callbacks of events your target had never been sent: it was switched off when they happened, or its filters did not take them then.',
      },
      pending: { type: 'integer', minimum: 0, description: 'Of those, still waiting for an attempt or a retry.' },
      sent: { type: 'integer', minimum: 0, description: 'Of those, attempted at least once since the recovery queued them.' },
      delivered: { type: 'integer', minimum: 0, description: 'Of those, delivered: your endpoint answered 2xx.' },
      failed: { type: 'integer', minimum: 0, description: 'Of those, failed again for good (every retry failed).' },
    },
  },
  NotificationTargetStatus: {
    type: 'object',
    description: "The caller's notification target and how its callbacks are going: the response of GET /notification-target. Never a credential.",
    additionalProperties: false,
    required: [
      'url',
      'authMode',
      'notifications',
      'enabled',
      'ordering',
      'disabledReason',
      'disabledAt',
      'breaker',
      'pausedUntil',
      'window',
      'lastSuccessAt',
      'failingSince',
      'autoDisableAt',
      'warning',
      'egressAddresses',
    ],
    properties: {
      url: { type: 'string', description: 'Where callbacks go, every query string value shown as ***.' },
      authMode: {
        type: 'string',
        enum: [...CALLBACK_AUTH_MODES],
        description: 'How callbacks authenticate: none, basic (HTTP Basic) or oauth (client credentials).',
      },
      notifications: {
        type: 'object',
        description: 'Which notifications the target takes; an absent list means all.',
        additionalProperties: false,
        properties: {
          objectTypes: { type: 'array', items: { type: 'string', enum: [...OBJECT_TYPES] } },
          eventTypes: { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] } },
        },
      },
      enabled: { type: 'boolean', description: 'Whether callbacks are sent. Only support switches a target on or off.' },
      ordering: {
        type: 'string',
        enum: [...TARGET_ORDERINGS],
        description:
          "none: callbacks in any order; object: each object's callbacks in the sequence order of its events, each once the previous one has its final outcome. Support sets it.",
      },
      disabledReason: {
        type: ['string', 'null'],
        enum: [AUTO_DISABLED_REASON, 'switched-off', null],
        description: `Why it is off: ${AUTO_DISABLED_REASON} (every callback failed for too long) or switched-off (by support); null while on.`,
      },
      disabledAt: { ...nullableDateTime, description: 'When it was switched off; null while on.' },
      window: {
        type: ['integer', 'null'],
        minimum: 1,
        description:
          'How many callbacks Herald keeps in flight to your endpoint now, when your 429s, 503s or timeouts made it slow down; it grows back with each 200. Null at the full limit.',
      },
      pausedUntil: {
        ...nullableDateTime,
        description:
          'While your endpoint has asked Herald to wait (a 429 or 503 with Retry-After): until when. No callback is sent meanwhile, and the waiting ones spend no attempt. Null otherwise.',
      },
      breaker: {
        type: ['object', 'null'],
        description:
          "The target's circuit breaker: open after failures in a row, when callbacks wait without being sent; half_open while one callback tests the target. Null while it cannot be read.",
        additionalProperties: false,
        required: ['state', 'openedAt', 'halfOpenAt'],
        properties: {
          state: { type: 'string', enum: ['closed', 'open', 'half_open'] },
          openedAt: { ...nullableDateTime, description: 'When it (last) opened, while open or half-open.' },
          halfOpenAt: { ...nullableDateTime, description: 'When it half-opens (open) or half-opened (half_open).' },
        },
      },
      lastSuccessAt: { ...nullableDateTime, description: 'When a callback last succeeded (to within a minute); null when none has.' },
      failingSince: { ...nullableDateTime, description: 'Since when every callback has failed; null when the last one succeeded or none failed.' },
      autoDisableAt: {
        ...nullableDateTime,
        description:
          'If every callback keeps failing, the first failed callback from this time switches the target off. Null while it is not failing, is off, or auto-disable is turned off.',
      },
      warning: {
        type: ['string', 'null'],
        description: 'Set once every callback has failed for a day or more: what is failing and the date auto-disable switches the target off.',
      },
      egressAddresses: {
        type: 'array',
        items: { type: 'string' },
        description:
          'The addresses callbacks leave from (IP addresses or CIDR ranges), for the receiver to allow-list: the spec asks it of a target without authentication. Empty when the operator has not stated them.',
      },
    },
  },
} as const;
