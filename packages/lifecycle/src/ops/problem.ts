import type { PlainResponse } from './plain-http';

/**
 * An RFC 9457 problem detail. Every error answer of both services is one of these, so clients can
 * rely on `type`, `title`, `status` and the extension members.
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

/** RFC 9457 defines no charset parameter: JSON is UTF-8 (RFC 8259). */
const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Problem type URIs are relative references, resolvable against the service's base URL. */
export function problemType(slug: string): string {
  return `/problems/${slug}`;
}

/** A problem as an answer; `headers` adds e.g. `WWW-Authenticate`, `Allow` or `Retry-After`. */
export function problemResponse(problem: ProblemDetails, headers: Readonly<Record<string, string>> = {}): PlainResponse {
  return { status: problem.status, headers: { ...headers, 'Content-Type': PROBLEM_CONTENT_TYPE }, body: JSON.stringify(problem) };
}
