import { HeraldError } from './herald-error';

/** An ingested event's id is stored already with different content: ids are never reused. */
export class EventConflictError extends HeraldError {
  readonly code = 'event_conflict';

  constructor(
    readonly eventId: string,
    /** Index of the event in the ingest batch. */
    readonly index: number,
  ) {
    super(`Event ${eventId} exists already with different content.`);
  }
}
