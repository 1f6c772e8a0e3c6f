import { addressSchema } from './address';
import { billingAgreementSchema } from './billing-agreement';
import { consumerSchema } from './consumer';
import { criterionSchema } from './criterion';
import { customReferencesSchema } from './custom-references';
import { nullable, prefixedUuidPattern, ref, schemaId } from './schema-helpers';

/** Payment Series: the item of Event.data when the event's objectType is payment-series. */
export const paymentSeriesSchema = {
  $id: schemaId('payment-series'),
  title: 'PaymentSeries',
  description: 'A payment series: the item of Event.data for events whose objectType is payment-series.',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'createdAt', 'updatedAt', 'customerAccountId', 'currencyIsoCode', 'billingAddress'],
  properties: {
    id: {
      type: 'string',
      pattern: prefixedUuidPattern('PaymentSeries'),
      description: 'The literal prefix PaymentSeries, a hyphen, then a UUID.',
    },
    createdAt: { type: 'string', format: 'date-time', description: 'When the payment series was created.' },
    updatedAt: { type: 'string', format: 'date-time', description: 'When it was last updated.' },
    deletedAt: { type: ['string', 'null'], format: 'date-time', description: 'When it was deleted, if applicable.' },
    customerAccountId: {
      type: 'string',
      maxLength: 125,
      description: "Merchant-supplied identifier of the customer's account (for example a customer number). Max 125 characters.",
    },
    currencyIsoCode: {
      type: 'string',
      minLength: 3,
      maxLength: 3,
      pattern: '^[A-Z]+$',
      description: 'ISO 4217 currency code, upper case. Exactly 3 characters.',
    },
    externalMerchantId: {
      type: 'string',
      maxLength: 255,
      description: "Merchant's external reference value; available as a filtering field. Max 255 characters.",
    },
    merchantMetadata: {
      type: ['string', 'null'],
      maxLength: 255,
      description: 'Merchant metadata linked to the payment series. Max 255 characters.',
    },
    externalReference: { type: 'string', maxLength: 255, description: 'Custom merchant reference. Max 255 characters.' },
    billingAgreement: {
      ...nullable(ref(billingAgreementSchema)),
      description: 'Holds the payment instrument information; null for a newly created subscription.',
    },
    billingAddress: { ...ref(addressSchema), description: 'Billing address.' },
    shippingAddress: { ...ref(addressSchema), description: 'Shipping address.' },
    consumer: {
      ...nullable(ref(consumerSchema)),
      description: 'Personal data when the consumer is a natural person. Not together with businessConsumer.',
    },
    businessConsumer: {
      ...nullable(ref(consumerSchema)),
      description: 'Company data when the consumer is a business or legal entity. Not together with consumer.',
    },
    customReferences: { ...ref(customReferencesSchema), description: 'Custom merchant references.' },
    criteria: { type: 'array', items: ref(criterionSchema), description: 'Key-value pairs.' },
    targetMerchantAccountReference: {
      description:
        'When provided, the payment is processed in favour of the indicated sub-merchant account and the main ' +
        'merchant account number is ignored. Its type and fields are not specified, so any value is accepted.',
    },
  },
  // consumer and businessConsumer exclude each other: with a consumer object, businessConsumer may
  // only be absent or null.
  if: { required: ['consumer'], properties: { consumer: { type: 'object' } } },
  then: {
    properties: {
      businessConsumer: { type: 'null', description: 'Absent or null when consumer is present.' },
    },
  },
} as const;
