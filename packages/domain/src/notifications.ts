import type { ObjectType } from './types';

/**
 * The object types a merchant-level notification target can receive. The spec: "Merchant Specific
 * Notifications: only transaction-related information about one merchant". A merchant target
 * whose objectTypes list is empty (all) receives exactly these; program targets receive every
 * object type.
 */
export const MERCHANT_NOTIFICATION_OBJECT_TYPES = ['transactions', 'payment', 'refund', 'manual-retry'] as const satisfies readonly ObjectType[];

/** One of transactions, payment, refund, manual-retry. */
export type MerchantNotificationObjectType = (typeof MERCHANT_NOTIFICATION_OBJECT_TYPES)[number];

/**
 * How callbacks to a notification target authenticate (spec: "Callbacks sent by the service"):
 * no authentication, HTTP Basic, or OAuth 2.0 client credentials.
 */
export const CALLBACK_AUTH_MODES = ['none', 'basic', 'oauth'] as const;

/** One of none, basic, oauth. */
export type CallbackAuthMode = (typeof CALLBACK_AUTH_MODES)[number];
