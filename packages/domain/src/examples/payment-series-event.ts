import type { PaymentSeriesEvent } from '../types';

/**
 * A valid payment-series event that sets every optional field of every resource, for tests and
 * documentation examples. Each call returns a fresh copy that the caller may change.
 */
export function examplePaymentSeriesEvent(): PaymentSeriesEvent {
  return {
    id: 'Event-3f2c1a9e-8b7d-4c6e-9f01-23456789abcd',
    createdAt: '2024-05-01T12:30:00.000Z',
    sourceSystem: 'subscription-module',
    origin: 'api',
    eventType: 'created',
    objectId: 'PaymentSeries-0b9f8e7d-6c5b-4a39-8271-605f4e3d2c1b',
    objectType: 'payment-series',
    sequence: 1,
    metadata: { requestId: 'req-42', channel: 'web' },
    context: '{"customerAccountId":"C-1001"}',
    data: [
      {
        id: 'PaymentSeries-0b9f8e7d-6c5b-4a39-8271-605f4e3d2c1b',
        createdAt: '2024-05-01T12:29:58.000Z',
        updatedAt: '2024-05-01T12:30:00.000+02:00',
        deletedAt: '2024-06-01T00:00:00Z',
        customerAccountId: 'C-1001',
        currencyIsoCode: 'EUR',
        externalMerchantId: 'ext-merchant-7',
        merchantMetadata: 'tier=gold',
        externalReference: 'order-555',
        billingAgreement: {
          id: 'BillingAgreement-7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d',
          paymentObjectId: 'po-123',
          billingAgreementDate: '2024-05-01T12:30:00.000Z',
          name: 'Visa ending 4242',
          code: 'VISA',
          carrierNumber: '************4242',
          isExpired: false,
          expiryDate: '12/2027',
          storedPaymentOptionData: { brand: 'visa', funding: 'credit' },
        },
        billingAddress: {
          addressLine1: 'Main Street',
          addressLine2: 'Building B',
          addressLine3: 'Floor 3',
          number: '12a',
          city: 'Springfield',
          postCode: '62701',
          countryCode: 'US',
          state: 'IL',
        },
        shippingAddress: {
          addressLine1: 'Hauptstrasse',
          addressLine2: null,
          addressLine3: null,
          number: '7',
          city: 'Berlin',
          postCode: '10115',
          countryCode: 'DEU',
          state: null,
        },
        consumer: {
          firstName: 'Ada',
          lastName: 'Lovelace',
          middleName: 'King',
          emailAddress: 'ada@example.com',
          title: 'Mrs',
          culture: 'en-US',
          dateOfBirth: '1990-12-10',
          gender: 'F',
          mobilePhone: '+1 555 0100',
          homePhone: '+1 555 0101',
          workPhone: '+1 555 0102',
          taxId: 'TAX-1',
        },
        businessConsumer: null,
        customReferences: { custom1: 'ref-1', custom2: 'ref-2', custom3: null },
        criteria: [
          { name: 'segment', value: 'premium' },
          { name: 'campaign', value: 'spring' },
        ],
        targetMerchantAccountReference: { accountNumber: 'sub-9' },
      },
    ],
  };
}
