import { DOMAIN_SCHEMAS, eventPageSchema } from '@herald/domain';
import { REQUIRED_HEADERS } from '../events/headers';
import { eventsQuerySchema } from '../events/query';
import { adminTargetPaths, adminTargetSchemas } from './admin-targets';

/**
 * The OpenAPI 3.1 document of the merchant API, built from the same JSON Schemas that validate
 * events (OpenAPI 3.1 schemas are JSON Schema 2020-12), so documentation and validation cannot
 * disagree.
 */
export function buildOpenApiDocument(): Record<string, unknown> {
  const nameById = new Map<string, string>(DOMAIN_SCHEMAS.map((s) => [s.$id, s.title]));
  const component = (schema: unknown): unknown => rewriteRefs(schema, nameById);
  const problem = { $ref: '#/components/schemas/Problem' };
  const problemResponse = (description: string) => ({ description, content: { 'application/problem+json': { schema: problem } } });

  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald merchant API',
      version: '1',
      description:
        'Lists the events processed for a merchant\'s objects; and the admin operations on notification targets (tag admin, ' +
        'Authorization: Bearer $ADMIN_TOKEN). Errors are RFC 9457 problem details.',
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
      },
      schemas: {
        ...Object.fromEntries(DOMAIN_SCHEMAS.map(({ $id: _id, ...schema }) => [schema.title, component(schema)])),
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: { type: 'array', items: { type: 'object' } },
          },
        },
        ...adminTargetSchemas,
      },
    },
    security: [{ apiKey: [] }],
    paths: {
      '/events': {
        get: {
          operationId: 'listEvents',
          summary: 'List the events processed for the caller\'s objects, oldest first.',
          parameters: [
            ...REQUIRED_HEADERS.map(({ name, expected }) => ({ name, in: 'header', required: true, schema: { type: 'string' }, description: expected })),
            ...Object.entries(eventsQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
          ],
          responses: {
            200: { description: 'One page of events.', content: { 'application/json': { schema: { $ref: `#/components/schemas/${eventPageSchema.title}` } } } },
            400: problemResponse('A required header is missing or wrong, or a query parameter is invalid or unknown.'),
            401: problemResponse('x-api-key is missing, unknown or revoked.'),
            429: problemResponse('Too many requests for this key; see Retry-After.'),
            503: problemResponse('A dependency is unavailable; retry later.'),
          },
        },
      },
      ...adminTargetPaths(),
    },
  };
}

function rewriteRefs(value: unknown, nameById: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, nameById));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) =>
      key === '$ref' && typeof item === 'string' && nameById.has(item)
        ? [key, `#/components/schemas/${nameById.get(item)}`]
        : [key, rewriteRefs(item, nameById)],
    ),
  );
}
