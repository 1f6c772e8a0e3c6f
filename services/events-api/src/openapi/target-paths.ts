import { merchantTargetBodySchema, programTargetBodySchema, targetPatchSchema, targetPutQuerySchema, targetsQuerySchema } from '../targets/schemas';
import {
  adminOperation as admin,
  BAD_BODY,
  BAD_QUERY,
  capitalised,
  idParameter,
  json,
  nameOf,
  notFound,
  problem,
  queryParameters,
  schemaRef,
  UNAUTHORIZED,
  withoutId,
  type Schema,
} from './document-parts';

// The internal document's paths of notification targets: list, PUT, PATCH, GET, DELETE and the
// test callback of a program's or a merchant's target (the signing secret's are in callbacks.ts).

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

const PATCH_NAME = 'NotificationTargetPatch';

/** The request-body schemas the target paths name, by component name. */
export const targetRequestSchemas: Record<string, Schema> = {
  [nameOf(programTargetBodySchema)]: withoutId(programTargetBodySchema),
  [nameOf(merchantTargetBodySchema)]: withoutId(merchantTargetBodySchema),
  [PATCH_NAME]: withoutId(targetPatchSchema),
};

export function targetPaths(): Record<string, unknown> {
  const target = { description: 'The target, password masked.', content: json(schemaRef('NotificationTarget')) };
  const one = (kind: 'program' | 'merchant', body: { $id: string }) => ({
    parameters: [idParameter(`${kind}Id`, `The ${kind}'s id.`)],
    put: admin({
      operationId: `set${capitalised(kind)}Target`,
      summary: `Create or replace the ${kind}'s notification target (the whole target; credentials are stored encrypted).`,
      description:
        "An OAuth target's credentials are checked first with one real token request (unless verify=false); its token then serves the first callbacks.",
      parameters: queryParameters(targetPutQuerySchema),
      requestBody: { required: true, content: json(schemaRef(nameOf(body))) },
      responses: {
        200: { description: 'The target as stored, password masked.', content: json(schemaRef('NotificationTarget')) },
        400: BAD_BODY,
        ...UNAUTHORIZED,
        404: notFound(kind),
        422: problem(
          'The token endpoint refused the OAuth credentials (credentials_rejected): `errors` points at /auth, `tokenEndpoint` holds its status and RFC 6749 error; nothing was stored.',
        ),
      },
    }),
    patch: admin({
      operationId: `change${capitalised(kind)}Target`,
      summary: `Change part of the ${kind}'s notification target: a JSON merge patch (RFC 7396); the credentials stay unless new ones are given.`,
      description:
        "Members given replace the stored ones; null removes one (a notifications list: all again). A patch that changes auth.mode replaces auth whole. The rules are PUT's, checked on the merged target.",
      requestBody: { required: true, content: { ...json(schemaRef(PATCH_NAME)), 'application/merge-patch+json': { schema: schemaRef(PATCH_NAME) } } },
      responses: { 200: target, 400: BAD_BODY, ...UNAUTHORIZED, 404: notFound('target') },
    }),
    get: admin({
      operationId: `get${capitalised(kind)}Target`,
      summary: `Show the ${kind}'s notification target, password masked, with its delivery health.`,
      responses: { 200: target, ...UNAUTHORIZED, 404: notFound('target') },
    }),
    delete: admin({
      operationId: `delete${capitalised(kind)}Target`,
      summary: `Switch the ${kind}'s notification target off (its delivery history stays).`,
      responses: { 204: { description: 'Switched off.' }, ...UNAUTHORIZED, 404: notFound('target') },
    }),
  });
  const test = (kind: 'program' | 'merchant') => ({
    parameters: [idParameter(`${kind}Id`, `The ${kind}'s id.`)],
    post: admin({
      operationId: `test${capitalised(kind)}Target`,
      summary: `Send the ${kind}'s target one test callback now (signed, with its auth mode, outside the queue; nothing is stored).`,
      description: "Marked by the header `herald-test: true` and a body that is no event: the TestCallback of the merchant document's callback.",
      responses: { 200: { description: 'What happened.', content: json(TEST_CALLBACK_REPORT) }, ...UNAUTHORIZED, 404: notFound('target') },
    }),
  });
  return {
    '/admin/notification-targets': {
      get: admin({
        operationId: 'listTargets',
        summary: "List notification targets, those of a program (its own and its merchants') or of a merchant.",
        parameters: queryParameters(targetsQuerySchema),
        responses: { 200: { description: 'One page of targets.', content: json(schemaRef('NotificationTargetPage')) }, 400: BAD_QUERY, ...UNAUTHORIZED },
      }),
    },
    '/admin/programs/{programId}/notification-target': one('program', programTargetBodySchema),
    '/admin/merchants/{merchantId}/notification-target': one('merchant', merchantTargetBodySchema),
    '/admin/programs/{programId}/notification-target/test': test('program'),
    '/admin/merchants/{merchantId}/notification-target/test': test('merchant'),
  };
}
