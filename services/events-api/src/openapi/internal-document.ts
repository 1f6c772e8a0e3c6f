import { eventSchema, ingestBatchSchema, ingestEventSchema } from '@herald/domain';
import { createApiKeySchema, createMerchantSchema, createProgramSchema } from '../admin/schemas';
import { deliveriesQuerySchema, replayBodySchema } from '../deliveries/schemas';
import { DELIVERIES_HEADER, DELIVERY_TARGETS_HEADER } from '../ingest/router';
import { merchantTargetBodySchema, programTargetBodySchema, targetPutQuerySchema } from '../targets/schemas';
import { signingSecretPaths } from './callbacks';
import { capitalised, HEADERS, json, nameOf, problem, schemaRef, SERVERS, unavailable, withoutId, type Operation, type Schema } from './document-parts';
import { domainComponents } from './domain-components';
import { adminResponseSchemas, internalProblemSchema } from './schemas';

/** Where the internal document is served. */
export const INTERNAL_DOCUMENT_PATH = '/openapi/internal.json';

/** The answer of a test callback (targets/target-outbound.ts TestCallbackReport). */
const TEST_CALLBACK_REPORT = {
  type: 'object',
  required: ['webhookId', 'delivered', 'durationMs'],
  properties: {
    webhookId: { type: 'string', description: 'Test-<uuid>: the webhook-id the callback carried.' },
    delivered: { type: 'boolean', description: 'HTTP 200, and only 200, counts.' },
    statusCode: { type: 'integer', description: "The merchant's status, when it answered." },
    durationMs: { type: 'integer', minimum: 0 },
    errorKind: { type: 'string', description: "Why it was not delivered, in the attempt log's vocabulary." },
    errorMessage: { type: 'string' },
    responseBody: { type: 'string', description: "The answer's first bytes, redacted." },
  },
} as const;

