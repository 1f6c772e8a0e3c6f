/** Base of Herald's domain errors: `code` is stable and safe to show to clients; the message is for people. */
export abstract class DomainError extends Error {
  /** A stable, machine-readable code (snake_case) that the HTTP layer maps to a response. */
  abstract readonly code: string;
}
