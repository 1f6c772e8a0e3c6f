import { eventIngestQueries } from './event-ingest-statements';
import { eventListQueries } from './event-list-statements';

/** Every statement on the events table, built from its parameters (the SQL snapshot compiles each). */
export const eventQueries = { ...eventIngestQueries, ...eventListQueries };
