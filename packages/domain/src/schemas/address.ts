import { schemaId } from './schema-helpers';

/** Country codes whose addresses must carry a (non-null) state. */
const COUNTRY_CODES_REQUIRING_STATE = ['US', 'USA', 'CA', 'CAN'] as const;

/** Address: the shape of a payment series' billingAddress and shippingAddress. */
export const addressSchema = {
  $id: schemaId('address'),
  title: 'Address',
  description: 'A postal address: the shape of billingAddress and shippingAddress.',
  type: 'object',
  additionalProperties: false,
  required: ['addressLine1', 'number', 'city', 'postCode', 'countryCode'],
  properties: {
    addressLine1: { type: 'string', maxLength: 60, description: 'First address line. Max 60 characters.' },
    addressLine2: { type: ['string', 'null'], maxLength: 60, description: 'Second address line. Max 60 characters.' },
    addressLine3: { type: ['string', 'null'], maxLength: 60, description: 'Third address line. Max 60 characters.' },
    number: { type: 'string', maxLength: 10, description: 'House or building number. Max 10 characters.' },
    city: { type: 'string', maxLength: 50, description: 'City. Max 50 characters.' },
    postCode: { type: 'string', maxLength: 10, description: 'Post code. Max 10 characters.' },
    countryCode: {
      type: 'string',
      minLength: 2,
      maxLength: 3,
      // ISO codes are upper-case letters; the state rule below compares them exactly.
      pattern: '^[A-Z]+$',
      description: 'ISO 3166 alpha-2 or alpha-3 country code, upper case. 2 to 3 characters.',
    },
    state: {
      type: ['string', 'null'],
      maxLength: 3,
      description: 'State or province. Max 3 characters. Mandatory (and not null) when countryCode is US, USA, CA or CAN.',
    },
  },
  if: { required: ['countryCode'], properties: { countryCode: { enum: COUNTRY_CODES_REQUIRING_STATE } } },
  // Mandatory means a value: present, not null and not empty.
  then: { required: ['state'], properties: { state: { type: 'string', minLength: 1 } } },
} as const;
