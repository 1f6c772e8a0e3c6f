/**
 * The isolation section of the bench: one merchant's bad or busy endpoint beside a healthy
 * merchant, as an operator would try it (issue "No merchant can take another merchant's capacity").
 *
 *   (a) hanging: callbacks queued to a target that accepts connections and never answers, then
 *       20 events of a healthy merchant: the healthy merchant's p99 from ingest to arrival;
 *   (d) recovery, right after (a): the hanging target comes back: are all its callbacks delivered,
 *       and how many attempts were spent on it while it was down (read from delivery_attempts);
 *   (b) slow: the same as (a) with a target that answers after 3 s;
 *   (c) burst: callbacks queued to one healthy target, then one event of another merchant: its
 *       latency from ingest to arrival.
 *
 * One delivery-worker process with the default settings (WORKER_CONCURRENCY, CALLBACK_TIMEOUT_MS,
 * the retry policy), as a default install runs. The bad endpoints are bench/receiver.ts's /hang and
 * /slow paths; every wait is bounded, and a figure that did not arrive in time is reported as such.
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '@herald/db/prisma';
import { callJson, lastRead, waitFor, type ServiceProcess } from '@herald/testing';
import { ingestBatches } from './ingest-load';

export interface IsolationRow {
  scenario: string;
  figure: number;
  unit: string;
  target?: string;
  note?: string;
}

export interface IsolationContext {
  quick: boolean;
  apiUrl: string;
  /** bench/receiver.ts, already listening. */
  receiverUrl: string;
  adminToken: string;
  ingestToken: string;
  /** On the run's database, for the deliveries and their attempts. */
  prisma: PrismaClient;
  /** Starts a delivery-worker process on the run's queue with the default settings. */
  startWorker(): ServiceProcess;
  addRow(row: IsolationRow): void;
  log(message: string): void;
}

interface ReceiverStats {
  callbacks: number;
  slow: { received: number; answered: number };
  hang: { received: number; held: number; answered: number };
}

/** A target's breaker as GET …/notification-target shows it (null while Redis cannot be read). */
interface BreakerAtReturn {
  state: 'closed' | 'open' | 'half_open';
  halfOpenAt: string | null;
}

/** The breaker's state at `at`, in the words of the recovery row's note. */
function breakerState(breaker: BreakerAtReturn | null, at: Date): string {
  if (!breaker) return 'unknown: Redis could not be read';
  if (breaker.state === 'open' && breaker.halfOpenAt)
    return `was open then, half-opening ${((Date.parse(breaker.halfOpenAt) - at.getTime()) / 1000).toFixed(1)} s later`;
  return breaker.state === 'half_open' ? 'was half-open then' : 'was closed then';
}

const HEALTHY_EVENTS = 20;
const SLOW_ANSWER_MS = 3_000;

