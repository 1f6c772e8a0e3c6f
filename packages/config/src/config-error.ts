import { HeraldError } from '@herald/domain/herald-error';

/** Thrown when a variable is missing or malformed; the message names the variable (never its value if secret). */
export class ConfigError extends HeraldError {
  override readonly name = 'ConfigError';
  readonly code = 'config_invalid';

  constructor(
    /** The environment variable at fault. */
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}
