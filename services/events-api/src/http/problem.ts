import type { Response } from 'express';

/**
 * An RFC 9457 problem detail. Every error answer of the API is one of these, written by
 * `sendProblem`, so clients can rely on `type`, `title`, `status` and the extension members.
 */
export interface ProblemDetails {
  /** A URI naming the kind of problem; `about:blank` when the status says it all. */
  type: string;
  title: string;
  status: number;
  detail?: string;
  /** Extension members, e.g. `errors` (field violations) or `header`. */
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Problem type URIs are relative references, resolvable against the API's base URL. */
export function problemType(slug: string): string {
  return `/problems/${slug}`;
}

export function sendProblem(res: Response, problem: ProblemDetails): void {
  res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}
