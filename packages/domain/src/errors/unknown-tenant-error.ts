import { HeraldError } from './herald-error';

/** An ingested event names a program that does not exist, or a merchant not of the event's program. */
export class UnknownTenantError extends HeraldError {
  readonly code = 'unknown_tenant';

  constructor(
    readonly field: 'programId' | 'merchantId',
    readonly value: string,
    /** Index in the ingest batch of the first event naming it. */
    readonly index: number,
  ) {
    super(field === 'programId' ? `No program "${value}".` : `No merchant "${value}" in the event's program.`);
  }
}