/** The internal API: the producers' ingest (ingest token) and the admin API (admin token). */
export function buildInternalDocument(): Schema {
  const ingest = (operation: Operation) => ({ tags: ['Ingest'], security: [{ ingestToken: [] }], ...operation });
  const admin = (operation: Operation) => ({ tags: ['Admin'], security: [{ adminToken: [] }], ...operation });
  const withBody = (schema: unknown) => ({ required: true, content: json(schema) });
  const common = {
    401: problem('The Authorization header does not carry the right bearer token.'),
  };
  const badBody = problem('The body is not valid JSON or breaks a rule; `errors` names each field by its JSON pointer.');
  const notFound = (what: string) => problem(`No such ${what}.`);
  const idParameter = (name: string, description: string) => ({ name, in: 'path', required: true, schema: { type: 'string' }, description });
  const targetPaths = (kind: 'program' | 'merchant', body: { $id: string }) => ({
    parameters: [idParameter(`${kind}Id`, `The ${kind}'s id.`)],
    put: admin({
      operationId: `set${capitalised(kind)}Target`,
      summary: `Create or replace the ${kind}'s notification target (the whole target; credentials are stored encrypted).`,
      description:
        "An OAuth target's credentials are checked first with one real token request (unless verify=false); its token then serves the first callbacks.",
      parameters: Object.entries(targetPutQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
      requestBody: withBody(schemaRef(nameOf(body))),
      responses: {
        200: { description: 'The target as stored, password masked.', content: json(schemaRef('NotificationTarget')) },
        400: badBody,
        ...common,
        404: notFound(kind),
        422: problem(
          'The token endpoint refused the OAuth credentials (credentials_rejected): `errors` points at /auth, `tokenEndpoint` holds its status and RFC 6749 error; nothing was stored.',
        ),
      },
    }),
    get: admin({
      operationId: `get${capitalised(kind)}Target`,
      summary: `Show the ${kind}'s notification target, password masked.`,
      responses: { 200: { description: 'The target.', content: json(schemaRef('NotificationTarget')) }, ...common, 404: notFound('target') },
    }),
    delete: admin({
      operationId: `delete${capitalised(kind)}Target`,
      summary: `Switch the ${kind}'s notification target off (its delivery history stays).`,
      responses: { 204: { description: 'Switched off.' }, ...common, 404: notFound('target') },
    }),
  });

  const testCallbackPath = (kind: 'program' | 'merchant') => ({
    parameters: [idParameter(`${kind}Id`, `The ${kind}'s id.`)],
    post: admin({
      operationId: `test${capitalised(kind)}Target`,
      summary: `Send the ${kind}'s target one test callback now (signed, with its auth mode, outside the queue; nothing is stored).`,
      description: 'Marked by the header `herald-test: true` and a body that is no event: {"type":"herald.test","test":true,"id":"Test-<uuid>",…}.',
      responses: { 200: { description: 'What happened.', content: json(TEST_CALLBACK_REPORT) }, ...common, 404: notFound('target') },
    }),
  });

  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald ingest and admin API',
      version: '1',
      description:
        'For the platform only, never merchants: producers store events (POST /internal/events, ingest token); admins and support ' +
        'manage programs, merchants, API keys and notification targets and read or replay deliveries (/admin, admin token). ' +
        'Errors are RFC 9457 problem details (application/problem+json).',
    },
    servers: SERVERS,
    tags: [
      { name: 'Ingest', description: "Events from the platform's producers." },
      { name: 'Admin', description: 'Tenants, keys, targets and deliveries.' },
    ],
    paths: {
      '/internal/events': {
        post: ingest({
          operationId: 'ingestEvents',
          summary: 'Store one event or a batch (all or nothing) and create their deliveries.',
          requestBody: withBody({ oneOf: [schemaRef(nameOf(ingestEventSchema)), schemaRef(nameOf(ingestBatchSchema))] }),
          responses: {
            200: ingestAnswer('Every event was stored before with the same content; nothing new.'),
            201: ingestAnswer('At least one event was stored.'),
            400: badBody,
            ...common,
            409: problem('An event id is stored with different content; `index` and `eventId` name it. Nothing was stored.'),
            413: problem('The body is larger than INGEST_BODY_LIMIT_BYTES.'),
            422: problem('An event names a program or merchant Herald does not know; `index` and `field` name it.'),
            503: unavailable('The database is unavailable'),
          },
        }),
      },
      '/admin/programs': {
        post: admin({
          operationId: 'createProgram',
          summary: 'Create a program.',
          requestBody: withBody(schemaRef('CreateProgram')),
          responses: { 201: { description: 'The program.', content: json(schemaRef('Program')) }, 400: badBody, ...common, 409: problem('The id is taken.') },
        }),
      },
      '/admin/merchants': {
        post: admin({
          operationId: 'createMerchant',
          summary: 'Create a merchant of a program.',
          requestBody: withBody(schemaRef('CreateMerchant')),
          responses: {
            201: { description: 'The merchant.', content: json(schemaRef('Merchant')) },
            400: badBody,
            ...common,
            409: problem('The id is taken.'),
            422: problem('No such program.'),
          },
        }),
      },
      '/admin/api-keys': {
        post: admin({
          operationId: 'createApiKey',
          summary: 'Create an API key for a merchant or a program; the key is shown this once only.',
          requestBody: withBody(schemaRef('CreateApiKey')),
          responses: {
            201: { description: 'The key and its record.', content: json(schemaRef('NewApiKey')) },
            400: badBody,
            ...common,
            422: problem('No such merchant or program.'),
          },
        }),
      },
      '/admin/api-keys/{id}': {
        parameters: [idParameter('id', "The key's id.")],
        delete: admin({
          operationId: 'revokeApiKey',
          summary: 'Revoke an API key at once.',
          responses: { 200: { description: 'The revoked key.', content: json(schemaRef('ApiKey')) }, ...common, 404: notFound('API key') },
        }),
      },
      '/admin/programs/{programId}/notification-target': targetPaths('program', programTargetBodySchema),
      '/admin/merchants/{merchantId}/notification-target': targetPaths('merchant', merchantTargetBodySchema),
      '/admin/programs/{programId}/notification-target/test': testCallbackPath('program'),
      '/admin/merchants/{merchantId}/notification-target/test': testCallbackPath('merchant'),
      '/admin/deliveries': {
        get: admin({
          operationId: 'listDeliveries',
          summary: 'List deliveries, newest first, filtered.',
          parameters: Object.entries(deliveriesQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
          responses: {
            200: { description: 'One page of deliveries.', content: json(schemaRef('DeliveryPage')) },
            400: problem('A query parameter is invalid or unknown; `errors` names each.'),
            ...common,
          },
        }),
      },
      '/admin/deliveries/replay': {
        post: admin({
          operationId: 'replayDeliveries',
          summary: 'Replay the oldest deliveries matching a filter (at most `limit`).',
          requestBody: withBody(schemaRef('ReplayDeliveries')),
          responses: {
            202: { description: 'What was replayed.', content: json(schemaRef('ReplayAnswer')) },
            400: badBody,
            ...common,
            503: unavailable('The queue is unavailable'),
          },
        }),
      },
      '/admin/deliveries/{id}': {
        parameters: [idParameter('id', "The delivery's id.")],
        get: admin({
          operationId: 'getDelivery',
          summary: 'Show a delivery with its target and every attempt.',
          responses: { 200: { description: 'The delivery.', content: json(schemaRef('DeliveryDetail')) }, ...common, 404: notFound('delivery') },
        }),
      },
      '/admin/deliveries/{id}/replay': {
        parameters: [idParameter('id', "The delivery's id.")],
        post: admin({
          operationId: 'replayDelivery',
          summary: 'Replay one delivery.',
          responses: {
            202: { description: 'What was replayed.', content: json(schemaRef('ReplayAnswer')) },
            ...common,
            404: notFound('delivery'),
            503: unavailable('The queue is unavailable'),
          },
        }),
      },
      '/admin/events/{eventId}/deliveries': {
        parameters: [idParameter('eventId', "The event's id.")],
        get: admin({
          operationId: 'listEventDeliveries',
          summary: 'Every delivery of an event, with targets and attempts.',
          responses: { 200: { description: "The event's deliveries.", content: json(schemaRef('EventDeliveries')) }, ...common, 404: notFound('event') },
        }),
      },
      ...signingSecretPaths(),
    },
    components: {
      securitySchemes: {
        ingestToken: { type: 'http', scheme: 'bearer', description: "The ingest token (INGEST_TOKEN), for the platform's producers." },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The admin token (ADMIN_TOKEN), for admins and support.' },
      },
      headers: HEADERS,
      schemas: {
        ...domainComponents([ingestEventSchema.$id, ingestBatchSchema.$id, eventSchema.$id]),
        ...Object.fromEntries(
          [
            ['CreateProgram', createProgramSchema],
            ['CreateMerchant', createMerchantSchema],
            ['CreateApiKey', createApiKeySchema],
            [nameOf(programTargetBodySchema), programTargetBodySchema],
            [nameOf(merchantTargetBodySchema), merchantTargetBodySchema],
            ['ReplayDeliveries', replayBodySchema],
          ].map(([name, schema]) => [name, withoutId(schema as Schema)]),
        ),
        ...adminResponseSchemas,
        Problem: internalProblemSchema,
      },
    },
  };

  function ingestAnswer(description: string) {
    return {
      description: `${description} One event answers the stored Event; a batch answers its events and, per event, the deliveries created.`,
      headers: {
        [DELIVERIES_HEADER]: {
          description: 'How many deliveries (future callbacks) the request created, 0 included.',
          required: true,
          schema: { type: 'integer', minimum: 0 },
        },
        [DELIVERY_TARGETS_HEADER]: {
          description: 'The ids of the targets those deliveries go to, comma-separated; absent when there are none.',
          schema: { type: 'string' },
        },
      },
      content: json({ oneOf: [schemaRef(eventSchema.title), schemaRef('IngestBatchAnswer')] }),
    };
  }
}
