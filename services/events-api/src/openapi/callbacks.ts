import { TEST_CALLBACK_HEADER, testCallbackBodySchema } from '@herald/callbacks';

// OpenAPI fragments of the callbacks and their signing secrets. The callback is what merchants
// receive (an OpenAPI 3.1 `webhooks` entry of the merchant document); the signing-secret paths
// belong to the admin API (behind ADMIN_TOKEN), for whichever document describes it.

const problem = { $ref: '#/components/schemas/Problem' };
const problemResponse = (description: string) => ({ description, content: { 'application/problem+json': { schema: problem } } });

/** The component name of a test callback's body. */
export const TEST_CALLBACK_SCHEMA = testCallbackBodySchema.title;

/** The `webhooks` entry of the merchant document: one POST of an event (or of a test callback) to the target's URL. */
export function callbackWebhook(eventSchemaRef: string): Record<string, unknown> {
  const header = (name: string, description: string, example: string) => ({
    name,
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description,
    example,
  });
  return {
    post: {
      operationId: 'eventNotification',
      summary: "A callback: one event, POSTed to the notification target's URL.",
      description:
        "Signed per Standard Webhooks (https://www.standardwebhooks.com): verify webhook-signature over the raw body with the target's " +
        "signing secret (`whsec_…`, given to the merchant by the platform's support) before parsing it, e.g. with the " +
        "`standardwebhooks` library. An Authorization header is added as the target's auth mode says: none, HTTP Basic, or the " +
        "access token of the merchant's own authorization server (client credentials).",
      parameters: [
        header(
          'webhook-id',
          "The event's id, the same on every retry: drop a callback whose id you have processed.",
          'Event-0b7f5c1e-3d2a-4c8b-9f10-aa55cc33ee77',
        ),
        header(
          'webhook-timestamp',
          'Seconds since the Unix epoch when this POST was sent; refuse one far from your clock (the libraries allow 5 minutes).',
          '1795430400',
        ),
        header(
          'webhook-signature',
          'Space-separated `v1,<Base64 HMAC-SHA256>` signatures of `{webhook-id}.{webhook-timestamp}.{raw body}`, keyed with the Base64-decoded ' +
            "part of the secret after `whsec_`. During a rotation's grace period there are two (new secret first): accept the callback if either verifies.",
          'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
        ),
        {
          name: TEST_CALLBACK_HEADER,
          in: 'header',
          required: false,
          schema: { const: 'true' },
          description: 'Present (true) on a test callback only, whose body is a TestCallback rather than an event.',
        },
      ],
      requestBody: {
        required: true,
        description: "An event; or, on an administrator's request, a test callback (marked by the herald-test header).",
        content: { 'application/json': { schema: { oneOf: [{ $ref: eventSchemaRef }, { $ref: `#/components/schemas/${TEST_CALLBACK_SCHEMA}` }] } } },
      },
      responses: {
        200: { description: 'Delivered. Any other answer (or none within the timeout) is retried with backoff.' },
      },
    },
  };
}

const signingSecret = {
  type: 'object',
  required: ['targetId', 'secret', 'previousSecretExpiresAt'],
  properties: {
    targetId: { type: 'string', format: 'uuid' },
    secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$', description: '`whsec_` and the Base64 of 32 random bytes. Keep it secret.' },
    previousSecretExpiresAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: "After a rotation: until when callbacks also carry the replaced secret's signature (SIGNING_SECRET_ROTATION_GRACE_SECONDS); otherwise null.",
    },
  },
} as const;

/** The admin API's signing-secret paths, for the program's and the merchant's target. */
export function signingSecretPaths(): Record<string, unknown> {
  const ok = (description: string) => ({
    description,
    headers: { 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } },
    content: { 'application/json': { schema: signingSecret } },
  });
  const errors = {
    401: problemResponse('The admin token is missing or wrong.'),
    404: problemResponse('No such program or merchant, or it has no notification target.'),
  };
  const paths: Record<string, unknown> = {};
  for (const owner of ['programs', 'merchants'] as const) {
    const idName = owner === 'programs' ? 'programId' : 'merchantId';
    const parameters = [{ name: idName, in: 'path', required: true, schema: { type: 'string' } }];
    const base = `/admin/${owner}/{${idName}}/notification-target/signing-secret`;
    paths[base] = {
      parameters,
      get: {
        tags: ['Admin'],
        security: [{ adminToken: [] }],
        operationId: `get${owner === 'programs' ? 'Program' : 'Merchant'}TargetSigningSecret`,
        summary: "The secret that signs this target's callbacks (the only place it is shown).",
        responses: { 200: ok('The current secret.'), ...errors },
      },
    };
    paths[`${base}/rotate`] = {
      parameters,
      post: {
        tags: ['Admin'],
        security: [{ adminToken: [] }],
        operationId: `rotate${owner === 'programs' ? 'Program' : 'Merchant'}TargetSigningSecret`,
        summary: 'Replaces the signing secret; the replaced one keeps signing until previousSecretExpiresAt.',
        responses: { 200: ok('The new secret.'), ...errors },
      },
    };
  }
  return paths;
}
