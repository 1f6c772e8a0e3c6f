/**
 * The OpenAPI 3.1 documents of the events-api, built from the same JSON Schemas that validate
 * requests (OpenAPI 3.1 schemas are JSON Schema 2020-12), so documentation and validation cannot
 * disagree: the merchant API (GET /events) for merchants, and the internal one (the producers'
 * ingest and the admin API) for the platform's own teams. Each holds only the schemas its paths use.
 */

// This file: the parts both documents are built from (merchant-document.ts, internal-document.ts).

export type Schema = Record<string, unknown>;
export type Operation = Record<string, unknown>;

// Replaced per request by the origin the document was fetched from (router.ts): a relative URL
// would say the same, but generated clients take servers[0].url as their base URL as it stands.
export const SERVERS = [{ url: '/', description: 'The Herald instance serving this document.' }];

const PROBLEM = { $ref: '#/components/schemas/Problem' };
export const RETRY_AFTER = { $ref: '#/components/headers/Retry-After' };
export const HEADERS = {
  'Retry-After': { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'integer', minimum: 0 } },
};

export function problem(description: string, headers?: Record<string, unknown>) {
  return { description, ...(headers ? { headers } : {}), content: { 'application/problem+json': { schema: PROBLEM } } };
}
export const unavailable = (what = 'A dependency (the database or the queue) is unavailable') =>
  problem(`${what}; retry after Retry-After seconds.`, { 'Retry-After': RETRY_AFTER });
export const json = (schema: unknown) => ({ 'application/json': { schema } });
export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

// The name a request-body schema of the events-api gets in the document, from its `$id`
// (`herald:admin/program-notification-target` is ProgramNotificationTarget).
export function nameOf(schema: { $id: string; title?: string }): string {
  if (schema.title) return schema.title;
  return (schema.$id.split('/').pop() ?? schema.$id).split('-').map(capitalised).join('');
}

export function capitalised(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

export function withoutId({ $id: _id, ...schema }: Schema): Schema {
  return schema;
}

/** An operation of the admin API: tagged Admin, behind the admin token. */
export const adminOperation = (operation: Operation): Operation => ({ tags: ['Admin'], security: [{ adminToken: [] }], ...operation });

/** The query parameters of an operation, from the JSON Schema its query is validated with (none is required). */
export function queryParameters(schema: { properties: Record<string, unknown> }): Operation[] {
  return Object.entries(schema.properties).map(([name, parameter]) => ({ name, in: 'query', required: false, schema: parameter }));
}

/** A path parameter holding an id. */
export const idParameter = (name: string, description: string): Operation => ({ name, in: 'path', required: true, schema: { type: 'string' }, description });

export const UNAUTHORIZED = { 401: problem('The Authorization header does not carry the right bearer token.') };
export const BAD_BODY = problem('The body is not valid JSON or breaks a rule; `errors` names each field by its JSON pointer.');
export const BAD_QUERY = problem('A query parameter is invalid or unknown; `errors` names each.');
export const notFound = (what: string) => problem(`No such ${what}.`);
