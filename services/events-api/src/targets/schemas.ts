import {
  CALLBACK_AUTH_MODES,
  DELIVERY_POLICY_FIELDS,
  deliveryPolicySchema,
  EVENT_TYPES,
  MERCHANT_NOTIFICATION_OBJECT_TYPES,
  OAUTH_SCOPE_PATTERN,
  OAUTH_TOKEN_REQUESTS,
  OBJECT_TYPES,
  TARGET_ORDERINGS,
  TENANT_ID_PATTERN,
  VIOLATION_HINT,
  type FromSchema,
} from '@herald/domain';
import { pagingParameters } from '../http/query';

// The body of PUT …/notification-target. The URL rules that JSON Schema cannot say (absolute
// http(s), no user info, where the host resolves) live in url-guard.ts.

const targetUrl = {
  type: 'string',
  maxLength: 2048,
  description: 'Absolute http or https URL without user info, at most 2048 characters.',
} as const;

const auth = {
  type: 'object',
  additionalProperties: false,
  required: ['mode'],
  properties: {
    mode: { enum: CALLBACK_AUTH_MODES, description: 'none, basic or oauth.' },
    username: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      // Basic and OAuth both send `Basic base64(username:password)`; RFC 7617 forbids ':' and
      // control characters in the user-id, since the receiver splits at the first colon.
      pattern: '^[^:\\u0000-\\u001f\\u007f]*$',
      description: 'basic and oauth: 1 to 255 characters, no colon.',
    },
    password: { type: 'string', minLength: 1, maxLength: 255, description: 'basic and oauth: 1 to 255 characters. Never shown again.' },
    authUrl: { ...targetUrl, description: `oauth: the Authentication URL. ${targetUrl.description}` },
    tokenRequest: {
      enum: OAUTH_TOKEN_REQUESTS,
      description:
        "oauth: how the token is requested. spec (default): the spec's request, POST {authUrl}?grant_type=client_credentials with a JSON body " +
        '{grant_type, username, password} and Authorization: Basic. form: the RFC 6749 §4.4 request of standard OAuth 2.0 servers ' +
        '(Keycloak, Auth0, Okta, ...), POST {authUrl} with an application/x-www-form-urlencoded body grant_type=client_credentials[&scope=...] ' +
        'and Authorization: Basic of the form-encoded username and password (§2.3.1; client_secret_basic). client_secret_post: the same ' +
        'request with the username and password as client_id and client_secret in the body and no Authorization header, for servers ' +
        'that do not form-decode the Basic header (credentials with a space, %, +, & or = are refused there in form).',
    },
    scope: {
      type: 'string',
      maxLength: 1000,
      pattern: OAUTH_SCOPE_PATTERN,
      description: 'oauth: the scope to ask for, space-separated scope tokens (RFC 6749 §3.3); sent in either request. Default: none.',
    },
  },
  allOf: [modeRule('none', []), modeRule('basic', ['username', 'password']), modeRule('oauth', ['authUrl', 'username', 'password'], ['tokenRequest', 'scope'])],
} as const;

/** When auth.mode is `mode`, `fields` (besides mode) are required, `optional` ones allowed, and no other. */
function modeRule<const Mode extends string, const Fields extends readonly string[]>(mode: Mode, fields: Fields, optional: readonly string[] = []) {
  return {
    if: { required: ['mode'], properties: { mode: { const: mode } } },
    then: {
      required: fields,
      properties: Object.fromEntries(['mode', ...fields, ...optional].map((field) => [field, true])),
      additionalProperties: false,
    },
  } as const;
}

/** `objectTypesHint` is added to the message for an object type outside `objectTypes`. */
function targetBodySchema<const Id extends string, const ObjectTypes extends readonly string[]>(id: Id, objectTypes: ObjectTypes, objectTypesHint = '') {
  const list = <const Values extends readonly string[]>(values: Values, description: string, hint = '') =>
    ({ type: 'array', minItems: 1, uniqueItems: true, items: { enum: values, ...(hint ? { [VIOLATION_HINT]: hint } : {}) }, description }) as const;
  return {
    $id: id,
    type: 'object',
    additionalProperties: false,
    required: ['url', 'auth'],
    properties: {
      url: targetUrl,
      auth,
      notifications: {
        type: 'object',
        additionalProperties: false,
        description: 'Which notifications the target receives. An absent list means all; an empty one is refused.',
        properties: {
          objectTypes: list(objectTypes, `Object types to notify: ${objectTypes.join(', ')}.`, objectTypesHint),
          eventTypes: list(EVENT_TYPES, `Event types to notify: ${EVENT_TYPES.join(', ')}.`),
        },
      },
      enabled: { type: 'boolean', description: 'Whether callbacks are sent. Default true.' },
      ordering: {
        enum: TARGET_ORDERINGS,
        description:
          "In what order callbacks go: none (default), as they come; object, each object's callbacks in the sequence order of its events, " +
          'each only once the previous one has its final outcome (delivered, or failed for good). Other objects are never held back.',
      },
      delivery: deliveryPolicySchema,
    },
  } as const;
}

