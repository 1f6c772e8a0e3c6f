import {
  CALLBACK_AUTH_MODES,
  DEFERRAL_REASONS,
  DELIVERY_POLICY_FIELDS,
  deliveryPolicySchema,
  EVENT_TYPES,
  OAUTH_TOKEN_REQUESTS,
  OBJECT_TYPES,
  TARGET_ORDERINGS,
} from '@herald/domain';
import { DELIVERY_STATUSES } from '@herald/db';

// Schemas of what the events-api answers that no request validator holds: the problem details
// every error is, and the admin API's records. The tests check real answers against them.

const string = { type: 'string' } as const;
const nullableString = { type: ['string', 'null'] } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

type ObjectSchema = { type: 'object'; required: readonly string[]; properties: Record<string, unknown>; description?: string };

// An object schema with more members. Written out rather than as allOf: generated clients type a
// flat object best, and a closed schema (no unknown member) can only be checked whole.
function extended(base: ObjectSchema, more: { required?: readonly string[]; properties: Record<string, unknown>; description?: string }): ObjectSchema {
  return {
    ...base,
    ...(more.description ? { description: more.description } : {}),
    required: [...base.required, ...(more.required ?? [])],
    properties: { ...base.properties, ...more.properties },
  };
}

/** A page of a list of the admin API: `{ page, pageSize, count, totalPages, data }`. */
function page(item: unknown, description: string) {
  return {
    type: 'object',
    description,
    required: ['page', 'pageSize', 'count', 'totalPages', 'data'],
    properties: {
      page: { type: 'integer', minimum: 1 },
      pageSize: { type: 'integer', minimum: 1 },
      count: { type: 'integer', minimum: 0, description: 'How many match in all.' },
      totalPages: { type: 'integer', minimum: 0 },
      data: { type: 'array', items: item },
    },
  } as const;
}

/** RFC 9457 problem details, with every extension member GET /events sends. */
export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status'],
  properties: {
    type: { type: 'string', description: 'A relative URI naming the kind of problem, e.g. /problems/invalid_query.' },
    title: { type: 'string', description: 'A short summary of the kind of problem.' },
    status: { type: 'integer', description: 'The HTTP status code.' },
    detail: { type: 'string', description: 'What went wrong this time, and how to fix it.' },
    errors: {
      type: 'array',
      description: 'One entry per offending field, query parameter, header or path segment.',
      items: {
        type: 'object',
        required: ['message'],
        properties: {
          pointer: { type: 'string', description: 'JSON pointer (RFC 6901) of the offending body field; "" is the whole body.' },
          parameter: { type: 'string', description: 'The offending query parameter.' },
          header: { type: 'string', description: 'The offending request header.' },
          segment: { type: 'string', description: 'The offending path segment, as sent.' },
          message: { type: 'string', description: 'What is wrong with it, and how to fix it.' },
        },
      },
    },
    header: { type: 'string', description: 'The request header to fix (401: the credentials header).' },
  },
} as const;

/** Problem details of the ingest and admin API: those of GET /events, and the members only the ingest sends. */
export const internalProblemSchema = {
  ...problemSchema,
  properties: {
    ...problemSchema.properties,
    index: { type: 'integer', minimum: 0, description: 'The position in the batch of the event at fault (0 for a single event).' },
    field: { type: 'string', description: 'The field naming an unknown tenant: programId or merchantId.' },
    eventId: { type: 'string', description: 'The id of the event stored before with different content.' },
    tokenEndpoint: {
      type: 'object',
      description: "credentials_rejected: the token endpoint's answer to the check (never a token).",
      required: ['failure'],
      properties: {
        failure: {
          type: 'string',
          description:
            'How the token request failed: http_status, redirect (never followed), invalid_response, or no complete answer (timeout, connection, tls, address_refused).',
        },
        status: { type: 'integer', description: "The endpoint's HTTP status, when it answered." },
        error: { type: 'string', description: 'The RFC 6749 §5.2 error code of its answer, e.g. invalid_client.' },
        errorDescription: { type: 'string', description: 'Its error_description, bounded and redacted.' },
      },
    },
  },
} as const;

