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