/** PUT /admin/programs/:programId/notification-target: every object type may be chosen. */
export const programTargetBodySchema = targetBodySchema('herald:admin/program-notification-target', OBJECT_TYPES);

/** PUT /admin/merchants/:merchantId/notification-target: only transaction-related object types. */
export const merchantTargetBodySchema = targetBodySchema(
  'herald:admin/merchant-notification-target',
  MERCHANT_NOTIFICATION_OBJECT_TYPES,
  "A merchant's target takes transaction-related object types only; events of every object type go to the program's target (PUT /admin/programs/{programId}/notification-target)",
);

/** A valid body of either PUT (the merchant one narrows objectTypes further). */
export type TargetBody = FromSchema<typeof programTargetBodySchema, object>;

/** The query of PUT …/notification-target. */
export const targetPutQuerySchema = {
  $id: 'herald:admin/notification-target-put-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    verify: {
      enum: ['true', 'false'],
      description:
        'OAuth targets: whether the credentials are checked with one real token request before the target is saved (default true); ' +
        'false saves a target whose token endpoint is not live yet.',
    },
  },
} as const;

/** A valid query of PUT …/notification-target. */
export type TargetPutQuery = FromSchema<typeof targetPutQuerySchema, object>;

/**
 * The body of PATCH …/notification-target: a JSON merge patch (RFC 7396) of the target as PUT takes
 * it. Members given replace the stored ones; objects merge member by member; `null` removes a
 * member (a notifications list, meaning "all" again). `auth` merges into the stored auth while its
 * mode stays, so the password is kept unless a new one is given; a patch that changes auth.mode
 * replaces auth whole and must give every field the new mode needs. The value rules are the PUT
 * schema's, checked on the merged target, so each problem names the field as the patch spells it.
 */
export const targetPatchSchema = {
  $id: 'herald:admin/notification-target-patch',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    url: { type: 'string' },
    auth: {
      type: 'object',
      additionalProperties: false,
      properties: {
        mode: { type: 'string' },
        username: { type: ['string', 'null'] },
        password: { type: ['string', 'null'] },
        authUrl: { type: ['string', 'null'] },
        tokenRequest: { type: ['string', 'null'], description: 'null: back to the default, spec.' },
        scope: { type: ['string', 'null'], description: 'null: ask for no scope.' },
      },
    },
    notifications: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { objectTypes: { type: ['array', 'null'] }, eventTypes: { type: ['array', 'null'] } },
    },
    enabled: { type: 'boolean' },
    ordering: { type: 'string' },
    delivery: {
      type: ['object', 'null'],
      additionalProperties: false,
      description: 'Members merge into the stored policy; null on a member returns it to its global default, null on delivery returns them all.',
      properties: Object.fromEntries(DELIVERY_POLICY_FIELDS.map((name) => [name, { type: [deliveryPolicySchema.properties[name].type, 'null'] }])),
    },
  },
} as const;

/** A body that passed targetPatchSchema. */
export interface TargetPatch {
  url?: string;
  auth?: {
    mode?: string;
    username?: string | null;
    password?: string | null;
    authUrl?: string | null;
    tokenRequest?: string | null;
    scope?: string | null;
  };
  notifications?: { objectTypes?: unknown[] | null; eventTypes?: unknown[] | null } | null;
  enabled?: boolean;
  ordering?: string;
  delivery?: Record<string, number | null> | null;
}

/** Query of GET /admin/notification-targets. Unknown parameters are refused. */
export const targetsQuerySchema = {
  $id: 'herald:admin/notification-targets-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    programId: { type: 'string', pattern: TENANT_ID_PATTERN, description: "Targets of this program: its own and its merchants'." },
    merchantId: { type: 'string', pattern: TENANT_ID_PATTERN, description: "This merchant's target." },
    ...pagingParameters,
  },
} as const;

export interface TargetsQuery {
  programId?: string;
  merchantId?: string;
  page?: number;
  pageSize?: number;
}
