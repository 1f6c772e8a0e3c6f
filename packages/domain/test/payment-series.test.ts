import { examplePaymentSeriesEvent } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { checkEventWith, remove, text } from './support/fixtures';

// Every case edits the payment series at data/0 of the complete valid event.
const PS = '/data/0';
const UUID = '0b9f8e7d-6c5b-4a39-8271-605f4e3d2c1b';

const consumer = examplePaymentSeriesEvent().data?.[0]?.consumer;
const OPTIONAL_FIELDS = [
  'deletedAt',
  'externalMerchantId',
  'merchantMetadata',
  'externalReference',
  'billingAgreement',
  'shippingAddress',
  'consumer',
  'businessConsumer',
  'customReferences',
  'criteria',
  'targetMerchantAccountReference',
];
const withoutOptionalFields = Object.fromEntries(OPTIONAL_FIELDS.map((field) => [`${PS}/${field}`, remove]));
const long255 = { custom1: text(255), custom2: text(255), custom3: text(255) };

describe('Payment Series (items of Event.data for objectType payment-series)', () => {
  it.each([
    { case: 'a null deletedAt', changes: { [`${PS}/deletedAt`]: null } },
    { case: 'a payment series that sets only the required fields', changes: withoutOptionalFields },
    { case: 'a customerAccountId of 125 characters', changes: { [`${PS}/customerAccountId`]: text(125) } },
    { case: 'an externalMerchantId of 255 characters', changes: { [`${PS}/externalMerchantId`]: text(255) } },
    { case: 'a merchantMetadata of 255 characters', changes: { [`${PS}/merchantMetadata`]: text(255) } },
    { case: 'a null merchantMetadata', changes: { [`${PS}/merchantMetadata`]: null } },
    { case: 'an externalReference of 255 characters', changes: { [`${PS}/externalReference`]: text(255) } },
    { case: 'a null billingAgreement (a newly created subscription)', changes: { [`${PS}/billingAgreement`]: null } },
    { case: 'a null consumer', changes: { [`${PS}/consumer`]: null } },
    {
      case: 'a businessConsumer instead of a consumer',
      changes: { [`${PS}/consumer`]: remove, [`${PS}/businessConsumer`]: consumer },
    },
    {
      case: 'a businessConsumer with a null consumer',
      changes: { [`${PS}/consumer`]: null, [`${PS}/businessConsumer`]: consumer },
    },
    {
      case: 'both consumer and businessConsumer null',
      changes: { [`${PS}/consumer`]: null, [`${PS}/businessConsumer`]: null },
    },
    { case: 'an empty criteria list', changes: { [`${PS}/criteria`]: [] } },
    {
      case: 'a criterion name of 50 and value of 100 characters',
      changes: { [`${PS}/criteria/0`]: { name: text(50), value: text(100) } },
    },
    { case: 'customReferences of 255 characters each', changes: { [`${PS}/customReferences`]: long255 } },
    {
      case: 'customReferences that are all null',
      changes: { [`${PS}/customReferences`]: { custom1: null, custom2: null, custom3: null } },
    },
    { case: 'empty customReferences', changes: { [`${PS}/customReferences`]: {} } },
    { case: 'a targetMerchantAccountReference that is a string', changes: { [`${PS}/targetMerchantAccountReference`]: 'sub-9' } },
    { case: 'a targetMerchantAccountReference that is a number', changes: { [`${PS}/targetMerchantAccountReference`]: 9 } },
    { case: 'a targetMerchantAccountReference that is null', changes: { [`${PS}/targetMerchantAccountReference`]: null } },
  ])('accepts $case', ({ changes }) => {
    const { input, result } = checkEventWith(changes);
    expectAccepted(result, input);
  });

  it.each([
    { case: 'a payment series without id', field: 'id', value: remove },
    { case: 'an id without the PaymentSeries prefix', field: 'id', value: `Series-${UUID}` },
    { case: 'an id whose suffix is not a UUID', field: 'id', value: 'PaymentSeries-42' },
    { case: 'a null id', field: 'id', value: null },
    { case: 'a payment series without createdAt', field: 'createdAt', value: remove },
    { case: 'a createdAt that is not a date-time', field: 'createdAt', value: '2024-05-01' },
    { case: 'a payment series without updatedAt', field: 'updatedAt', value: remove },
    { case: 'an updatedAt that is not a date-time', field: 'updatedAt', value: 'yesterday' },
    { case: 'a null updatedAt', field: 'updatedAt', value: null },
    { case: 'a deletedAt that is not a date-time', field: 'deletedAt', value: '2024-13-01T00:00:00Z' },
    { case: 'a payment series without customerAccountId', field: 'customerAccountId', value: remove },
    { case: 'a customerAccountId of 126 characters', field: 'customerAccountId', value: text(126) },
    { case: 'a null customerAccountId', field: 'customerAccountId', value: null },
    { case: 'a payment series without currencyIsoCode', field: 'currencyIsoCode', value: remove },
    { case: 'a currencyIsoCode of 2 characters', field: 'currencyIsoCode', value: 'EU' },
    { case: 'a currencyIsoCode of 4 characters', field: 'currencyIsoCode', value: 'EURO' },
    { case: 'a currencyIsoCode in lower case', field: 'currencyIsoCode', value: 'eur' },
    { case: 'a numeric currencyIsoCode', field: 'currencyIsoCode', value: '978' },
    { case: 'an externalMerchantId of 256 characters', field: 'externalMerchantId', value: text(256) },
    { case: 'a null externalMerchantId', field: 'externalMerchantId', value: null },
    { case: 'a merchantMetadata of 256 characters', field: 'merchantMetadata', value: text(256) },
    { case: 'an externalReference of 256 characters', field: 'externalReference', value: text(256) },
    { case: 'a null externalReference', field: 'externalReference', value: null },
    { case: 'a billingAgreement that is not an object', field: 'billingAgreement', value: 'BillingAgreement-1' },
    { case: 'a payment series without billingAddress', field: 'billingAddress', value: remove },
    { case: 'a null billingAddress', field: 'billingAddress', value: null },
    { case: 'a null shippingAddress', field: 'shippingAddress', value: null },
    { case: 'a consumer that is not an object', field: 'consumer', value: 'Ada Lovelace' },
    { case: 'both a consumer and a businessConsumer', field: 'businessConsumer', value: consumer },
    { case: 'a null customReferences', field: 'customReferences', value: null },
    { case: 'a custom1 of 256 characters', field: 'customReferences/custom1', value: text(256) },
    { case: 'a custom2 of 256 characters', field: 'customReferences/custom2', value: text(256) },
    { case: 'a custom3 of 256 characters', field: 'customReferences/custom3', value: text(256) },
    { case: 'a custom reference the spec does not define', field: 'customReferences/custom4', value: 'x' },
    { case: 'criteria that are not an array', field: 'criteria', value: { segment: 'premium' } },
    { case: 'a criterion that is not an object', field: 'criteria/0', value: 'segment=premium' },
    { case: 'a criterion without name', field: 'criteria/0/name', value: remove },
    { case: 'a criterion name of 51 characters', field: 'criteria/0/name', value: text(51) },
    { case: 'a null criterion name', field: 'criteria/0/name', value: null },
    { case: 'a criterion without value', field: 'criteria/1/value', value: remove },
    { case: 'a criterion value of 101 characters', field: 'criteria/1/value', value: text(101) },
    { case: 'a criterion value that is a number', field: 'criteria/1/value', value: 5 },
    { case: 'a criterion field the spec does not define', field: 'criteria/0/weight', value: '1' },
    { case: 'a payment series field the spec does not define', field: 'status', value: 'active' },
  ])('rejects $case', ({ field, value }) => {
    const pointer = `${PS}/${field}`;
    expectRejectedAt(checkEventWith({ [pointer]: value }).result, pointer);
  });

  it('reports a missing field of a Payment Series at that field', () => {
    const { result } = checkEventWith({ [`${PS}/billingAddress/city`]: remove, [`${PS}/consumer/lastName`]: remove });
    expect(result.ok ? [] : result.violations).toEqual([
      { pointer: `${PS}/billingAddress/city`, message: 'is required', keyword: 'required' },
      { pointer: `${PS}/consumer/lastName`, message: 'is required', keyword: 'required' },
    ]);
  });
});
