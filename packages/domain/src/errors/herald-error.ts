/**
 * Base of every error Herald raises on purpose, in every package: `code` is a stable snake_case
 * identifier that callers branch on (and that the events-api maps to a problem+json response in one
 * place); `message` is for people and never holds a secret. `name` is the subclass's own name.
 */
export abstract class HeraldError extends Error {
  /** A stable, machine-readable code (snake_case). */
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}
