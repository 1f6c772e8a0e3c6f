import type { Logger } from '@herald/logging';

export interface ShutdownOptions {
  logger: Logger;
  /** How long `stop` may take before the process exits anyway (its in-flight work is then cut off). */
  timeoutMs: number;
  /** Stops taking work, waits for in-flight work, closes connections. */
  stop: () => Promise<void>;
}

/**
 * On SIGTERM or SIGINT: runs `stop` once, then exits 0 (1 if `stop` failed or timed out).
 * A second signal while stopping exits at once, for an operator who does not want to wait.
 */
export function exitOnSignal({ logger, timeoutMs, stop }: ShutdownOptions): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn('second signal: exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('shutting down', { signal, timeoutMs });
    const timer = setTimeout(() => {
      logger.error('shutdown timed out; exiting with work in flight', { timeoutMs });
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('shutdown failed', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Logs a start-up failure (the message names what failed) and exits 1. */
export function exitOnStartupFailure(logger: Logger, error: unknown): never {
  logger.error('start-up failed', { error });
  process.exit(1);
}

export { listenOn, type ListenOptions } from './listen';
export { startPeriodicRunner, type PassResult, type PeriodicRunner, type PeriodicRunnerOptions } from './periodic-runner';
export type { ReadinessCheck, ReadinessReport } from './readiness';
export { addressKey } from './auth/client-address';
export { createFailedAuthThrottle, type FailedAuthThrottle, type FailedAuthThrottleOptions } from './auth/failed-auth-throttle';
export { bearerGuard } from './ops/bearer';
export { opsEndpoints, type MetricsSource, type OpsEndpointsOptions } from './ops/ops-endpoints';
export type { PlainHandler, PlainRequest, PlainResponse } from './ops/plain-http';
export { problemResponse, problemType, type ProblemDetails } from './ops/problem';
