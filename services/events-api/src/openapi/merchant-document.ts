import { AUTO_DISABLED_REASON, eventPageSchema, eventSchema } from '@herald/domain';
import { REQUIRED_HEADERS } from '../events/headers';
import { merchantDeliveriesQuerySchema } from '../deliveries/schemas';
import { eventsQuerySchema } from '../events/query';
import { testCallbackBodySchema } from '@herald/callbacks';
import { callbackWebhook, TEST_CALLBACK_SCHEMA } from './callbacks';
import { HEADERS, json, problem, RETRY_AFTER, schemaRef, SERVERS, withoutId, type Schema } from './document-parts';
import { domainComponents } from './domain-components';
import { merchantDeliverySchemas } from './merchant-schemas';
import { recoverBodySchema } from '../recoveries/schemas';
import { problemSchema } from './schemas';

/** Where the merchant document is served. */
export const MERCHANT_DOCUMENT_PATH = '/openapi.json';

const CONTENT_TYPE_NOTE =
  'Besides the headers below, the request must carry `Content-Type: application/json` although it has no body ' +
  '(OpenAPI 3.1 has tools ignore a Content-Type header parameter, so it is stated here).';

const UNAUTHORIZED = 'x-api-key is missing, unknown or revoked.';

/** The 429 and 503 every route of the merchant API may answer. */
const LIMITS = {
  429: problem(
    'Too many requests for this key (rate_limited), too many of them at once (too_many_concurrent_requests), or its expensive reads used up their database time (query_time_exceeded); wait for Retry-After seconds.',
    { 'Retry-After': RETRY_AFTER },
  ),
  503: problem('A dependency is unavailable, or (query_timeout) the query ran past its time limit; retry after Retry-After seconds, or narrow the query.', {
    'Retry-After': RETRY_AFTER,
  }),
};

const ok = (description: string, schema: string) => ({
  description: `${description} Like every answer of the API, not to be stored by any cache.`,
  headers: { 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } },
  content: json(schemaRef(schema)),
});

/** The problem details of the merchant API: those of GET /events, and the members only a recovery's 409 sends. */
const merchantProblemSchema = {
  ...problemSchema,
  properties: {
    ...problemSchema.properties,
    recoveryId: {
      type: 'string',
      format: 'uuid',
      description: 'recovery_running: the recovery of the target still running, to follow at GET /deliveries/recoveries/{id}.',
    },
    disabledReason: {
      type: 'string',
      enum: [AUTO_DISABLED_REASON, 'switched-off'],
      description: 'target_switched_off: why the target is off, as GET /notification-target says it.',
    },
  },
} as const;

