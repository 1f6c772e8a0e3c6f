import { schemaId } from './schema-helpers';

/** Consumer: personal data of a natural person; also the shape of businessConsumer (company data). */
export const consumerSchema = {
  $id: schemaId('consumer'),
  title: 'Consumer',
  description:
    'Personal data when the consumer is a natural person; also the shape of businessConsumer, the company data ' +
    'when the consumer is a business or legal entity.',
  type: 'object',
  additionalProperties: false,
  required: ['firstName', 'lastName', 'emailAddress', 'dateOfBirth'],
  properties: {
    firstName: { type: 'string', maxLength: 60, description: 'First name. Max 60 characters.' },
    lastName: { type: 'string', maxLength: 60, description: 'Last name. Max 60 characters.' },
    middleName: { type: ['string', 'null'], maxLength: 60, description: 'Middle name. Max 60 characters.' },
    emailAddress: { type: 'string', format: 'email', maxLength: 255, description: 'E-mail address. Max 255 characters.' },
    title: { type: 'string', maxLength: 3, enum: ['Mr', 'Mrs', 'Ms'], description: 'Title: Mr, Mrs or Ms. Max 3 characters.' },
    culture: {
      type: 'string',
      maxLength: 5,
      pattern: '^[A-Za-z]{2}-[A-Za-z]{2}$',
      description:
        'ISO 639-1 language code and ISO 3166-1 alpha-2 country code joined by a dash (e.g. en-US); not case ' +
        'sensitive. Max 5 characters. When absent the browser culture is used; the default culture is English.',
    },
    dateOfBirth: {
      type: 'string',
      format: 'date',
      description: 'Date of birth, YYYY-MM-DD (a real calendar date); placeholder data is acceptable.',
    },
    gender: { type: 'string', enum: ['M', 'F', 'D'], description: 'Gender: M, F or D.' },
    mobilePhone: { type: 'string', maxLength: 30, description: 'Mobile phone number. Max 30 characters.' },
    homePhone: { type: 'string', maxLength: 30, description: 'Home phone number. Max 30 characters.' },
    workPhone: { type: 'string', maxLength: 30, description: 'Work phone number. Max 30 characters.' },
    taxId: { type: ['string', 'null'], maxLength: 30, description: 'Tax id. Max 30 characters.' },
  },
} as const;
