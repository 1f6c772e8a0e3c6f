import { expectAccepted, expectRejectedAt } from './support/expectations';
import { checkEventWith, remove, text } from './support/fixtures';

describe.each(['billingAddress', 'shippingAddress'])('Address (data/0/%s)', (name) => {
  const at = (field: string) => `/data/0/${name}/${field}`;

  it.each([
    { case: 'an addressLine1 of 60 characters', field: 'addressLine1', value: text(60) },
    { case: 'an addressLine2 of 60 characters', field: 'addressLine2', value: text(60) },
    { case: 'a null addressLine2', field: 'addressLine2', value: null },
    { case: 'an address without addressLine2', field: 'addressLine2', value: remove },
    { case: 'an addressLine3 of 60 characters', field: 'addressLine3', value: text(60) },
    { case: 'a null addressLine3', field: 'addressLine3', value: null },
    { case: 'a number of 10 characters', field: 'number', value: text(10) },
    { case: 'a city of 50 characters', field: 'city', value: text(50) },
    { case: 'a postCode of 10 characters', field: 'postCode', value: text(10) },
    { case: 'a state of 3 characters', field: 'state', value: 'NSW' },
  ])('accepts $case', ({ field, value }) => {
    const { input, result } = checkEventWith({ [at(field)]: value });
    expectAccepted(result, input);
  });

  it.each([
    { case: 'a two-letter countryCode', countryCode: 'DE', state: 'BE' },
    { case: 'a three-letter countryCode', countryCode: 'DEU', state: 'BE' },
    { case: 'a DE address without state', countryCode: 'DE', state: remove },
    { case: 'a DE address with a null state', countryCode: 'DE', state: null },
    { case: 'a GB address without state', countryCode: 'GB', state: remove },
    { case: 'a US address with a state', countryCode: 'US', state: 'CA' },
    { case: 'a USA address with a state', countryCode: 'USA', state: 'NY' },
    { case: 'a CA address with a state', countryCode: 'CA', state: 'QC' },
    { case: 'a CAN address with a state', countryCode: 'CAN', state: 'ON' },
  ])('accepts $case', ({ countryCode, state }) => {
    const { input, result } = checkEventWith({ [at('countryCode')]: countryCode, [at('state')]: state });
    expectAccepted(result, input);
  });

  it.each(['US', 'USA', 'CA', 'CAN'])('rejects a %s address without state', (countryCode) => {
    const { result } = checkEventWith({ [at('countryCode')]: countryCode, [at('state')]: remove });
    expectRejectedAt(result, at('state'));
  });

  it.each(['US', 'USA', 'CA', 'CAN'])('rejects a %s address with a null state', (countryCode) => {
    const { result } = checkEventWith({ [at('countryCode')]: countryCode, [at('state')]: null });
    expectRejectedAt(result, at('state'));
  });

  it.each(['US', 'USA', 'CA', 'CAN'])('rejects a %s address with an empty state', (countryCode) => {
    const { result } = checkEventWith({ [at('countryCode')]: countryCode, [at('state')]: '' });
    expectRejectedAt(result, at('state'));
  });

  it('accepts a DE address with an empty state', () => {
    const { input, result } = checkEventWith({ [at('countryCode')]: 'DE', [at('state')]: '' });
    expectAccepted(result, input);
  });

  it.each([
    { case: 'an address without addressLine1', field: 'addressLine1', value: remove },
    { case: 'an addressLine1 of 61 characters', field: 'addressLine1', value: text(61) },
    { case: 'a null addressLine1', field: 'addressLine1', value: null },
    { case: 'an addressLine2 of 61 characters', field: 'addressLine2', value: text(61) },
    { case: 'an addressLine2 that is a number', field: 'addressLine2', value: 2 },
    { case: 'an addressLine3 of 61 characters', field: 'addressLine3', value: text(61) },
    { case: 'an address without number', field: 'number', value: remove },
    { case: 'a number of 11 characters', field: 'number', value: text(11) },
    { case: 'a number given as a number', field: 'number', value: 12 },
    { case: 'an address without city', field: 'city', value: remove },
    { case: 'a city of 51 characters', field: 'city', value: text(51) },
    { case: 'a null city', field: 'city', value: null },
    { case: 'an address without postCode', field: 'postCode', value: remove },
    { case: 'a postCode of 11 characters', field: 'postCode', value: text(11) },
    { case: 'an address without countryCode', field: 'countryCode', value: remove },
    { case: 'a countryCode of 1 character', field: 'countryCode', value: 'D' },
    { case: 'a countryCode of 4 characters', field: 'countryCode', value: 'DEUT' },
    { case: 'a countryCode in lower case', field: 'countryCode', value: 'de' },
    { case: 'a numeric countryCode', field: 'countryCode', value: '276' },
    { case: 'a null countryCode', field: 'countryCode', value: null },
    { case: 'a state of 4 characters', field: 'state', value: 'CALI' },
    { case: 'an address field the spec does not define', field: 'province', value: 'ON' },
  ])('rejects $case', ({ field, value }) => {
    expectRejectedAt(checkEventWith({ [at(field)]: value }).result, at(field));
  });
});