const deliveryRecord: ObjectSchema = {
  type: 'object',
  required: ['id', 'eventId', 'targetId', 'programId', 'merchantId', 'status', 'attemptsMade', 'createdAt', 'updatedAt', 'deferrals'],
  properties: {
    id: string,
    eventId: string,
    targetId: string,
    programId: string,
    merchantId: { ...nullableString, description: "The event's merchant; null for an event of the program as a whole." },
    status: { type: 'string', enum: [...DELIVERY_STATUSES] },
    attemptsMade: { type: 'integer', minimum: 0 },
    lastStatusCode: { type: ['integer', 'null'] },
    lastError: nullableString,
    createdAt: dateTime,
    updatedAt: dateTime,
    enqueuedAt: nullableDateTime,
    completedAt: nullableDateTime,
    waitingFor: {
      ...nullableString,
      description: "An ordered target's: the earlier delivery of the same object this one waits for; null when it waits for none.",
    },
    deferrals: {
      type: 'object',
      description:
        "Times the job was sent back to wait without a POST (the target's breaker open, the target at its in-flight limit, or an ordered target's previous callback of the object without its final outcome yet): not attempts.",
      required: ['count', 'lastAt', 'lastReason'],
      properties: { count: { type: 'integer', minimum: 0 }, lastAt: nullableDateTime, lastReason: { enum: [...DEFERRAL_REASONS, null] } },
    },
  },
};

const apiKey: ObjectSchema = {
  type: 'object',
  description: 'An API key as admins see it: never the key or its hash.',
  required: ['id', 'prefix', 'programId', 'merchantId', 'createdAt', 'revokedAt'],
  properties: {
    id: string,
    prefix: { type: 'string', description: "The key's first characters, to tell keys apart." },
    programId: nullableString,
    merchantId: nullableString,
    createdAt: dateTime,
    revokedAt: nullableDateTime,
  },
};

const breaker = {
  type: ['object', 'null'],
  description: "The target's circuit breaker across every worker; null when Redis could not be read.",
  required: ['state', 'consecutiveFailures', 'openedAt', 'halfOpenAt', 'probeInFlight'],
  properties: {
    state: { enum: ['closed', 'open', 'half_open'], description: 'closed: callbacks flow; open: every job is deferred; half_open: one probe at a time.' },
    consecutiveFailures: { type: 'integer', minimum: 0, description: 'Failures in a row so far, toward TARGET_BREAKER_FAILURES.' },
    openedAt: nullableDateTime,
    halfOpenAt: nullableDateTime,
    probeInFlight: { type: 'boolean' },
  },
} as const;

const targetHealth = {
  type: 'object',
  description:
    "How callbacks to the target have been going. GET of one target adds the gate's view from Redis (breaker, inFlight, deferred, pausedUntil, window: null when Redis could not be read).",
  required: ['lastSuccessAt', 'failingSince'],
  properties: {
    lastSuccessAt: { ...nullableDateTime, description: 'When a callback last got its 200; null when none ever did.' },
    failingSince: { ...nullableDateTime, description: 'Since when every attempt has failed; null when the last one succeeded or none failed.' },
    breaker,
    inFlight: { type: ['integer', 'null'], minimum: 0, description: 'Slots of the target taken now, across every worker (TARGET_MAX_IN_FLIGHT bounds it).' },
    deferred: { type: ['integer', 'null'], minimum: 0, description: 'Jobs waiting after a deferral, not yet let in again.' },
    pausedUntil: {
      ...nullableDateTime,
      description: "While the target waits out its receiver's Retry-After (a 429 or 503): until when, its breaker open meanwhile. Null otherwise.",
    },
    window: {
      type: ['integer', 'null'],
      minimum: 1,
      description:
        "Flow control: the in-flight window the receiver's pushback (429, 503, timeouts) left, below the target's limit; it grows back with each success. Null at the full limit.",
    },
  },
} as const;

/** The policy in force: each field's value, from the target's own policy or the global default. */
const effectiveDelivery = {
  type: 'object',
  description: "The delivery policy in force: each field's value and whether it is the target's own (target) or the global default (default).",
  required: DELIVERY_POLICY_FIELDS,
  properties: Object.fromEntries(
    DELIVERY_POLICY_FIELDS.map((name) => [
      name,
      {
        type: 'object',
        required: ['value', 'source'],
        properties: {
          value: {
            type: [deliveryPolicySchema.properties[name].type, 'null'],
            minimum: 0,
            description: `${deliveryPolicySchema.properties[name].description} null: no limit.`,
          },
          source: { enum: ['target', 'default'] },
        },
      },
    ]),
  ),
} as const;

