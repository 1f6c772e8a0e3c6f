// The domain types, derived from the schemas so that no field rule is written twice.
import type { FromSchema, Simplify } from './from-schema';
import type { addressSchema } from './schemas/address';
import type { consumerSchema } from './schemas/consumer';
import type { EVENT_TYPES, eventSchema, OBJECT_TYPES, paymentSeriesDataRule } from './schemas/event';
import type { eventPageSchema } from './schemas/event-page';
import type { ingestBatchSchema, ingestEventSchema } from './schemas/ingest';
import type { oauthTokenResponseSchema } from './schemas/oauth-token-response';
import type { paymentSeriesSchema } from './schemas/payment-series';
import type { SchemaRefs } from './schemas/registry';

type Of<S> = FromSchema<S, SchemaRefs>;

/** One of updated, created, deleted, status.updated, billing.expires, billing.updated, billing.scheduled. */
export type EventType = (typeof EVENT_TYPES)[number];
/** One of subscription, subscription.plan, billing-cycle, payment-series, transactions, manual-retry, payment, refund. */
export type ObjectType = (typeof OBJECT_TYPES)[number];

/** A postal address (billingAddress, shippingAddress). */
export type Address = Of<typeof addressSchema>;
/** Personal or company data of the consumer (consumer, businessConsumer). */
export type Consumer = Of<typeof consumerSchema>;
/** A payment series: the item of Event.data for objectType payment-series. */
export type PaymentSeries = Of<typeof paymentSeriesSchema>;
/** The token response of a merchant's Authentication URL. */
export type OAuthTokenResponse = Of<typeof oauthTokenResponseSchema>;

type PaymentSeriesObjectType = (typeof paymentSeriesDataRule)['if']['properties']['objectType']['const'];
type PaymentSeriesData = Of<(typeof paymentSeriesDataRule)['then']['properties']['data']>;

/** Applies paymentSeriesDataRule to a type: objectType payment-series means data holds Payment Series. */
type WithDataByObjectType<T extends { objectType: ObjectType }> =
  | Simplify<Omit<T, 'objectType' | 'data'> & { objectType: PaymentSeriesObjectType; data?: PaymentSeriesData }>
  | Simplify<Omit<T, 'objectType'> & { objectType: Exclude<ObjectType, PaymentSeriesObjectType> }>;

/** An event processed for an object; `data` holds Payment Series when objectType is payment-series. */
export type Event = WithDataByObjectType<Of<typeof eventSchema>>;
/** An event whose objectType is payment-series, so its data holds Payment Series. */
export type PaymentSeriesEvent = Extract<Event, { objectType: PaymentSeriesObjectType }>;
/** An event as the internal producer sends it: id and createdAt optional, programId required. */
export type IngestEvent = WithDataByObjectType<Of<typeof ingestEventSchema>>;
/** The body of a batch ingest call: 1 to INGEST_BATCH_MAX_EVENTS events. */
export type IngestBatch = Simplify<Omit<Of<typeof ingestBatchSchema>, 'events'> & { events: IngestEvent[] }>;
/** One page of events, the response of GET /events. */
export type EventPage = Simplify<Omit<Of<typeof eventPageSchema>, 'data'> & { data: Event[] }>;
