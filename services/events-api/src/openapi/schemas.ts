import { CALLBACK_AUTH_MODES, EVENT_TYPES, OBJECT_TYPES } from '@herald/domain';
import { DELIVERY_STATUSES } from '@herald/db';

// Schemas of what the events-api answers that no request validator holds: the problem details
// every error is, and the admin API's records. The tests check real answers against them.

const string = { type: 'string' } as const;
const nullableString = { type: ['string', 'null'] } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

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
  },
} as const;

const deliveryRecord = {
  type: 'object',
  required: ['id', 'eventId', 'targetId', 'programId', 'merchantId', 'status', 'attemptsMade', 'createdAt', 'updatedAt'],
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
  },
} as const;

/** The admin API's answers, by component name. */
export const adminResponseSchemas = {
  Program: { type: 'object', required: ['id', 'name', 'createdAt'], properties: { id: string, name: string, createdAt: dateTime } },
  Merchant: {
    type: 'object',
    required: ['id', 'programId', 'name', 'createdAt'],
    properties: { id: string, programId: string, name: string, createdAt: dateTime },
  },
  ApiKey: {
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
  },
  NewApiKey: {
    allOf: [
      ref('ApiKey'),
      { type: 'object', required: ['key'], properties: { key: { type: 'string', description: 'The key itself: shown this once only.' } } },
    ],
  },
  NotificationTarget: {
    type: 'object',
    description: 'A notification target as admins see it: the password is always masked.',
    required: ['id', 'programId', 'merchantId', 'url', 'auth', 'notifications', 'enabled', 'createdAt', 'updatedAt'],
    properties: {
      id: string,
      programId: string,
      merchantId: { ...nullableString, description: "Set for a merchant's target, null for the program's own." },
      url: string,
      auth: {
        type: 'object',
        required: ['mode'],
        properties: { mode: { enum: [...CALLBACK_AUTH_MODES] }, username: string, password: { const: '********' }, authUrl: string },
      },
      notifications: {
        type: 'object',
        properties: {
          objectTypes: { type: 'array', items: { enum: [...OBJECT_TYPES] } },
          eventTypes: { type: 'array', items: { enum: [...EVENT_TYPES] } },
        },
      },
      enabled: { type: 'boolean' },
      createdAt: dateTime,
      updatedAt: dateTime,
    },
  },
  Delivery: deliveryRecord,
  DeliveryDetail: {
    allOf: [
      ref('Delivery'),
      {
        type: 'object',
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
              },
            },
          },
        },
      },
    ],
  },
  DeliveryPage: {
    type: 'object',
    required: ['page', 'pageSize', 'count', 'totalPages', 'data'],
    properties: {
      page: { type: 'integer' },
      pageSize: { type: 'integer' },
      count: { type: 'integer' },
      totalPages: { type: 'integer' },
      data: { type: 'array', items: ref('Delivery') },
    },
  },
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
        items: {
          allOf: [
            ref('Delivery'),
            {
              type: 'object',
              required: ['previousStatus', 'job'],
              properties: {
                previousStatus: { type: 'string', enum: [...DELIVERY_STATUSES] },
                job: {
                  enum: ['already-queued', 'added', 'left-to-sweeper'],
                  description: 'already-queued: a job waits or runs; added: a new job; left-to-sweeper: the queue was down, the sweeper adds it.',
                },
              },
            },
          ],
        },
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
