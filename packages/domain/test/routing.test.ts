import { targetsToNotify, type RoutedEvent, type RoutingTarget } from '../src';

const programTarget: RoutingTarget = {
  id: 'program-target',
  programId: 'p1',
  merchantId: null,
  objectTypes: [],
  eventTypes: [],
  enabled: true,
  deleted: false,
};
const merchantTarget: RoutingTarget = {
  id: 'merchant-target',
  programId: 'p1',
  merchantId: 'm1',
  objectTypes: [],
  eventTypes: [],
  enabled: true,
  deleted: false,
};

function event(fields: Partial<RoutedEvent> = {}): RoutedEvent {
  return { programId: 'p1', merchantId: 'm1', objectType: 'payment', eventType: 'created', ...fields };
}

const ids = (targets: readonly RoutingTarget[]) => targets.map((t) => t.id);

describe('targetsToNotify (who gets notified of an event)', () => {
  it("notifies the program's target of every event of the program, whatever its object type", () => {
    for (const objectType of ['payment', 'subscription', 'payment-series', 'consumer']) {
      expect(ids(targetsToNotify(event({ objectType, merchantId: undefined }), [programTarget]))).toEqual(['program-target']);
    }
  });

  it("notifies the merchant's target of the merchant's transaction-related events, beside the program's", () => {
    for (const objectType of ['transactions', 'payment', 'refund', 'manual-retry']) {
      expect(ids(targetsToNotify(event({ objectType }), [programTarget, merchantTarget]))).toEqual(['program-target', 'merchant-target']);
    }
  });

  it("does not notify the merchant's target of the merchant's other events", () => {
    for (const objectType of ['subscription', 'payment-series', 'consumer', 'billing-agreement']) {
      expect(ids(targetsToNotify(event({ objectType }), [programTarget, merchantTarget]))).toEqual(['program-target']);
    }
  });

  it('does not notify a merchant target of an event of the program as a whole', () => {
    expect(ids(targetsToNotify(event({ merchantId: undefined }), [merchantTarget]))).toEqual([]);
    expect(ids(targetsToNotify(event({ merchantId: null }), [merchantTarget]))).toEqual([]);
  });

  it('ignores the targets of other programs and other merchants', () => {
    const otherProgram = { ...programTarget, id: 'other-program', programId: 'p2' };
    const otherMerchant = { ...merchantTarget, id: 'other-merchant', merchantId: 'm2' };
    expect(ids(targetsToNotify(event(), [otherProgram, otherMerchant]))).toEqual([]);
  });

  it("applies a target's objectTypes filter; an empty list means every object type", () => {
    const paymentsOnly = { ...programTarget, objectTypes: ['payment', 'refund'] };
    expect(ids(targetsToNotify(event({ objectType: 'refund' }), [paymentsOnly]))).toEqual(['program-target']);
    expect(ids(targetsToNotify(event({ objectType: 'subscription' }), [paymentsOnly]))).toEqual([]);
    const merchantRefundsOnly = { ...merchantTarget, objectTypes: ['refund'] };
    expect(ids(targetsToNotify(event({ objectType: 'payment' }), [merchantRefundsOnly]))).toEqual([]);
    expect(ids(targetsToNotify(event({ objectType: 'refund' }), [merchantRefundsOnly]))).toEqual(['merchant-target']);
  });

  it("applies a target's eventTypes filter; an empty list means every event type", () => {
    const createdOnly = { ...merchantTarget, eventTypes: ['created'] };
    expect(ids(targetsToNotify(event({ eventType: 'created' }), [createdOnly]))).toEqual(['merchant-target']);
    expect(ids(targetsToNotify(event({ eventType: 'status.updated' }), [createdOnly]))).toEqual([]);
  });

  it("never lets a merchant target's objectTypes widen it beyond transaction-related events", () => {
    const wide = { ...merchantTarget, objectTypes: ['subscription', 'payment'] };
    expect(ids(targetsToNotify(event({ objectType: 'subscription' }), [wide]))).toEqual([]);
  });

  it('never notifies a target that is switched off or deleted', () => {
    const off = [
      { ...programTarget, enabled: false },
      { ...merchantTarget, deleted: true },
    ];
    expect(targetsToNotify(event(), off)).toEqual([]);
    expect(targetsToNotify(event(), [{ ...programTarget, enabled: true, deleted: true }])).toEqual([]);
  });

  it('notifies nobody when there is no candidate', () => {
    expect(targetsToNotify(event(), [])).toEqual([]);
  });
});