export async function runIsolation(ctx: IsolationContext): Promise<void> {
  const size = ctx.quick
    ? { hanging: 100, slow: 100, burst: 2_000, healthyWaitMs: 45_000, recoveryWaitMs: 90_000 }
    : { hanging: 1_000, slow: 1_000, burst: 20_000, healthyWaitMs: 90_000, recoveryWaitMs: 180_000 };
  const admin = (method: string, path: string, body?: unknown): Promise<unknown> =>
    callJson(method, `${ctx.apiUrl}/admin${path}`, { token: ctx.adminToken, body });
  const stats = (): Promise<ReceiverStats> => callJson('GET', `${ctx.receiverUrl}/stats`) as Promise<ReceiverStats>;
  const reset = async (): Promise<void> => {
    await callJson('POST', `${ctx.receiverUrl}/reset`);
  };

  /** A program with one merchant whose (only) target is `path` on the receiver; returns the target's id. */
  const merchant = async (
    name: string,
    path: string,
  ): Promise<{ programId: string; merchantId: string; targetId: string; setTarget(enabled: boolean): Promise<void> }> => {
    const programId = `bench-iso-${name}`;
    const merchantId = `${programId}-m`;
    await admin('POST', '/programs', { id: programId, name });
    await admin('POST', '/merchants', { id: merchantId, programId, name });
    const setTarget = async (enabled: boolean): Promise<void> => {
      await admin('PUT', `/merchants/${merchantId}/notification-target`, { url: `${ctx.receiverUrl}${path}`, auth: { mode: 'none' }, enabled });
    };
    await setTarget(true);
    const [row] = await ctx.prisma.$queryRaw<Array<{ id: string }>>`SELECT id::text FROM notification_targets WHERE merchant_id = ${merchantId}`;
    return { programId, merchantId, targetId: row!.id, setTarget };
  };
  const queueTo = (target: { programId: string; merchantId: string }, count: number): Promise<number> =>
    ingestBatches({
      apiUrl: ctx.apiUrl,
      token: ctx.ingestToken,
      count,
      batchSize: 500,
      inFlight: 2,
      programId: target.programId,
      merchantId: target.merchantId,
      objectType: 'payment',
      idPrefix: `${randomUUID().slice(0, 8)}-`,
    });

  /**
   * Ingests `count` events of the healthy merchant at once; returns when each was sent, by event id
   * (and records how long the API took to answer, for the notes: latency the worker is not to blame for).
   */
  let ingestAnswers: number[] = [];
  const healthyEvents = async (count: number): Promise<Map<string, number>> => {
    const sentAt = new Map<string, number>();
    ingestAnswers = [];
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const id = `Event-${randomUUID()}`;
        const at = Date.now();
        sentAt.set(id, at);
        await callJson('POST', `${ctx.apiUrl}/internal/events`, {
          token: ctx.ingestToken,
          body: {
            id,
            programId: healthy.programId,
            merchantId: healthy.merchantId,
            origin: 'api',
            eventType: 'created',
            objectId: `healthy-${i}`,
            objectType: 'payment',
          },
        });
        ingestAnswers.push(Date.now() - at);
      }),
    );
    return sentAt;
  };

  /** Waits (at most `timeoutMs`) for the healthy merchant's callbacks; returns their latencies, sorted. */
  const healthyLatencies = async (sentAt: Map<string, number>, timeoutMs: number): Promise<number[]> => {
    // Goes on after the time is up: a callback that never came is counted as missing.
    await waitFor(stats, (s) => s.callbacks >= sentAt.size, timeoutMs, 'the healthy callbacks', 100).catch(lastRead);
    const arrivals = (await callJson('GET', `${ctx.receiverUrl}/arrivals`)) as Record<string, number>;
    return [...sentAt]
      .map(([id, at]) => (arrivals[id] ?? NaN) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
  };
  const p99Row = (scenario: string, latencies: number[], expected: number, timeoutMs: number, target: string, note: string): void => {
    const all = latencies.length === expected;
    ctx.addRow({
      scenario,
      // p99 of 20 is the slowest; a callback still missing at the deadline counts as the deadline.
      figure: all ? latencies[Math.ceil(0.99 * expected) - 1]! : timeoutMs,
      unit: all ? 'ms p99' : 'ms (deadline reached)',
      target,
      note: [
        ...(all ? [] : [`only ${latencies.length} of ${expected} arrived within ${timeoutMs / 1000} s`]),
        ...(latencies.length > 0 ? [`median ${latencies[Math.floor(latencies.length / 2)]} ms`] : []),
        `the ingest answered within ${Math.max(...ingestAnswers)} ms`,
        note,
      ].join('; '),
    });
  };
  const pendingOf = async (targetId: string): Promise<number> =>
    Number(
      (await ctx.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM deliveries WHERE target_id = ${targetId}::uuid AND status = 'pending'`)[0]!.n,
    );

  const healthy = await merchant('healthy', '/hook/iso-healthy');
  const hanging = await merchant('hanging', '/hang/iso');
  const slow = await merchant('slow', `/slow/${SLOW_ANSWER_MS}/iso`);
  const bursting = await merchant('burst', '/slow/0/iso-burst');

  const worker = ctx.startWorker();
  try {
    await worker.waitForLog('delivery-worker ready', 30_000);

    // --- (a) a hanging endpoint, then a healthy merchant ---
    await reset();
    await callJson('POST', `${ctx.receiverUrl}/hang-control/down`);
    await queueTo(hanging, size.hanging);
    let latencies = await healthyLatencies(await healthyEvents(HEALTHY_EVENTS), size.healthyWaitMs);
    p99Row(
      `isolation: hanging endpoint (${size.hanging} callbacks queued), then ${HEALTHY_EVENTS} of a healthy merchant: ingest -> arrival`,
      latencies,
      HEALTHY_EVENTS,
      size.healthyWaitMs,
      '<= 1000 ms',
      `${(await stats()).hang.received} requests reached the hanging endpoint`,
    );

    // --- (d) recovery: the hanging endpoint comes back ---
    // Its breaker's state at that moment explains the recovery time: an open breaker lets nothing
    // through until it half-opens, then one probe, then the rest (open periods double after a failed probe).
    const breakerAtReturn = ((await admin('GET', `/merchants/${hanging.merchantId}/notification-target`)) as { health: { breaker: BreakerAtReturn | null } })
      .health.breaker;
    const downUntil = new Date();
    await callJson('POST', `${ctx.receiverUrl}/hang-control/up`);
    const pending = await waitFor(
      () => pendingOf(hanging.targetId),
      (n) => n === 0,
      size.recoveryWaitMs,
      "the hanging endpoint's backlog",
      500,
    ).catch(lastRead<number>);
    const recoverySeconds = (Date.now() - downUntil.getTime()) / 1000;
    const delivered = Number(
      (
        await ctx.prisma.$queryRaw<
          Array<{ n: bigint }>
        >`SELECT count(*) AS n FROM deliveries WHERE target_id = ${hanging.targetId}::uuid AND status = 'succeeded'`
      )[0]!.n,
    );
    // Attempts started while it was down. Those still held when it came back were answered then
    // (delivered); the others failed (timeouts, mostly): these were spent on a target known bad.
    const whileDown = await ctx.prisma.$queryRaw<Array<{ kind: string | null; n: bigint }>>`
      SELECT a.error_kind AS kind, count(*) AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
      WHERE d.target_id = ${hanging.targetId}::uuid AND a.started_at < ${downUntil} GROUP BY a.error_kind ORDER BY count(*) DESC`;
    const failedWhileDown = whileDown.filter((row) => row.kind !== null);
    const spent = failedWhileDown.reduce((n, row) => n + Number(row.n), 0);
    const heldThenDelivered = whileDown.filter((row) => row.kind === null).reduce((n, row) => n + Number(row.n), 0);
    ctx.addRow({
      scenario: `isolation: recovery of the hanging endpoint, its ${size.hanging} callbacks delivered`,
      figure: delivered,
      unit: `of ${size.hanging} delivered`,
      target: 'all delivered, no attempt while its breaker was open',
      note: `${pending === 0 ? `all in ${recoverySeconds.toFixed(1)} s after it came back` : `${pending} still pending after ${recoverySeconds.toFixed(0)} s`} (its breaker ${breakerState(breakerAtReturn, downUntil)}); attempts failed while it was down: ${spent}${failedWhileDown.length > 0 ? ` (${failedWhileDown.map((row) => `${row.kind} ${row.n}`).join(', ')})` : ''}; ${heldThenDelivered} held then answered when it came back`,
    });
    // Whatever is left of it (retries waiting out their backoff) would only add fast callbacks.

    // --- (b) a slow endpoint (answers after 3 s), then a healthy merchant ---
    await reset();
    await queueTo(slow, size.slow);
    latencies = await healthyLatencies(await healthyEvents(HEALTHY_EVENTS), size.healthyWaitMs);
    p99Row(
      `isolation: slow endpoint (${SLOW_ANSWER_MS / 1000} s answers, ${size.slow} callbacks queued), then ${HEALTHY_EVENTS} of a healthy merchant: ingest -> arrival`,
      latencies,
      HEALTHY_EVENTS,
      size.healthyWaitMs,
      '<= 1000 ms',
      `${(await stats()).slow.received} requests reached the slow endpoint`,
    );
    // Its backlog is not part of (c): switched off, the rest of its jobs fail at once without a POST.
    await slow.setTarget(false);
    await waitFor(
      () => pendingOf(slow.targetId),
      (n) => n === 0,
      60_000,
      "the slow endpoint's backlog to fail",
      500,
    ).catch(lastRead);

    // --- (c) a burst of one healthy target, then one event of another merchant ---
    await reset();
    const burstStarted = performance.now();
    await queueTo(bursting, size.burst);
    const ingestSeconds = (performance.now() - burstStarted) / 1000;
    const sentAt = await healthyEvents(1);
    latencies = await healthyLatencies(sentAt, size.healthyWaitMs);
    const burstAnswered = (await stats()).slow.answered;
    ctx.addRow({
      scenario: `isolation: burst (${size.burst} callbacks queued to one healthy target), then 1 event of another merchant: ingest -> arrival`,
      figure: latencies.length === 1 ? latencies[0]! : size.healthyWaitMs,
      unit: latencies.length === 1 ? 'ms' : 'ms (deadline reached)',
      target: '<= 2000 ms',
      note: `burst ingested in ${ingestSeconds.toFixed(1)} s; ${burstAnswered} of its callbacks delivered when the other merchant's arrived`,
    });
  } finally {
    await worker.stop('SIGTERM', 20_000);
    // Held requests end here, whatever happened above.
    await callJson('POST', `${ctx.receiverUrl}/hang-control/up`).catch(() => undefined);
  }
}
