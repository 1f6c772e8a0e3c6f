import { prefixedUuidPattern, schemaId } from './schema-helpers';

/** Billing Agreement: the stored payment instrument of a payment series. */
export const billingAgreementSchema = {
  $id: schemaId('billing-agreement'),
  title: 'BillingAgreement',
  description: 'Holds the payment instrument information of a payment series.',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'paymentObjectId', 'billingAgreementDate', 'name', 'code', 'isExpired', 'expiryDate'],
  properties: {
    id: {
      type: 'string',
      // The spec also says "max 50 characters", which no id of this format (53 characters) can meet;
      // the format wins, so real ids are not refused. See Decisions in packages/domain/README.md.
      pattern: prefixedUuidPattern('BillingAgreement'),
      description: 'The literal prefix BillingAgreement, a hyphen, then a UUID.',
    },
    paymentObjectId: { type: 'string', description: 'Payment object used for billing the subscription.' },
    billingAgreementDate: {
      type: 'string',
      format: 'date-time',
      maxLength: 24,
      description: 'Creation date of the billing agreement. Max 24 characters (e.g. 2024-05-01T12:30:00.000Z).',
    },
    name: { type: 'string', maxLength: 255, description: 'Display name of the stored payment option. Max 255 characters.' },
    code: { type: 'string', maxLength: 255, description: 'Code of the stored payment option. Max 255 characters.' },
    carrierNumber: { type: 'string', description: 'Masked carrier number of the stored payment instrument.' },
    isExpired: { type: 'boolean', description: 'Whether a card used as payment option is expired.' },
    expiryDate: {
      type: 'string',
      maxLength: 7,
      pattern: '^(0[1-9]|1[0-2])/[0-9]{4}$',
      description: 'Expiry date (MM/YYYY) when a card is the payment option. Max 7 characters.',
    },
    storedPaymentOptionData: {
      type: ['object', 'null'],
      description: 'Additional data of the stored payment option; its fields are not specified.',
    },
  },
} as const;
