import { expectAccepted, expectRejectedAt } from './support/expectations';
import { checkEventWith, remove, text } from './support/fixtures';

const BA = '/data/0/billingAgreement';
const UUID = '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d';

describe('Billing Agreement (data/0/billingAgreement)', () => {
  it.each([
    // Decision: the id format (53 characters) wins over the spec's "max 50"; see the package README.
    { case: 'an id of the BillingAgreement-<uuid> format, 53 characters long', field: 'id', value: `BillingAgreement-${UUID}` },
    { case: 'a billingAgreementDate of 24 characters', field: 'billingAgreementDate', value: '2024-05-01T12:30:00.000Z' },
    { case: 'a name of 255 characters', field: 'name', value: text(255) },
    { case: 'a code of 255 characters', field: 'code', value: text(255) },
    { case: 'a billing agreement without carrierNumber', field: 'carrierNumber', value: remove },
    { case: 'an expired card', field: 'isExpired', value: true },
    { case: 'an expiryDate in January', field: 'expiryDate', value: '01/2030' },
    { case: 'a null storedPaymentOptionData', field: 'storedPaymentOptionData', value: null },
    { case: 'a billing agreement without storedPaymentOptionData', field: 'storedPaymentOptionData', value: remove },
    { case: 'storedPaymentOptionData with any properties', field: 'storedPaymentOptionData', value: { a: 1, b: [null], c: { d: 'e' } } },
  ])('accepts $case', ({ field, value }) => {
    const { input, result } = checkEventWith({ [`${BA}/${field}`]: value });
    expectAccepted(result, input);
  });

  it.each([
    { case: 'a billing agreement without id', field: 'id', value: remove },
    { case: 'an id without the BillingAgreement prefix', field: 'id', value: `Agreement-${UUID}` },
    { case: 'an id whose suffix is not a UUID', field: 'id', value: 'BillingAgreement-1234' },
    { case: 'an id one character longer than the format', field: 'id', value: `BillingAgreement-${UUID}0` },
    { case: 'a billing agreement without paymentObjectId', field: 'paymentObjectId', value: remove },
    { case: 'a paymentObjectId that is a number', field: 'paymentObjectId', value: 123 },
    { case: 'a billing agreement without billingAgreementDate', field: 'billingAgreementDate', value: remove },
    { case: 'a billingAgreementDate that is not a date-time', field: 'billingAgreementDate', value: '01.05.2024' },
    { case: 'a valid date-time of 25 characters as billingAgreementDate', field: 'billingAgreementDate', value: '2024-05-01T12:30:00.0000Z' },
    { case: 'a billing agreement without name', field: 'name', value: remove },
    { case: 'a name of 256 characters', field: 'name', value: text(256) },
    { case: 'a billing agreement without code', field: 'code', value: remove },
    { case: 'a code of 256 characters', field: 'code', value: text(256) },
    { case: 'a null code', field: 'code', value: null },
    { case: 'a carrierNumber that is a number', field: 'carrierNumber', value: 4242 },
    { case: 'a billing agreement without isExpired', field: 'isExpired', value: remove },
    { case: 'an isExpired given as a string', field: 'isExpired', value: 'false' },
    { case: 'a billing agreement without expiryDate', field: 'expiryDate', value: remove },
    { case: 'an expiryDate of 8 characters', field: 'expiryDate', value: '12/20271' },
    { case: 'an expiryDate with month 13', field: 'expiryDate', value: '13/2027' },
    { case: 'an expiryDate with month 00', field: 'expiryDate', value: '00/2027' },
    { case: 'an expiryDate with a one-digit month', field: 'expiryDate', value: '1/2027' },
    { case: 'an expiryDate with a two-digit year', field: 'expiryDate', value: '12/27' },
    { case: 'an expiryDate with a dash', field: 'expiryDate', value: '12-2027' },
    { case: 'a storedPaymentOptionData that is a string', field: 'storedPaymentOptionData', value: 'visa' },
    { case: 'a billing agreement field the spec does not define', field: 'status', value: 'active' },
  ])('rejects $case', ({ field, value }) => {
    const pointer = `${BA}/${field}`;
    expectRejectedAt(checkEventWith({ [pointer]: value }).result, pointer);
  });
});
