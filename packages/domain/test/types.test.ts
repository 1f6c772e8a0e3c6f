// The types are derived from the schemas; `pnpm typecheck` is what checks this file, the runtime
// assertions only keep Jest honest.
import {
  type Address,
  type Consumer,
  type Event,
  type IngestEvent,
  type ObjectType,
  OBJECT_TYPES,
  type PaymentSeries,
  validateEvent,
  examplePaymentSeriesEvent,
} from '../src';
import { validIngestEvent } from './support/fixtures';

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

describe('derived types', () => {
  it('type the enum lists as their literal values', () => {
    assertType<Equals<ObjectType, (typeof OBJECT_TYPES)[number]>>();
    assertType<Equals<Consumer['title'], 'Mr' | 'Mrs' | 'Ms' | undefined>>();
    assertType<Equals<Consumer['gender'], 'M' | 'F' | 'D' | undefined>>();
    expect(OBJECT_TYPES).toContain('payment-series');
  });

  it('make required fields required, optional ones optional and nullable ones accept null', () => {
    assertType<Equals<Address['city'], string>>();
    assertType<Equals<Address['state'], string | null | undefined>>();
    assertType<Equals<PaymentSeries['consumer'], Consumer | null | undefined>>();
    assertType<Equals<PaymentSeries['targetMerchantAccountReference'], unknown>>();
    // @ts-expect-error city is required
    const address: Address = { addressLine1: 'a', number: '1', postCode: '1', countryCode: 'DE' };
    expect(address).toBeDefined();
  });

  it('type data as Payment Series when objectType is payment-series', () => {
    const result = validateEvent(examplePaymentSeriesEvent());
    if (!result.ok) throw new Error('the fixture must be valid');
    const event: Event = result.value;
    if (event.objectType === 'payment-series') {
      const currency: string | undefined = event.data?.[0]?.currencyIsoCode;
      expect(currency).toBe('EUR');
    } else {
      // @ts-expect-error free data items have no known fields
      const currency: string | undefined = event.data?.[0]?.currencyIsoCode;
      expect(currency).toBeUndefined();
    }
  });

  it('make id and createdAt optional and programId required on ingest events', () => {
    assertType<Equals<IngestEvent['id'], string | undefined>>();
    assertType<Equals<IngestEvent['programId'], string>>();
    // @ts-expect-error programId is required
    const event: IngestEvent = { origin: 'api', eventType: 'created', objectId: 'x', objectType: 'refund' };
    expect(validIngestEvent().programId).toBe('program_1');
    expect(event).toBeDefined();
  });
});
