import { eventSchema } from './event';
import { ref, schemaId } from './schema-helpers';

/** The spec's page envelope, but for its `data`: every paged merchant answer (events, deliveries) uses it. */
export const PAGE_ENVELOPE = {
  required: ['page', 'pageSize', 'count', 'totalPages', 'data'],
  properties: {
    page: { type: 'integer', minimum: 0, description: 'Page number returned.' },
    pageSize: { type: 'integer', minimum: 0, description: 'Records per page.' },
    count: { type: 'integer', minimum: 0, description: 'Count of records.' },
    totalPages: { type: 'integer', minimum: 0, description: 'Total number of pages.' },
  },
} as const;

/** EventPage: the page envelope GET /events answers with. */
export const eventPageSchema = {
  $id: schemaId('event-page'),
  title: 'EventPage',
  description: 'One page of events, the response of GET /events.',
  type: 'object',
  additionalProperties: false,
  required: PAGE_ENVELOPE.required,
  properties: {
    ...PAGE_ENVELOPE.properties,
    data: { type: 'array', items: ref(eventSchema), description: 'The events of the page.' },
  },
} as const;
