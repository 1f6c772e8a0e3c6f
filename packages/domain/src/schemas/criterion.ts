import { schemaId } from './schema-helpers';

/** Criterion: one key-value pair of a payment series' criteria. */
export const criterionSchema = {
  $id: schemaId('criterion'),
  title: 'Criterion',
  description: 'A key-value pair of a payment series.',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'value'],
  properties: {
    name: { type: 'string', maxLength: 50, description: 'Name. Max 50 characters.' },
    value: { type: 'string', maxLength: 100, description: 'Value. Max 100 characters.' },
  },
} as const;
