// What a worker remembers of each target between the gate's answers: its lease of the target's
// slots, and whether the gate turned the target's jobs away lately.

/** A job waiting for a slot of its target's lease; told whether it got one. */
export interface LeaseWaiter {
  readonly jobId: string;
  readonly resolve: (leased: boolean) => void;
  /** Gives up waiting after the gate's leaseWaitMs; none while it waits for a renewal's answer. */
  timer?: NodeJS.Timeout;
}

/** A worker's share of one target's slots, as the worker sees it (the gate's lease: commands/gate.lua). */
export interface TargetLease {
  readonly targetId: string;
  /** Slots the gate counts as this worker's. */
  held: number;
  /** The jobs in them, by job id, with when each went in (ms; the first is the oldest). */
  readonly running: Map<string, number>;
  /** Most slots this worker's jobs wanted at once since the last renewal (its next request). */
  peak: number;
  /** Until when jobs may go into a free slot without asking (ms); 0: the next job asks. */
  validUntil: number;
  /** Until when (ms) the target's jobs are let in one by one: the gate said it is not free for leases. */
  oneByOneUntil: number;
  /**
   * While a renewal is under way: the slots it asked to keep. No more jobs go in until the answer
   * (on a contended target those in use are all it keeps: the gate may give the others to another
   * worker).
   */
  renewing: number | false;
  /** Slots the last renewal asked for (the gate records it, for the other workers' shares). */
  asked: number;
  /** The last renewal got fewer slots than it asked for: the lease is at its share of the limit. */
  capped: boolean;
  /** The gate said the workers want more of the target's slots than its limit. */
  contended: boolean;
  /** How long its jobs held a slot, on average (ms, moving like the gate's); 0: not known yet. */
  avgMs: number;
  /** Leased jobs delivered since the gate last heard of them, and their time in all (ms). */
  successes: number;
  successMs: number;
  /** Jobs the gate had deferred that went into the lease's slots since its last renewal (sent with the next). */
  returned: string[];
  /**
   * Jobs waiting for a slot of the lease, first come first served: for the renewal under way, or
   * for one of its running jobs to end (as many as should get a slot within leaseWaitMs).
   */
  readonly waiting: LeaseWaiter[];
}

/** A lease of the target with no slot yet: its first job's renewal asks for some. */
export function emptyLease(targetId: string): TargetLease {
  return {
    targetId,
    held: 0,
    running: new Map(),
    peak: 0,
    validUntil: 0,
    oneByOneUntil: 0,
    renewing: false,
    asked: 0,
    capped: false,
    contended: false,
    waiting: [],
    avgMs: 0,
    successes: 0,
    successMs: 0,
    returned: [],
  };
}

/**
 * How long after the gate turned a job of a target away the worker stops loading that target's
 * deliveries before the gate's answer (WorkerGate.expectsAdmission): this, or the delay the gate
 * gave if that is longer. Most targets are never turned away; the others cost no load while they wait.
 */
const TURNED_AWAY_MEMORY_MS = 1_000;
/**
 * Targets turned away lately that the worker remembers before it drops the expired ones; then
 * again each time their number doubles, so that a sweep costs O(1) per target remembered.
 */
const TURNED_AWAY_SWEEP_SIZE = 1_000;

/** The targets whose jobs the gate turned away lately, with until when (ms). */
export class TurnedAwayTargets {
  readonly #until = new Map<string, number>();
  #sweepAtSize = TURNED_AWAY_SWEEP_SIZE;

  remember(targetId: string, delayMs: number): void {
    const now = Date.now();
    if (this.#until.size >= this.#sweepAtSize) {
      for (const [id, until] of this.#until) if (until <= now) this.#until.delete(id);
      this.#sweepAtSize = Math.max(TURNED_AWAY_SWEEP_SIZE, 2 * this.#until.size);
    }
    this.#until.set(targetId, now + Math.max(delayMs, TURNED_AWAY_MEMORY_MS));
  }

  /** Whether no job of the target was turned away lately. */
  expectsAdmission(targetId: string): boolean {
    const until = this.#until.get(targetId);
    if (until === undefined) return true;
    if (until > Date.now()) return false;
    this.#until.delete(targetId);
    return true;
  }
}
