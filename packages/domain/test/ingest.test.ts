import { examplePaymentSeriesEvent, INGEST_BATCH_MAX_EVENTS, validateIngestBatch, validateIngestEvent } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { remove, text, validIngestEvent, withChanges } from './support/fixtures';

function check(changes: Record<string, unknown>) {
  const input = withChanges(validIngestEvent(), changes);
  return { input, result: validateIngestEvent(input) };
}

describe('IngestEvent (internal producer API)', () => {
  it('accepts an event without id and createdAt', () => {
    const input = validIngestEvent();
    expect(input).not.toHaveProperty('id');
    expect(input).not.toHaveProperty('createdAt');
    expectAccepted(validateIngestEvent(input), input);
  });

  it('accepts a complete payment-series event with a programId and merchantId', () => {
    const { sequence: _sequence, ...event } = examplePaymentSeriesEvent();
    const input = { ...event, programId: 'p-1', merchantId: 'm_1' };
    expectAccepted(validateIngestEvent(input), input);
  });

  it('refuses a sequence from the producer: Herald numbers the events it stores', () => {
    expectRejectedAt(validateIngestEvent({ ...validIngestEvent(), sequence: 1 }), '/sequence');
  });

  it.each([
    { case: 'an event without merchantId (program-wide)', changes: { '/merchantId': remove } },
    { case: 'a programId of 64 characters', changes: { '/programId': 'P'.repeat(64) } },
    { case: 'a merchantId of 64 characters', changes: { '/merchantId': 'M'.repeat(64) } },
    { case: 'a programId of letters, digits, _ and -', changes: { '/programId': 'aZ09_-' } },
  ])('accepts $case', ({ changes }) => {
    const { input, result } = check(changes);
    expectAccepted(result, input);
  });

  it.each([
    { case: 'an event without programId', pointer: '/programId', value: remove },
    { case: 'an empty programId', pointer: '/programId', value: '' },
    { case: 'a programId of 65 characters', pointer: '/programId', value: 'P'.repeat(65) },
    { case: 'a programId with a space', pointer: '/programId', value: 'program 1' },
    { case: 'a programId with a slash', pointer: '/programId', value: 'program/1' },
    { case: 'a null programId', pointer: '/programId', value: null },
    { case: 'an empty merchantId', pointer: '/merchantId', value: '' },
    { case: 'a merchantId of 65 characters', pointer: '/merchantId', value: 'M'.repeat(65) },
    { case: 'a merchantId with a dot', pointer: '/merchantId', value: 'merchant.1' },
    { case: 'a null merchantId', pointer: '/merchantId', value: null },
    { case: 'an id that is given but malformed', pointer: '/id', value: 'Event-1' },
    { case: 'a createdAt that is given but not a date-time', pointer: '/createdAt', value: 'now' },
    { case: 'an event without origin', pointer: '/origin', value: remove },
    { case: 'an event without eventType', pointer: '/eventType', value: remove },
    { case: 'an event without objectId', pointer: '/objectId', value: remove },
    { case: 'an event without objectType', pointer: '/objectType', value: remove },
    { case: 'an objectId of 256 characters', pointer: '/objectId', value: text(256) },
    { case: 'a context that is not a string', pointer: '/context', value: 1 },
    { case: 'a property the spec does not define', pointer: '/tenant', value: 't' },
  ])('rejects $case', ({ pointer, value }) => {
    expectRejectedAt(check({ [pointer]: value }).result, pointer);
  });

  it('checks the data items of a payment-series event as Payment Series', () => {
    const input = withChanges(
      { ...examplePaymentSeriesEvent(), programId: 'p-1' },
      { '/data/0/billingAddress/state': remove, '/id': remove, '/createdAt': remove, '/sequence': remove },
    );
    expectRejectedAt(validateIngestEvent(input), '/data/0/billingAddress/state');
  });
});

describe('IngestBatch', () => {
  const batchOf = (count: number) => ({ events: Array.from({ length: count }, () => validIngestEvent()) });

  it('accepts a batch of one event', () => {
    const input = batchOf(1);
    expectAccepted(validateIngestBatch(input), input);
  });

  it(`accepts a batch of ${INGEST_BATCH_MAX_EVENTS} events`, () => {
    const input = batchOf(INGEST_BATCH_MAX_EVENTS);
    expectAccepted(validateIngestBatch(input), input);
  });

  it(`rejects a batch of ${INGEST_BATCH_MAX_EVENTS + 1} events`, () => {
    expect(INGEST_BATCH_MAX_EVENTS).toBe(1000);
    expectRejectedAt(validateIngestBatch(batchOf(1001)), '/events');
  });

  it('rejects an empty batch', () => {
    expectRejectedAt(validateIngestBatch(batchOf(0)), '/events');
  });

  it('rejects a body without events', () => {
    expectRejectedAt(validateIngestBatch({}), '/events');
  });

  it('rejects a bare array of events', () => {
    expectRejectedAt(validateIngestBatch([validIngestEvent()]), '');
  });

  it('rejects a batch property the spec does not define', () => {
    expectRejectedAt(validateIngestBatch({ ...batchOf(1), dryRun: true }), '/dryRun');
  });

  it('names the offending event of a batch by its index', () => {
    const input = withChanges(batchOf(5), { '/events/3/programId': remove });
    expectRejectedAt(validateIngestBatch(input), '/events/3/programId');
  });
});
