import { OAUTH_TOKEN_REQUESTS } from '@herald/domain';
import { TEST_CALLBACK_DESCRIPTION, TEST_CALLBACK_HEADER } from '@herald/callbacks';
import { merchantTargetBodySchema, programTargetBodySchema, targetPutQuerySchema } from '../targets/schemas';

// The admin API's notification target operations in the OpenAPI document: the request bodies are
// the JSON Schemas that validate them (schemas.ts), so the document cannot disagree with the API.

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('Problem') } } });
const withoutId = <T extends { $id: string }>({ $id: _id, ...schema }: T) => schema;

/** The schemas the admin target paths refer to. */
export const adminTargetSchemas = {
  ProgramNotificationTargetBody: withoutId(programTargetBodySchema),
  MerchantNotificationTargetBody: withoutId(merchantTargetBodySchema),
  NotificationTarget: {
    type: 'object',
    required: ['id', 'programId', 'merchantId', 'url', 'auth', 'notifications', 'enabled', 'createdAt', 'updatedAt'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      programId: { type: 'string' },
      merchantId: { type: ['string', 'null'], description: 'Set for a merchant target, null for a program target.' },
      url: { type: 'string' },
      auth: {
        type: 'object',
        required: ['mode'],
        description: 'As set, with the password shown as ******** (never the password itself). An OAuth target always shows tokenRequest.',
        properties: {
          mode: { enum: ['none', 'basic', 'oauth'] },
          username: { type: 'string' },
          password: { const: '********' },
          authUrl: { type: 'string' },
          tokenRequest: { enum: OAUTH_TOKEN_REQUESTS },
          scope: { type: 'string' },
        },
      },
      notifications: { type: 'object', properties: { objectTypes: { type: 'array', items: { type: 'string' } }, eventTypes: { type: 'array', items: { type: 'string' } } } },
      enabled: { type: 'boolean' },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
    },
  },
  TestCallbackReport: {
    type: 'object',
    required: ['webhookId', 'delivered', 'durationMs'],
    properties: {
      webhookId: { type: 'string', description: 'The test callback\'s webhook-id and body id: Test-<uuid>.' },
      delivered: { type: 'boolean', description: 'The target answered HTTP 200 (only 200 counts, as for events).' },
      statusCode: { type: 'integer', description: 'The target\'s HTTP status, when it answered.' },
      durationMs: { type: 'integer', description: 'From the first request (an OAuth token request included) to the end of the answer.' },
      errorKind: {
        enum: ['timeout', 'connection', 'tls', 'address_refused', 'redirect', 'http_status', 'oauth', 'configuration', 'internal'],
        description: 'Why it was not delivered, as the attempt log names it.',
      },
      errorMessage: { type: 'string', description: 'What went wrong, free of secrets.' },
      responseBody: { type: 'string', description: 'The first CALLBACK_RESPONSE_MAX_BYTES of the answer, secrets redacted.' },
    },
  },
} as const;

/** PUT, GET, DELETE …/notification-target and POST …/notification-target/test, for programs and merchants. */
export function adminTargetPaths(): Record<string, unknown> {
  const security = [{ adminToken: [] }];
  const common = { 401: problem('The admin token is missing or wrong.'), 404: problem('No such program or merchant, or (GET, DELETE, test) no target.') };
  const paths: Record<string, unknown> = {};
  for (const [owner, idName, body] of [
    ['programs', 'programId', 'ProgramNotificationTargetBody'],
    ['merchants', 'merchantId', 'MerchantNotificationTargetBody'],
  ] as const) {
    const kind = owner === 'programs' ? 'program' : 'merchant';
    const idParameter = { name: idName, in: 'path', required: true, schema: { type: 'string' } };
    const targetAnswer = { description: 'The target, password masked.', content: { 'application/json': { schema: ref('NotificationTarget') } } };
    paths[`/admin/${owner}/{${idName}}/notification-target`] = {
      parameters: [idParameter],
      put: {
        operationId: `put${capitalised(kind)}NotificationTarget`,
        tags: ['admin'],
        security,
        summary: `Create or replace the ${kind}'s notification target.`,
        description:
          'An OAuth target\'s credentials are checked first with one real token request (through the address policy), unless verify=false; ' +
          'the token issued then serves the first callbacks.',
        parameters: Object.entries(targetPutQuerySchema.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
        requestBody: { required: true, content: { 'application/json': { schema: ref(body) } } },
        responses: {
          200: targetAnswer,
          400: problem('A field of the body or the query is invalid; errors[] names it.'),
          ...common,
          422: problem(
            'The token endpoint issued no token for the OAuth settings: errors[0].pointer is /auth; tokenEndpoint holds its failure kind, status, ' +
              'and the RFC 6749 error and errorDescription it answered. Fix auth, or save with verify=false.',
          ),
        },
      },
      get: { operationId: `get${capitalised(kind)}NotificationTarget`, tags: ['admin'], security, summary: `The ${kind}'s notification target.`, responses: { 200: targetAnswer, ...common } },
      delete: {
        operationId: `delete${capitalised(kind)}NotificationTarget`,
        tags: ['admin'],
        security,
        summary: `Switch the ${kind}'s notification target off and hide it (its delivery history stays).`,
        responses: { 204: { description: 'Deleted.' }, ...common },
      },
    };
    paths[`/admin/${owner}/{${idName}}/notification-target/test`] = {
      parameters: [idParameter],
      post: {
        operationId: `test${capitalised(kind)}NotificationTarget`,
        tags: ['admin'],
        security,
        summary: `Send one test callback to the ${kind}'s target now and say what happened.`,
        description:
          'Sent outside the queue with the target\'s auth mode, as a callback is (same headers, limits, address policy), and stored nowhere. ' +
          `It carries the header \`${TEST_CALLBACK_HEADER}: true\` and the body ` +
          '`{"type":"herald.test","test":true,"id":"Test-<uuid>","createdAt":"<date-time>","description":"…"}` (no event of the spec), ' +
          `whose description reads: "${TEST_CALLBACK_DESCRIPTION}". The answer is 200 whatever the target answered: delivered says whether it was HTTP 200.`,
        responses: { 200: { description: 'What happened.', content: { 'application/json': { schema: ref('TestCallbackReport') } } }, ...common },
      },
    };
  }
  return paths;
}

function capitalised(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