/** The merchant API: GET /events, the caller's delivery history and its recoveries, behind a merchant's or a program's x-api-key. */
export function buildMerchantDocument(): Schema {
  const headerParameters = REQUIRED_HEADERS.filter(({ name }) => name !== 'Content-Type').map(({ name, expected }) => ({
    name,
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: `Required: ${expected}.`,
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald merchant API',
      version: '1',
      description:
        "Lists the events processed for a merchant's objects and the callbacks sent for them, and sends once more the callbacks its target missed. A merchant key sees its merchant's; a program key its program's " +
        "(the callbacks to the program's own notification target). Errors are RFC 9457 problem details (application/problem+json).",
    },
    servers: SERVERS,
    security: [{ apiKey: [] }],
    paths: {
      '/events': {
        get: {
          operationId: 'listEvents',
          summary: "List the events processed for the caller's objects, oldest first.",
          description: CONTENT_TYPE_NOTE,
          parameters: [
            ...headerParameters,
            ...Object.entries(eventsQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
          ],
          responses: {
            200: ok('One page of events.', eventPageSchema.title),
            400: problem(
              'A required header is missing or wrong, or a query parameter is invalid or unknown (`errors` names each), or (page_too_deep) the page would skip more events than the server allows under eventType or objectId: move createdFrom instead.',
            ),
            401: problem(UNAUTHORIZED),
            ...LIMITS,
          },
        },
      },
      '/deliveries': {
        get: {
          operationId: 'listDeliveries',
          summary: "List the callbacks sent to the caller's notification target, newest first.",
          description: `${CONTENT_TYPE_NOTE} Each list counts the matching deliveries, so it is one of the key's expensive reads (see 429).`,
          parameters: [
            ...headerParameters,
            ...Object.entries(merchantDeliveriesQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
          ],
          responses: {
            200: ok('One page of deliveries.', 'DeliveryPage'),
            400: problem(
              'A required header is missing or wrong, or a query parameter is invalid or unknown (`errors` names each), or (page_too_deep) the page would skip more deliveries than the server allows: move createdTo back instead.',
            ),
            401: problem(UNAUTHORIZED),
            ...LIMITS,
          },
        },
      },
      '/deliveries/{id}': {
        get: {
          operationId: 'getDelivery',
          summary: 'Show one callback with every attempt and its deferrals.',
          description: CONTENT_TYPE_NOTE,
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'The delivery id, as GET /deliveries lists it.' },
            ...headerParameters,
          ],
          responses: {
            200: ok('The delivery.', 'DeliveryDetail'),
            400: problem('A required header is missing or wrong (`errors` names each).'),
            401: problem(UNAUTHORIZED),
            404: problem("No such delivery to the caller's target (another tenant's delivery is answered the same way)."),
            ...LIMITS,
          },
        },
      },
      '/deliveries/recover': {
        post: {
          operationId: 'recoverDeliveries',
          summary: 'Send your notification target once more every callback of a window it has not received.',
          description:
            'Every event created in the window (from `from` to `to`, default now) that your target takes (its objectTypes and eventTypes, as now) and that it has no delivered callback for is sent again: ' +
            'failed callbacks, and events never sent because the target was switched off when they happened. Callbacks pending or delivered are left alone, so nothing is sent twice. ' +
            'They go through the usual retries, per-target limit and circuit breaker. One recovery runs at a time per target (409 while one runs); a switched-off target refuses it (409: support switches it on). ' +
            "One recovery queues at most RECOVERY_MAX_DELIVERIES (default 1,000) callbacks: past that `coveredTo` says where it stopped. It reads the window's events, so it is one of the key's expensive reads (see 429).",
          parameters: headerParameters,
          requestBody: { required: true, content: json(schemaRef('RecoverDeliveries')) },
          responses: {
            202: {
              description:
                'The recovery has started (its callbacks are queued): follow it at Location. Like every answer of the API, not to be stored by any cache.',
              headers: {
                Location: { required: true, schema: { type: 'string' }, description: '/deliveries/recoveries/{id}' },
                'Cache-Control': { schema: { type: 'string', const: 'no-store' } },
              },
              content: json(schemaRef('Recovery')),
            },
            400: problem(
              'A required header is missing or wrong, the body is not JSON, or the window is invalid: `errors` names the field (from: not a date-time, or more than RECOVERY_MAX_DAYS ago; to: not after from).',
            ),
            401: problem(UNAUTHORIZED),
            404: problem('No notification target is set for the caller.'),
            409: problem(
              'A recovery of the target is still running (recovery_running: `recoveryId` names it), or the target is switched off (target_switched_off: support switches it on; the events produced meanwhile can be recovered then).',
            ),
            413: problem('The body is too large.'),
            ...LIMITS,
          },
        },
      },
      '/deliveries/recoveries/{id}': {
        get: {
          operationId: 'getRecovery',
          summary: 'Show how a recovery is going: queued, pending, sent, delivered, failed.',
          description: CONTENT_TYPE_NOTE,
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'The recovery id, as POST /deliveries/recover answered it.' },
            ...headerParameters,
          ],
          responses: {
            200: ok('The recovery.', 'Recovery'),
            400: problem('A required header is missing or wrong (`errors` names each).'),
            401: problem(UNAUTHORIZED),
            404: problem("No such recovery of the caller's target (another tenant's recovery is answered the same way)."),
            ...LIMITS,
          },
        },
      },
      '/notification-target': {
        get: {
          operationId: 'getNotificationTarget',
          summary: "Show the caller's notification target and how its callbacks are going.",
          description: `${CONTENT_TYPE_NOTE} Read only: support sets the target up and switches it on or off.`,
          parameters: headerParameters,
          responses: {
            200: ok('The target.', 'NotificationTargetStatus'),
            400: problem('A required header is missing or wrong (`errors` names each).'),
            401: problem(UNAUTHORIZED),
            404: problem('No notification target is set for the caller.'),
            ...LIMITS,
          },
        },
      },
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: "A merchant's or a program's API key, made by an admin." },
      },
      headers: HEADERS,
      schemas: {
        ...domainComponents([eventPageSchema.$id]),
        ...merchantDeliverySchemas,
        RecoverDeliveries: withoutId(recoverBodySchema),
        Problem: merchantProblemSchema,
        [TEST_CALLBACK_SCHEMA]: testCallbackBodySchema,
      },
    },
    // What merchants receive: the callback, with the headers that sign it.
    webhooks: { eventNotification: callbackWebhook(`#/components/schemas/${eventSchema.title}`) },
  };
}
