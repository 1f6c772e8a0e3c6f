import type { RecoveryCandidate, RecoveryRecord, RecoveryTarget, RecoveryTransaction } from '@herald/db';
import { NoTargetError, RecoveryRunningError, TargetSwitchedOffError, type DeliveryRef } from '@herald/domain';
import { createRecovery, type RecoveryRequest } from '../src';

// The recovery's steps over fakes at its seams (the repository's transaction, the queue, the
// publisher): what it locks, resets, creates and publishes, in which order, and when it refuses.
// merchant-recovery.test.ts of the events-api runs it on the real PostgreSQL and Redis.

const T0 = Date.parse('2026-11-20T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);

const target: RecoveryTarget = {
  id: 't-1',
  programId: 'p-1',
  merchantId: 'm-1',
  objectTypes: [],
  eventTypes: [],
  enabled: true,
  deleted: false,
  disabledReason: null,
  createdAt: at(0),
};

/** A candidate event of the merchant, created and stored at `second`; failed when it has a delivery. */
const candidate = (second: number, fields: Partial<RecoveryCandidate> = {}): RecoveryCandidate => ({
  eventId: `e-${second}`,
  programId: 'p-1',
  merchantId: 'm-1',
  objectType: 'payment',
  eventType: 'created',
  createdAt: at(second),
  ingestedAt: at(second),
  deliveryId: null,
  ...fields,
});

const request = (fields: Partial<RecoveryRequest> = {}): RecoveryRequest => ({
  ownerKey: 'merchant:m-1',
  owner: 'merchant',
  window: { from: at(0), to: at(1000), storedSince: at(0) },
  maxDeliveries: 100,
  ...fields,
});

/** A recovery over fakes: the target, the unfinished recoveries and the candidates it finds, and every call it makes. */
function fakes(options: { target?: RecoveryTarget | null; unfinished?: RecoveryRecord[]; candidates?: RecoveryCandidate[]; queued?: string[] } = {}) {
  const calls: string[] = [];
  const published: DeliveryRef[][] = [];
  const all = options.candidates ?? [];
  const tx: RecoveryTransaction = {
    lockTarget: async () => (options.target === undefined ? target : options.target),
    unfinished: async () => options.unfinished ?? [],
    finish: async (recovery) => void calls.push(`finish ${recovery.id}`),
    candidates: async (_target, window, after, limit) => {
      calls.push(`candidates after ${after?.eventId ?? '-'} stored since ${window.storedSince.toISOString()}`);
      const start = after ? all.findIndex((c) => c.eventId === after.eventId) + 1 : 0;
      return all.slice(start, start + limit);
    },
    lockFailed: async (ids) => {
      calls.push(`lock ${ids.join(',')}`);
      return ids.map((id) => {
        const c = all.find((x) => x.deliveryId === id)!;
        return { id, eventId: c.eventId, attemptsMade: 3, createdAt: c.ingestedAt };
      });
    },
    insertDeliveries: async (_targetId, rows) => {
      calls.push(`insert ${rows.map((r) => r.eventId).join(',')}`);
      return rows.map((r) => ({ id: `new-${r.eventId}`, eventId: r.eventId, createdAt: r.createdAt }));
    },
    reset: async (ids, needJob) => void (ids.length > 0 && calls.push(`reset ${ids.join(',')} ${needJob ? 'for a new job' : 'keeping its job'}`)),
    record: async (recovery) =>
      void calls.push(
        `record ${recovery.deliveries.map((d) => `${d.deliveryId}@${d.attemptsBefore}`).join(',')} covered to ${recovery.coveredTo.toISOString()}`,
      ),
  };
  const recover = createRecovery({
    recoveries: {
      transaction: async (work) => {
        calls.push('begin');
        const result = await work(tx);
        calls.push('commit');
        return result;
      },
    },
    producer: {
      removeFinishedJobs: async (ids) => {
        calls.push(`remove finished jobs ${ids.join(',')}`);
        return new Map(ids.map((id) => [id, options.queued?.includes(id) ? ('queued' as const) : ('free' as const)]));
      },
    },
    publisher: {
      publishUnmarked: async (refs) => {
        calls.push('publish');
        published.push([...refs]);
        return true;
      },
    },
    logger: { warn: () => undefined },
  });
  return { recover, calls, published };
}

describe('createRecovery', () => {
  it('resets the failed deliveries through the replay steps, creates the missing ones, and publishes after the commit', async () => {
    const { recover, calls, published } = fakes({
      candidates: [candidate(1, { deliveryId: 'd-1' }), candidate(2), candidate(3, { deliveryId: 'd-3' })],
      queued: ['d-3'],
    });

    const result = await recover(request());

    expect(result).toEqual({ id: expect.any(String), queued: 3, created: 1, coveredTo: at(1000), complete: true });
    expect(calls).toEqual([
      'begin',
      `candidates after - stored since ${at(0).toISOString()}`,
      'lock d-1,d-3',
      'remove finished jobs d-1,d-3',
      'reset d-1 for a new job',
      'reset d-3 keeping its job',
      'insert e-2',
      `record d-1@3,d-3@3,new-e-2@0 covered to ${at(1000).toISOString()}`,
      'commit',
      'publish',
    ]);
    // d-3's job was still waiting: it makes the next attempt, and no new job is added for it.
    expect(published[0]!.map((ref) => [ref.deliveryId, ref.storedAt, ref.targetOwner])).toEqual([
      ['d-1', at(1).toISOString(), 'merchant'],
      ['new-e-2', at(2).toISOString(), 'merchant'],
    ]);
  });

  it("leaves the events the target's filters, or the routing rule, refuse", async () => {
    const { recover, calls } = fakes({
      target: { ...target, eventTypes: ['updated'] },
      candidates: [candidate(1), candidate(2, { eventType: 'updated' }), candidate(3, { eventType: 'updated', objectType: 'subscription' })],
    });
    expect(await recover(request())).toMatchObject({ queued: 1, created: 1 });
    expect(calls).toContain('insert e-2');
  });

  it('stops at maxDeliveries at the first event it cannot take, which the next recovery starts from', async () => {
    const { recover } = fakes({ candidates: [candidate(1), candidate(2), candidate(3)] });
    expect(await recover(request({ maxDeliveries: 2 }))).toMatchObject({ queued: 2, coveredTo: at(3), complete: false });
  });

  it('reads candidates page after page, and stops after 10 times maxDeliveries of them, where it stopped', async () => {
    const refused = Array.from({ length: 1200 }, (_, i) => candidate(i + 1, { objectType: 'subscription' }));
    const { recover, calls } = fakes({ candidates: refused });
    // 10 x 60 = 600: two pages of 500 are read, then it stops at the last one read.
    expect(await recover(request({ maxDeliveries: 60 }))).toMatchObject({ queued: 0, coveredTo: at(1000), complete: false });
    expect(calls.filter((c) => c.startsWith('candidates'))).toHaveLength(2);
  });

  it('takes only events stored since the target was set up', async () => {
    const { recover, calls } = fakes({ target: { ...target, createdAt: at(500) } });
    await recover(request());
    expect(calls).toContain(`candidates after - stored since ${at(500).toISOString()}`);
  });

  it('freezes an earlier recovery that is over, and refuses while one is running', async () => {
    const earlier = (finishedAt: Date | null): RecoveryRecord => ({
      id: 'r-0',
      targetId: 't-1',
      from: at(0),
      to: at(10),
      coveredTo: at(10),
      createdAt: at(10),
      queued: 1,
      created: 0,
      pending: finishedAt ? 0 : 1,
      sent: 1,
      delivered: 0,
      failed: finishedAt ? 1 : 0,
      finishedAt,
      frozen: false,
    });
    const over = fakes({ unfinished: [earlier(at(20))] });
    await over.recover(request());
    expect(over.calls.slice(0, 2)).toEqual(['begin', 'finish r-0']);

    const running = fakes({ unfinished: [earlier(null)] });
    await expect(running.recover(request())).rejects.toEqual(new RecoveryRunningError('r-0'));
    expect(running.calls).toEqual(['begin']);
  });

  it('refuses a target that is off, saying why as the target health does, and a caller with none', async () => {
    const off = fakes({ target: { ...target, enabled: false, disabledReason: null } });
    await expect(off.recover(request())).rejects.toMatchObject({ constructor: TargetSwitchedOffError, disabledReason: 'switched-off' });
    const auto = fakes({ target: { ...target, enabled: false, disabledReason: 'auto-disabled' } });
    await expect(auto.recover(request())).rejects.toMatchObject({ disabledReason: 'auto-disabled', message: expect.stringMatching(/auto-disabled/) });
    await expect(fakes({ target: null }).recover(request())).rejects.toBeInstanceOf(NoTargetError);
  });
});
