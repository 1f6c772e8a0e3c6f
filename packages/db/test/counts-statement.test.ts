import { countsStatement, type CountedEvent } from '../src/repositories/event-counts';

/** The statement's increments, by counter: the totals and the day, minute and second buckets. */
function increments(events: readonly CountedEvent[]): Map<string, number> {
  const [scopes, origins, objectTypes, counts, bScopes, bOrigins, bObjectTypes, granularities, starts, bCounts] = countsStatement(events)!.compile()
    .parameters as unknown[][];
  const byCounter = new Map<string, number>();
  const add = (key: string, count: unknown): void => void byCounter.set(key, (byCounter.get(key) ?? 0) + Number(count));
  scopes!.forEach((scope, i) => {
    add(`${scope}|${origins![i]}|${objectTypes![i]}`, counts![i]);
  });
  bScopes!.forEach((scope, i) => {
    add(`${scope}|${bOrigins![i]}|${bObjectTypes![i]}|${granularities![i]}|${starts![i]}`, bCounts![i]);
  });
  return byCounter;
}

describe('countsStatement', () => {
  it('adds a batch to every counter as much as its events one by one would', () => {
    const at = (iso: string) => new Date(iso);
    const batch: CountedEvent[] = [
      // Same tenant, filters and second: one group of three.
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:00:59.100Z') },
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:00:59.900Z') },
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:00:59.500Z') },
      // The next second, minute and day; the program without its merchant; another merchant,
      // origin and object type; a merchant named like a program.
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:01:00.000Z') },
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T23:59:59.999Z') },
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-25T00:00:00.000Z') },
      { programId: 'p1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:00:59.100Z') },
      { programId: 'p1', merchantId: 'm2', origin: 'automated', objectType: 'subscription', createdAt: at('2026-11-24T10:00:59.100Z') },
      { programId: 'p2', merchantId: 'p1', origin: 'api', objectType: 'payment', createdAt: at('2026-11-24T10:00:59.100Z') },
      { programId: 'p1', merchantId: 'm1', origin: 'api', objectType: 'payment', createdAt: at('1969-12-31T23:59:59.500Z') },
    ];
    const oneByOne = new Map<string, number>();
    for (const event of batch) for (const [key, count] of increments([event])) oneByOne.set(key, (oneByOne.get(key) ?? 0) + count);
    expect(increments(batch)).toEqual(oneByOne);
    // The three of one second count three in their second's bucket of the merchant's "any" counter.
    expect(oneByOne.get(`merchant:m1|||1|${Date.parse('2026-11-24T10:00:59Z') / 1000}`)).toBe(3);
  });
});
