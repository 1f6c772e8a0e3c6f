/** The log methods the outbox uses (a @herald/logging Logger has them), so tests can pass a plain object. */
export interface OutboxLogger {
  debug(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
}
