import type { ObjectType } from './types';

/**
 * The object types a merchant-level notification target can receive. The spec: "Merchant Specific
 * Notifications: only transaction-related information about one merchant". A merchant target
 * whose objectTypes list is empty (all) receives exactly these; program targets receive every
 * object type.
 */
export const MERCHANT_NOTIFICATION_OBJECT_TYPES = ['transactions', 'payment', 'refund', 'manual-retry'] as const satisfies readonly ObjectType[];

/**
 * How callbacks to a notification target authenticate (spec: "Callbacks sent by the service"):
 * no authentication, HTTP Basic, or OAuth 2.0 client credentials.
 */
export const CALLBACK_AUTH_MODES = ['none', 'basic', 'oauth'] as const;

/** One of none, basic, oauth. */
export type CallbackAuthMode = (typeof CALLBACK_AUTH_MODES)[number];

/**
 * How an OAuth target's token is requested: `spec`, the spec's request (JSON body with the
 * credentials, `?grant_type=client_credentials` in the query, Basic credentials); `form`, the
 * RFC 6749 §4.4 request that standard OAuth 2.0 servers take (form-encoded body, Basic credentials
 * form-encoded per §2.3.1: OpenID Connect's client_secret_basic); or `client_secret_post`, the same
 * request with the credentials as client_id and client_secret in the form body instead of a Basic
 * header (§2.3.1's alternative), which servers that do not form-decode the Basic header read right.
 */
export const OAUTH_TOKEN_REQUESTS = ['spec', 'form', 'client_secret_post'] as const;

/** One of spec, form, client_secret_post. */
export type OAuthTokenRequest = (typeof OAUTH_TOKEN_REQUESTS)[number];

/**
 * An OAuth scope (RFC 6749 §3.3): scope tokens of visible ASCII but '"' and '\\', separated by
 * single spaces.
 */
export const OAUTH_SCOPE_PATTERN = '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+( [\\x21\\x23-\\x5b\\x5d-\\x7e]+)*$';

/**
 * In what order a target gets its callbacks: `none`, as they come (retries, the fair share and
 * parallel workers reorder them); `object`, each object's callbacks in its events' sequence order,
 * every one only after the previous one this target gets has its final outcome (delivered, or
 * failed for good). Other objects are never held back by one object's wait (docs/delivery.md).
 */
export const TARGET_ORDERINGS = ['none', 'object'] as const;

/** One of none, object. */
export type TargetOrdering = (typeof TARGET_ORDERINGS)[number];
