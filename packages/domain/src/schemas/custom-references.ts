import { schemaId } from './schema-helpers';

/** Custom References: free merchant references of a payment series. */
export const customReferencesSchema = {
  $id: schemaId('custom-references'),
  title: 'CustomReferences',
  description: 'Custom merchant references of a payment series.',
  type: 'object',
  additionalProperties: false,
  properties: {
    custom1: { type: ['string', 'null'], maxLength: 255, description: 'For external party use. Max 255 characters.' },
    custom2: { type: ['string', 'null'], maxLength: 255, description: 'Max 255 characters.' },
    custom3: { type: ['string', 'null'], maxLength: 255, description: 'Max 255 characters.' },
  },
} as const;
