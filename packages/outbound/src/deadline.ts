/**
 * A request's one time limit, from resolving the host to the last body byte read. Lighter than an
 * AbortController: every callback makes one, and an AbortSignal with the listeners Node's http
 * client and the body read put on it cost about 26 µs of the worker's CPU per callback, as much as
 * all of Herald's own code on that path (V8 profiles, docs/benchmarks.md).
 */
export class Deadline {
  #expired = false;
  #listeners: Array<() => void> = [];
  readonly #timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.#timer = setTimeout(() => this.#expire(), ms);
  }

  /** Whether the time limit has passed. */
  get expired(): boolean {
    return this.#expired;
  }

  /** Calls `listener` once when the time limit passes (at once if it has); returns what stops that. */
  onExpiry(listener: () => void): () => void {
    if (this.#expired) {
      listener();
      return () => undefined;
    }
    this.#listeners.push(listener);
    return () => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /** An AbortSignal that aborts when the time limit passes, for a client that takes only that (axios). */
  signal(): AbortSignal {
    const controller = new AbortController();
    this.onExpiry(() => controller.abort());
    return controller.signal;
  }

  /** The request is over: no listener is called any more. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#listeners = [];
  }

  #expire(): void {
    this.#expired = true;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}
