import { examplePaymentSeriesEvent, validateEventPage } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { remove, withChanges } from './support/fixtures';

function page() {
  return { page: 1, pageSize: 20, count: 1, totalPages: 1, data: [examplePaymentSeriesEvent()] };
}

describe('EventPage (response of GET /events)', () => {
  it('accepts a page of events', () => {
    const input = page();
    expectAccepted(validateEventPage(input), input);
  });

  it('accepts an empty page', () => {
    const input = { page: 1, pageSize: 20, count: 0, totalPages: 0, data: [] };
    expectAccepted(validateEventPage(input), input);
  });

  it.each([
    { case: 'a page without page', pointer: '/page', value: remove },
    { case: 'a page without pageSize', pointer: '/pageSize', value: remove },
    { case: 'a page without count', pointer: '/count', value: remove },
    { case: 'a page without totalPages', pointer: '/totalPages', value: remove },
    { case: 'a page without data', pointer: '/data', value: remove },
    { case: 'a fractional page number', pointer: '/page', value: 1.5 },
    { case: 'a negative count', pointer: '/count', value: -1 },
    { case: 'a pageSize given as a string', pointer: '/pageSize', value: '20' },
    { case: 'an invalid event in data', pointer: '/data/0/origin', value: 'batch' },
    { case: 'a property the spec does not define', pointer: '/next', value: 2 },
  ])('rejects $case', ({ pointer, value }) => {
    expectRejectedAt(validateEventPage(withChanges(page(), { [pointer]: value })), pointer);
  });
});
