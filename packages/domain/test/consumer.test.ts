import { examplePaymentSeriesEvent, validateEvent } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { remove, text, withChanges } from './support/fixtures';

const PS = '/data/0';

// The same rules hold for consumer and for businessConsumer (given instead of a consumer).
function baseFor(name: string): unknown {
  const event = examplePaymentSeriesEvent();
  if (name === 'consumer') return event;
  return withChanges(event, { [`${PS}/businessConsumer`]: event.data?.[0]?.consumer, [`${PS}/consumer`]: remove });
}

describe.each(['consumer', 'businessConsumer'])('Consumer (data/0/%s)', (name) => {
  const at = (field: string) => `${PS}/${name}/${field}`;
  const check = (changes: Record<string, unknown>) => {
    const input = withChanges(baseFor(name), changes);
    return { input, result: validateEvent(input) };
  };

  it.each([
    { case: 'a firstName of 60 characters', field: 'firstName', value: text(60) },
    { case: 'a lastName of 60 characters', field: 'lastName', value: text(60) },
    { case: 'a middleName of 60 characters', field: 'middleName', value: text(60) },
    { case: 'a null middleName', field: 'middleName', value: null },
    { case: 'an emailAddress of 255 characters', field: 'emailAddress', value: `${text(243)}@example.com` },
    { case: 'the title Mr', field: 'title', value: 'Mr' },
    { case: 'the title Mrs', field: 'title', value: 'Mrs' },
    { case: 'the title Ms', field: 'title', value: 'Ms' },
    { case: 'a consumer without title', field: 'title', value: remove },
    { case: 'the culture en-US', field: 'culture', value: 'en-US' },
    { case: 'the culture EN-us (not case sensitive)', field: 'culture', value: 'EN-us' },
    { case: 'the culture de-DE', field: 'culture', value: 'de-DE' },
    { case: 'a consumer without culture', field: 'culture', value: remove },
    { case: 'a dateOfBirth on 29 February of a leap year', field: 'dateOfBirth', value: '2000-02-29' },
    { case: 'a placeholder dateOfBirth', field: 'dateOfBirth', value: '1900-01-01' },
    { case: 'the gender M', field: 'gender', value: 'M' },
    { case: 'the gender F', field: 'gender', value: 'F' },
    { case: 'the gender D', field: 'gender', value: 'D' },
    { case: 'a mobilePhone of 30 characters', field: 'mobilePhone', value: text(30) },
    { case: 'a homePhone of 30 characters', field: 'homePhone', value: text(30) },
    { case: 'a workPhone of 30 characters', field: 'workPhone', value: text(30) },
    { case: 'a taxId of 30 characters', field: 'taxId', value: text(30) },
    { case: 'a null taxId', field: 'taxId', value: null },
  ])('accepts $case', ({ field, value }) => {
    const { input, result } = check({ [at(field)]: value });
    expectAccepted(result, input);
  });

  it.each([
    { case: 'a consumer without firstName', field: 'firstName', value: remove },
    { case: 'a firstName of 61 characters', field: 'firstName', value: text(61) },
    { case: 'a null firstName', field: 'firstName', value: null },
    { case: 'a consumer without lastName', field: 'lastName', value: remove },
    { case: 'a lastName of 61 characters', field: 'lastName', value: text(61) },
    { case: 'a middleName of 61 characters', field: 'middleName', value: text(61) },
    { case: 'a consumer without emailAddress', field: 'emailAddress', value: remove },
    { case: 'an emailAddress without @', field: 'emailAddress', value: 'ada.example.com' },
    { case: 'an emailAddress without a domain', field: 'emailAddress', value: 'ada@' },
    { case: 'an emailAddress of 256 characters', field: 'emailAddress', value: `${text(244)}@example.com` },
    { case: 'a null emailAddress', field: 'emailAddress', value: null },
    { case: 'the title Dr', field: 'title', value: 'Dr' },
    { case: 'the title Miss (4 characters)', field: 'title', value: 'Miss' },
    { case: 'the title mr in lower case', field: 'title', value: 'mr' },
    { case: 'a null title', field: 'title', value: null },
    { case: 'a culture with an underscore', field: 'culture', value: 'en_US' },
    { case: 'a culture of 6 characters', field: 'culture', value: 'eng-US' },
    { case: 'a culture with a three-letter country', field: 'culture', value: 'en-USA' },
    { case: 'a culture without a country', field: 'culture', value: 'en' },
    { case: 'a culture with digits', field: 'culture', value: 'e1-US' },
    { case: 'a consumer without dateOfBirth', field: 'dateOfBirth', value: remove },
    { case: 'a dateOfBirth that is not a real date', field: 'dateOfBirth', value: '1990-02-30' },
    { case: 'a dateOfBirth on 29 February of a common year', field: 'dateOfBirth', value: '1990-02-29' },
    { case: 'a dateOfBirth with slashes', field: 'dateOfBirth', value: '1990/12/10' },
    { case: 'a dateOfBirth in day-month-year order', field: 'dateOfBirth', value: '10-12-1990' },
    { case: 'a dateOfBirth with a time', field: 'dateOfBirth', value: '1990-12-10T00:00:00Z' },
    { case: 'a null dateOfBirth', field: 'dateOfBirth', value: null },
    { case: 'the gender X', field: 'gender', value: 'X' },
    { case: 'the gender m in lower case', field: 'gender', value: 'm' },
    { case: 'a mobilePhone of 31 characters', field: 'mobilePhone', value: text(31) },
    { case: 'a homePhone of 31 characters', field: 'homePhone', value: text(31) },
    { case: 'a workPhone of 31 characters', field: 'workPhone', value: text(31) },
    { case: 'a null workPhone', field: 'workPhone', value: null },
    { case: 'a taxId of 31 characters', field: 'taxId', value: text(31) },
    { case: 'a consumer field the spec does not define', field: 'nickname', value: 'Ada' },
  ])('rejects $case', ({ field, value }) => {
    expectRejectedAt(check({ [at(field)]: value }).result, at(field));
  });
});
