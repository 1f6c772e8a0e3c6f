/**
 * Where the target gate keeps its state in Redis, under the QUEUE_PREFIX, so that every worker
 * process and the events-api (which reads health) agree. Per target (`<prefix>:gate:<targetId>:…`):
 * - `inflight`: ZSET job id -> lease deadline (ms), of the jobs let in one by one. A job holds a slot
 *   until it releases it or its lease runs out, so a killed worker cannot keep a slot for ever.
 * - `leased`: HASH worker -> `slots:deadline:since`, the slots each worker's lease holds, until
 *   the lease gives them back or its deadline (a ttl of seconds, moved on by each renewal) passes;
 *   `since` is when its oldest job in them started (0: none runs). They count toward the limit
 *   with the in-flight set.
 * - `wanted`: HASH worker -> `slots:deadline`, the slots each worker's lease last asked for, until
 *   the same deadline: when the workers want more than the limit, each lease keeps to its share.
 * - `deferred`: ZSET job id -> the latest time the job comes back (ms): the jobs the gate has sent
 *   away and that have not been let in since. Entries that never come back (a job removed
 *   meanwhile) are dropped DEFERRED_GRACE_MS after that time.
 * - `breaker`: HASH of the circuit breaker: `consecutive` (failures in a row), and while the
 *   breaker is open or half-open `openedAt`, `reopenAt` (when it half-opens), `openMs`,
 *   `openCount`, `probe` and `probeUntil` (the one job testing the target, and its lease); `avgMs`
 *   is how long a job holds a slot on average.
 * - `window`: HASH of the failure ratio's window, counters `n:<bucket>` and `f:<bucket>` per tenth of it.
 * And `<prefix>:gate:breakers`: ZSET target id -> reopenAt of every breaker that is not closed,
 * for the breaker-state gauge (bounded: counts per state, never a per-target series).
 */
function gateKeyPrefix(queuePrefix: string): string {
  return `${queuePrefix}:gate:`;
}

export function targetKeys(queuePrefix: string, targetId: string) {
  const base = `${gateKeyPrefix(queuePrefix)}${targetId}`;
  return {
    inflight: `${base}:inflight`,
    deferred: `${base}:deferred`,
    breaker: `${base}:breaker`,
    window: `${base}:window`,
    leased: `${base}:leased`,
    wanted: `${base}:wanted`,
  };
}

export function breakersKey(queuePrefix: string): string {
  return `${gateKeyPrefix(queuePrefix)}breakers`;
}

/** A deferred job not seen again this long after its latest return time no longer counts as deferred. */
export const DEFERRED_GRACE_MS = 5 * 60_000;

/**
 * How long a job holds a slot is averaged over the jobs that answered or failed, each new one
 * weighing 1 - SLOT_TIME_DECAY: the gate's `avgMs` (its script) and each worker's lease (its own
 * jobs) move alike.
 */
export const SLOT_TIME_DECAY = 0.8;

/** The average slot time once a job held its slot `durationMs`; `previousMs` 0: none known yet. */
export function nextSlotTime(previousMs: number, durationMs: number): number {
  return previousMs > 0 ? durationMs + (previousMs - durationMs) * SLOT_TIME_DECAY : durationMs;
}

/** A breaker left half-open with no job to probe it for this long is forgotten (its target gets no callbacks). */
export const STALE_BREAKER_MS = 24 * 3_600_000;