const notificationTarget: ObjectSchema = {
  type: 'object',
  description: 'A notification target as admins see it: the password is always masked.',
  required: [
    'id',
    'programId',
    'merchantId',
    'url',
    'auth',
    'notifications',
    'enabled',
    'ordering',
    'disabledReason',
    'disabledAt',
    'delivery',
    'effectiveDelivery',
    'health',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: string,
    programId: string,
    merchantId: { ...nullableString, description: "Set for a merchant's target, null for the program's own." },
    url: string,
    auth: {
      type: 'object',
      required: ['mode'],
      properties: {
        mode: { enum: [...CALLBACK_AUTH_MODES] },
        username: { type: 'string', description: 'basic and oauth.' },
        password: { const: '********', description: 'basic and oauth: always this mask.' },
        authUrl: { type: 'string', description: 'oauth.' },
        tokenRequest: { enum: [...OAUTH_TOKEN_REQUESTS], description: 'oauth: how the token is requested.' },
        scope: { type: 'string', description: 'oauth: the scope asked for, when one is.' },
      },
    },
    notifications: {
      type: 'object',
      properties: {
        objectTypes: { type: 'array', items: { enum: [...OBJECT_TYPES] } },
        eventTypes: { type: 'array', items: { enum: [...EVENT_TYPES] } },
      },
    },
    enabled: { type: 'boolean' },
    ordering: { enum: [...TARGET_ORDERINGS], description: "In what order callbacks go: none, or object (each object's in sequence order)." },
    disabledReason: { type: ['string', 'null'], description: 'Why it is switched off: auto-disabled, or null (on, or switched off by an admin).' },
    disabledAt: { ...nullableDateTime, description: 'When it was switched off; null while it is on.' },
    delivery: { ...deliveryPolicySchema, description: 'The delivery policy set on the target: only the fields an admin set (see effectiveDelivery).' },
    effectiveDelivery,
    health: targetHealth,
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

const deliveryDetail = extended(deliveryRecord, {
  required: ['target', 'attempts'],
  properties: {
    target: {
      type: 'object',
      required: ['id', 'owner', 'url', 'enabled'],
      properties: { id: string, owner: { enum: ['program', 'merchant'] }, url: string, enabled: { type: 'boolean' } },
    },
    attempts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['number', 'startedAt'],
        properties: {
          number: { type: 'integer', minimum: 1 },
          startedAt: dateTime,
          durationMs: { type: ['integer', 'null'] },
          statusCode: { type: ['integer', 'null'] },
          errorKind: nullableString,
          errorMessage: nullableString,
          responseBody: nullableString,
          url: { ...nullableString, description: 'Where the callback was sent, query string values masked; null when nothing was sent.' },
        },
      },
    },
  },
});

/** The admin API's answers, by component name. */
export const adminResponseSchemas = {
  Program: { type: 'object', required: ['id', 'name', 'createdAt'], properties: { id: string, name: string, createdAt: dateTime } },
  Merchant: {
    type: 'object',
    required: ['id', 'programId', 'name', 'createdAt'],
    properties: { id: string, programId: string, name: string, createdAt: dateTime },
  },
  ApiKey: apiKey,
  NewApiKey: extended(apiKey, {
    description: 'A new API key: the key itself, shown this once only, and its record.',
    required: ['key'],
    properties: { key: { type: 'string', description: 'The key itself: shown this once only.' } },
  }),
  NotificationTarget: notificationTarget,
  Delivery: deliveryRecord,
  DeliveryDetail: deliveryDetail,
  ProgramPage: page(ref('Program'), 'One page of programs.'),
  MerchantPage: page(ref('Merchant'), 'One page of merchants.'),
  ApiKeyPage: page(ref('ApiKey'), 'One page of API keys, revoked ones included (revokedAt set).'),
  NotificationTargetPage: page(ref('NotificationTarget'), 'One page of notification targets.'),
  DeliveryPage: page(ref('Delivery'), 'One page of deliveries.'),
  EventDeliveries: {
    type: 'object',
    required: ['eventId', 'data'],
    properties: { eventId: string, data: { type: 'array', items: ref('DeliveryDetail') } },
  },
  ReplayAnswer: {
    type: 'object',
    required: ['deliveries', 'more'],
    properties: {
      deliveries: {
        type: 'array',
        items: extended(deliveryRecord, {
          required: ['previousStatus', 'job'],
          properties: {
            previousStatus: { type: 'string', enum: [...DELIVERY_STATUSES] },
            job: {
              enum: ['already-queued', 'added', 'left-to-sweeper'],
              description: 'already-queued: a job waits or runs; added: a new job; left-to-sweeper: the queue was down, the sweeper adds it.',
            },
          },
        }),
      },
      more: { type: 'boolean', description: 'More deliveries matched than the limit; replay again for the next ones.' },
    },
  },
  IngestBatchAnswer: {
    type: 'object',
    required: ['events', 'deliveries'],
    properties: {
      events: { type: 'array', items: ref('Event') },
      deliveries: {
        type: 'array',
        description: 'Per event, in the same order: the deliveries this request created (count 0: no callback will follow).',
        items: {
          type: 'object',
          required: ['eventId', 'count', 'targets'],
          properties: {
            eventId: string,
            count: { type: 'integer', minimum: 0 },
            targets: {
              type: 'array',
              items: {
                type: 'object',
                required: ['targetId', 'targetOwner', 'deliveryId'],
                properties: { targetId: string, targetOwner: { enum: ['program', 'merchant'] }, deliveryId: string },
              },
            },
          },
        },
      },
    },
  },
} as const;
