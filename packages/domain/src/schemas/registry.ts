import { addressSchema } from './address';
import { billingAgreementSchema } from './billing-agreement';
import { consumerSchema } from './consumer';
import { criterionSchema } from './criterion';
import { customReferencesSchema } from './custom-references';
import { eventSchema } from './event';
import { eventPageSchema } from './event-page';
import { ingestBatchSchema, ingestEventSchema } from './ingest';
import { oauthTokenResponseSchema } from './oauth-token-response';
import { paymentSeriesSchema } from './payment-series';

/** Every domain schema, each with its `$id`: what the validator loads and the OpenAPI document lists. */
export const DOMAIN_SCHEMAS = [
  eventSchema,
  paymentSeriesSchema,
  billingAgreementSchema,
  addressSchema,
  consumerSchema,
  customReferencesSchema,
  criterionSchema,
  ingestEventSchema,
  ingestBatchSchema,
  eventPageSchema,
  oauthTokenResponseSchema,
] as const;

/** Each domain schema by its `$id`: resolves `$ref`s in the derived types. */
export type SchemaRefs = { [S in (typeof DOMAIN_SCHEMAS)[number] as S['$id']]: S };
