// A receiver's Retry-After pauses its whole target (issue 48): real workers, BullMQ, PostgreSQL and
// an HTTP receiver on 127.0.0.1.
import type { Reply } from '@herald/testing';
import { useHttpRecorders, useWorlds } from './support/world';

const world = useWorlds();
const startReceiver = useHttpRecorders();

describe("a receiver's Retry-After", () => {
  it('pauses every callback of its target until then, the waiting ones spending no attempt', async () => {
    // The first callback gets 429 with Retry-After: 2; every later one 200.
    let first = true;
    const receiver = await startReceiver((): Reply => {
      if (!first) return { status: 200 };
      first = false;
      return { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' };
    });
    // One job at a time: without the pause, the next callback would go at once.
    const w = world({ WORKER_CONCURRENCY: '1', DELIVERY_BACKOFF_MS: '100' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    w.startWorker();
    const sent = await w.sendEvents(programId, 4);
    const rows = await w.settled(
      sent.map((s) => s.deliveryId),
      ['succeeded'],
      30_000,
    );

    const [limited, ...after] = receiver.requests;
    expect(limited!.answer?.status).toBe(429);
    // Nothing reached the receiver for the 2 s it asked for (to the clock's rounding).
    expect(after[0]!.receivedAt - limited!.answer!.at).toBeGreaterThanOrEqual(1_900);
    expect(receiver.requests).toHaveLength(5);
    // Only the callback that got the 429 spent a second attempt; the others waited as deferrals.
    const attempts = new Map(rows.map((row) => [row.eventId, row.attemptsMade]));
    expect(sent.map((s) => attempts.get(s.event.id))).toEqual([2, 1, 1, 1]);
    expect(rows.some((row) => row.lastDeferralReason === 'breaker_open')).toBe(true);
  }, 60_000);
});
