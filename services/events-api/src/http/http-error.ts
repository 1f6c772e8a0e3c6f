import { problemType, type ProblemDetails } from '@herald/lifecycle';
import { HeraldError } from '@herald/domain';

/**
 * An error that already knows its HTTP answer. Thrown by handlers and middleware of the
 * events-api only; shared packages throw domain errors, which the error handler maps.
 */
export class HttpError extends HeraldError {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail?: string,
    readonly extensions: Record<string, unknown> = {},
    /** Extra response headers, e.g. WWW-Authenticate or Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? title);
  }

  toProblem(): ProblemDetails {
    return {
      type: problemType(this.code),
      title: this.title,
      status: this.status,
      ...(this.detail === undefined ? {} : { detail: this.detail }),
      ...this.extensions,
    };
  }
}
