import { examplePaymentSeriesEvent, EVENT_TYPES, OBJECT_TYPES, ORIGINS, validateEvent } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { checkEventWith, remove, text } from './support/fixtures';

const UUID = '3f2c1a9e-8b7d-4c6e-9f01-23456789abcd';

describe('Event', () => {
  it('accepts a payment-series event that sets every optional field', () => {
    const input = examplePaymentSeriesEvent();
    expectAccepted(validateEvent(input), input);
  });

  it('accepts an event that sets only the required fields', () => {
    const input = {
      id: `Event-${UUID}`,
      createdAt: '2024-05-01T12:30:00Z',
      origin: 'automated',
      eventType: 'billing.expires',
      objectId: 'billing-cycle-1',
      objectType: 'billing-cycle',
      sequence: 1,
    };
    expectAccepted(validateEvent(input), input);
  });

  it.each([0, 1.5, 2_147_483_648])('rejects a sequence of %s: a whole number from 1', (sequence) => {
    expectRejectedAt(validateEvent({ ...examplePaymentSeriesEvent(), sequence }), '/sequence');
  });

  it.each([
    { case: 'an id whose UUID is upper case', changes: { '/id': `Event-${UUID.toUpperCase()}` } },
    { case: 'an objectId of 255 characters', changes: { '/objectId': text(255) } },
    { case: 'a createdAt with a time-zone offset', changes: { '/createdAt': '2024-05-01T14:30:00+02:00' } },
    { case: 'an event without sourceSystem', changes: { '/sourceSystem': remove } },
    { case: 'an event without metadata, data and context', changes: { '/metadata': remove, '/data': remove, '/context': remove } },
    { case: 'metadata with free property names', changes: { '/metadata': { 'any name': 'x', 'a/b': '', '': 'empty' } } },
    { case: 'an empty data array', changes: { '/data': [] } },
  ])('accepts $case', ({ changes }) => {
    const { input, result } = checkEventWith(changes);
    expectAccepted(result, input);
  });

  it.each(ORIGINS.map((origin) => ({ origin })))('accepts the origin $origin', ({ origin }) => {
    const { input, result } = checkEventWith({ '/origin': origin });
    expectAccepted(result, input);
  });

  it.each(EVENT_TYPES.map((eventType) => ({ eventType })))('accepts the event type $eventType', ({ eventType }) => {
    const { input, result } = checkEventWith({ '/eventType': eventType });
    expectAccepted(result, input);
  });

  it.each(OBJECT_TYPES.filter((t) => t !== 'payment-series').map((objectType) => ({ objectType })))(
    'accepts free data items for the object type $objectType',
    ({ objectType }) => {
      const { input, result } = checkEventWith({ '/objectType': objectType, '/data': [{ free: 1, shape: { nested: true } }, {}] });
      expectAccepted(result, input);
    },
  );

  it.each([
    { case: 'an event without id', pointer: '/id', value: remove },
    { case: 'a null id', pointer: '/id', value: null },
    { case: 'an id without the Event prefix', pointer: '/id', value: `Evt-${UUID}` },
    { case: 'an id whose suffix is not a UUID', pointer: '/id', value: 'Event-12345' },
    { case: 'an id with text after the UUID', pointer: '/id', value: `Event-${UUID}-x` },
    { case: 'an event without createdAt', pointer: '/createdAt', value: remove },
    { case: 'a createdAt without a time zone', pointer: '/createdAt', value: '2024-05-01T12:30:00' },
    { case: 'a createdAt that is not a real date', pointer: '/createdAt', value: '2024-02-30T12:30:00Z' },
    { case: 'a createdAt that is a number', pointer: '/createdAt', value: 1714566600000 },
    { case: 'a sourceSystem outside the allowed values', pointer: '/sourceSystem', value: 'billing-module' },
    { case: 'a null sourceSystem', pointer: '/sourceSystem', value: null },
    { case: 'an event without origin', pointer: '/origin', value: remove },
    { case: 'an origin outside the allowed values', pointer: '/origin', value: 'batch' },
    { case: 'an origin in another case', pointer: '/origin', value: 'API' },
    { case: 'an event without eventType', pointer: '/eventType', value: remove },
    { case: 'an eventType outside the allowed values', pointer: '/eventType', value: 'billing.deleted' },
    { case: 'an event without objectId', pointer: '/objectId', value: remove },
    { case: 'an empty objectId', pointer: '/objectId', value: '' },
    { case: 'an objectId of 256 characters', pointer: '/objectId', value: text(256) },
    { case: 'a null objectId', pointer: '/objectId', value: null },
    { case: 'an event without objectType', pointer: '/objectType', value: remove },
    { case: 'an objectType outside the allowed values', pointer: '/objectType', value: 'invoice' },
    { case: 'the filter value plan as objectType', pointer: '/objectType', value: 'plan' },
    { case: 'metadata with a number value', pointer: '/metadata/count', value: 3 },
    { case: 'metadata with a null value', pointer: '/metadata/note', value: null },
    { case: 'metadata with an object value', pointer: '/metadata/nested', value: { a: 'b' } },
    { case: 'metadata that is not an object', pointer: '/metadata', value: 'requestId=req-42' },
    { case: 'data that is not an array', pointer: '/data', value: { id: 'x' } },
    { case: 'a data item that is not an object', pointer: '/data/1', value: 'payment-series' },
    { case: 'a context that is not a string', pointer: '/context', value: { customerAccountId: 'C-1001' } },
    { case: 'a null context', pointer: '/context', value: null },
    { case: 'a property the spec does not define', pointer: '/programId', value: 'program_1' },
  ])('rejects $case', ({ pointer, value }) => {
    expectRejectedAt(checkEventWith({ [pointer]: value }).result, pointer);
  });

  it('rejects a free data item when the object type is payment-series', () => {
    const { result } = checkEventWith({ '/data/1': { free: 1 } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.violations.map((v) => v.pointer)).toContain('/data/1/id');
  });
});
