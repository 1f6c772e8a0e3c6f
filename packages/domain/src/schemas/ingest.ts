import { EVENT_CONTENT_REQUIRED, eventProperties, paymentSeriesDataRule } from './event';
import { ref, schemaId } from './schema-helpers';

/** Most events one ingest batch may carry. */
export const INGEST_BATCH_MAX_EVENTS = 1000;

/** Pattern of program and merchant ids: 1 to 64 letters, digits, _ or -. */
export const TENANT_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';

/** IngestEvent: an event as the internal producer sends it; the server assigns id and createdAt when absent. */
export const ingestEventSchema = {
  $id: schemaId('ingest-event'),
  title: 'IngestEvent',
  description:
    'An event sent by the internal producer: the Event fields plus the program and merchant it belongs to. ' +
    'id and createdAt are optional; the server generates them when absent.',
  type: 'object',
  additionalProperties: false,
  required: [...EVENT_CONTENT_REQUIRED, 'programId'],
  properties: {
    ...eventProperties,
    programId: {
      type: 'string',
      pattern: TENANT_ID_PATTERN,
      description: 'The E-wallet Program the event belongs to. 1 to 64 letters, digits, _ or -.',
    },
    merchantId: {
      type: 'string',
      pattern: TENANT_ID_PATTERN,
      description:
        'The merchant the event belongs to, for Merchant Specific Notifications; absent for program-wide events. ' + '1 to 64 letters, digits, _ or -.',
    },
  },
  allOf: [paymentSeriesDataRule],
} as const;

/** IngestBatch: the body of the producer's batch ingest call. */
export const ingestBatchSchema = {
  $id: schemaId('ingest-batch'),
  title: 'IngestBatch',
  description: `A batch of 1 to ${INGEST_BATCH_MAX_EVENTS} ingest events.`,
  type: 'object',
  additionalProperties: false,
  required: ['events'],
  properties: {
    events: { type: 'array', minItems: 1, maxItems: INGEST_BATCH_MAX_EVENTS, items: ref(ingestEventSchema) },
  },
} as const;
