import { eventSchema, ingestBatchSchema, ingestEventSchema } from '@herald/domain';
import { apiKeysQuerySchema, createApiKeySchema, createMerchantSchema, createProgramSchema, merchantsQuerySchema, programsQuerySchema } from '../admin/schemas';
import { deliveriesQuerySchema, replayBodySchema } from '../deliveries/schemas';
import { DELIVERIES_HEADER, DELIVERY_TARGETS_HEADER } from '../ingest/router';
import { signingSecretPaths } from './callbacks';
import {
  adminOperation as admin,
  BAD_BODY,
  BAD_QUERY,
  HEADERS,
  idParameter,
  json,
  nameOf,
  notFound,
  problem,
  queryParameters,
  schemaRef,
  SERVERS,
  UNAUTHORIZED,
  unavailable,
  withoutId,
  type Operation,
  type Schema,
} from './document-parts';
import { domainComponents } from './domain-components';
import { adminResponseSchemas, internalProblemSchema } from './schemas';
import { portalLinkPaths, portalLinkSchemas } from './portal-paths';
import { targetPaths, targetRequestSchemas } from './target-paths';

/** Where the internal document is served. */
export const INTERNAL_DOCUMENT_PATH = '/openapi/internal.json';

/** The internal API: the producers' ingest (ingest token) and the admin API (admin token). */
export function buildInternalDocument(): Schema {
  const ingest = (operation: Operation) => ({ tags: ['Ingest'], security: [{ ingestToken: [] }], ...operation });
  const withBody = (schema: unknown) => ({ required: true, content: json(schema) });
  const common = UNAUTHORIZED;
  const badBody = BAD_BODY;
  const list = (operationId: string, summary: string, query: { properties: Record<string, unknown> }, page: string) => ({
    get: admin({
      operationId,
      summary,
      parameters: queryParameters(query),
      responses: { 200: { description: 'One page.', content: json(schemaRef(page)) }, 400: BAD_QUERY, ...common },
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
        ...list('listPrograms', 'List programs, newest first.', programsQuerySchema, 'ProgramPage'),
        post: admin({
          operationId: 'createProgram',
          summary: 'Create a program.',
          requestBody: withBody(schemaRef('CreateProgram')),
          responses: { 201: { description: 'The program.', content: json(schemaRef('Program')) }, 400: badBody, ...common, 409: problem('The id is taken.') },
        }),
      },
      '/admin/egress-addresses': {
        get: admin({
          operationId: 'getEgressAddresses',
          summary: 'The addresses callbacks leave from (EGRESS_ADDRESSES), for merchants to allow-list.',
          responses: {
            200: {
              description: 'The addresses, as the operator stated them: IP addresses or CIDR ranges; empty when none are stated.',
              content: json({
                type: 'object',
                additionalProperties: false,
                required: ['addresses'],
                properties: { addresses: { type: 'array', items: { type: 'string' } } },
              }),
            },
            ...common,
          },
        }),
      },
      '/admin/merchants': {
        ...list('listMerchants', "List merchants, a program's or all.", merchantsQuerySchema, 'MerchantPage'),
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
        ...list(
          'listApiKeys',
          "List API keys (never the keys themselves), a program's or a merchant's, revoked ones included.",
          apiKeysQuerySchema,
          'ApiKeyPage',
        ),
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
      ...targetPaths(),
      '/admin/deliveries': {
        get: admin({
          operationId: 'listDeliveries',
          summary: 'List deliveries, newest first, filtered.',
          parameters: queryParameters(deliveriesQuerySchema),
          responses: {
            200: { description: 'One page of deliveries.', content: json(schemaRef('DeliveryPage')) },
            400: BAD_QUERY,
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
      ...portalLinkPaths(),
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
            ['ReplayDeliveries', replayBodySchema],
          ].map(([name, schema]) => [name, withoutId(schema as Schema)]),
        ),
        ...targetRequestSchemas,
        ...adminResponseSchemas,
        ...portalLinkSchemas,
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
