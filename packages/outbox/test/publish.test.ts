import type { DeliveryRef } from '@herald/domain';
import { createOutboxPublisher } from '../src';

const refs: DeliveryRef[] = [
  { deliveryId: 'd-1', eventId: 'e-1', targetId: 't-1', programId: 'p-1', merchantId: null, targetOwner: 'program' },
  { deliveryId: 'd-2', eventId: 'e-1', targetId: 't-2', programId: 'p-1', merchantId: 'm-1', targetOwner: 'merchant' },
];

/** A publisher over fakes; `fail` names the steps that reject. */
function publisher(fail: Array<'enqueue' | 'clear' | 'mark'> = []) {
  const calls: string[] = [];
  const warnings: string[] = [];
  const outcomes: string[] = [];
  const step = (name: 'enqueue' | 'clear' | 'mark', ids: readonly string[]) => {
    calls.push(`${name} ${ids.join(',')}`);
    return fail.includes(name) ? Promise.reject(new Error(`${name} failed`)) : Promise.resolve();
  };
  const outbox = createOutboxPublisher({
    producer: {
      enqueue: (jobs) =>
        step(
          'enqueue',
          jobs.map((j) => j.deliveryId),
        ),
    },
    deliveries: {
      clearEnqueued: (refs) =>
        step(
          'clear',
          refs.map((r) => r.deliveryId),
        ),
      markEnqueued: (refs) =>
        step(
          'mark',
          refs.map((r) => r.deliveryId),
        ),
    },
    logger: { warn: (message) => void warnings.push(message) },
    onEnqueue: (outcome, count) => void outcomes.push(`${outcome} ${count}`),
  });
  return { outbox, calls, warnings, outcomes };
}

describe('the outbox publisher', () => {
  describe('publish (deliveries stored marked enqueued, after the ingest commit)', () => {
    it('adds the jobs and leaves the mark', async () => {
      const { outbox, calls, warnings, outcomes } = publisher();
      await outbox.publish(refs);
      expect(calls).toEqual(['enqueue d-1,d-2']);
      expect(warnings).toEqual([]);
      expect(outcomes).toEqual(['enqueued 2']);
    });

    it('clears the mark when the jobs cannot be added, so that the sweeper takes them', async () => {
      const { outbox, calls, warnings, outcomes } = publisher(['enqueue']);
      await expect(outbox.publish(refs)).resolves.toBeUndefined();
      expect(calls).toEqual(['enqueue d-1,d-2', 'clear d-1,d-2']);
      expect(outcomes).toEqual(['left_to_sweeper 2']);
      expect(warnings).toEqual([expect.stringContaining('the sweeper will enqueue them')]);
    });

    it('resolves even when the mark cannot be cleared either, leaving them to the reconciler', async () => {
      const { outbox, warnings, outcomes } = publisher(['enqueue', 'clear']);
      await expect(outbox.publish(refs)).resolves.toBeUndefined();
      expect(outcomes).toEqual(['left_to_reconciler 2']);
      expect(warnings).toEqual([expect.stringContaining('the reconciler will enqueue them')]);
    });

    it('does nothing for no deliveries', async () => {
      const { outbox, calls } = publisher();
      await outbox.publish([]);
      expect(calls).toEqual([]);
    });
  });

  describe('publishUnmarked (deliveries a replay set back to pending)', () => {
    it('adds the jobs, then marks the deliveries enqueued', async () => {
      const { outbox, calls } = publisher();
      expect(await outbox.publishUnmarked(refs)).toBe(true);
      expect(calls).toEqual(['enqueue d-1,d-2', 'mark d-1,d-2']);
    });

    it('reports false and leaves the deliveries unmarked, for the sweeper, when the jobs cannot be added', async () => {
      const { outbox, calls, warnings, outcomes } = publisher(['enqueue']);
      expect(await outbox.publishUnmarked(refs)).toBe(false);
      expect(outcomes).toEqual(['left_to_sweeper 2']);
      expect(calls).toEqual(['enqueue d-1,d-2']);
      expect(warnings).toEqual([expect.stringContaining('left to the sweeper')]);
    });

    it('reports true when the jobs were added but the mark failed (a sweep adding them again is a no-op)', async () => {
      const { outbox, warnings } = publisher(['mark']);
      expect(await outbox.publishUnmarked(refs)).toBe(true);
      expect(warnings).toEqual([expect.stringContaining('not marked enqueued')]);
    });
  });
});
