import type { RecordedRequest } from './http-recorder';

/** What a callback's body says of its event: its id, its object and its place among the object's events. */
export function callbackEvent(request: RecordedRequest): { id: string; objectId: string; sequence: number } {
  return JSON.parse(request.body) as { id: string; objectId: string; sequence: number };
}

/**
 * The ordering rule of a target with ordering `object`, checked on what a receiver got: for each
 * object of `objectIds`, the callbacks answered 200 in sequence order 1..`perObject` (the same
 * callback sent again after a crash is not out of order), and no callback that arrived before the
 * 200 of its object's previous event was sent. Each problem is named; none: both lists empty.
 */
export function objectOrderViolations(
  requests: readonly RecordedRequest[],
  objectIds: readonly string[],
  perObject: number,
): { outOfOrder: string[]; early: string[] } {
  const outOfOrder: string[] = [];
  const early: string[] = [];
  const expected = Array.from({ length: perObject }, (_, i) => i + 1).join();
  for (const objectId of objectIds) {
    const mine = requests.map((request) => ({ request, event: callbackEvent(request) })).filter(({ event }) => event.objectId === objectId);
    const delivered = mine.filter(({ request }) => request.answer?.status === 200).map(({ event }) => event.sequence);
    const distinct = delivered.filter((sequence, i) => i === 0 || sequence !== delivered[i - 1]);
    if (distinct.join() !== expected) outOfOrder.push(`${objectId}: ${delivered.join(',')}`);
    for (const { request, event } of mine) {
      if (event.sequence === 1) continue;
      const previous = mine.find((other) => other.event.sequence === event.sequence - 1 && other.request.answer?.status === 200);
      if (!previous || request.receivedAt < previous.request.answer!.at) early.push(`${objectId} #${event.sequence}`);
    }
  }
  return { outOfOrder, early };
}
