/** One JSON request of a test, fault scenario or bench. */
export interface JsonRequest {
  /** Sent as JSON, with content-type: application/json; no body (and no content-type) when undefined. */
  body?: unknown;
  /** Sent as `authorization: Bearer <token>` when set. */
  token?: string;
  /** Further headers, over the defaults (content-type, authorization). */
  headers?: Record<string, string>;
  /** How long the whole exchange may take; default 60 s. Every request has a limit: a hung server fails the caller, it does not hang it. */
  timeoutMs?: number;
}

/** An answer, its body unread as JSON (a test may expect a problem, an HTML page or nothing). */
export interface JsonAnswer {
  status: number;
  /** The content-type header, or '' without one. */
  contentType: string;
  /** The whole body as text. */
  body: string;
  /** How long the request took, from sending to the end of the body. */
  ms: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** Sends one request and resolves with its answer, whatever its status; rejects when no answer came within the limit. */
export async function requestJson(method: string, url: string, request: JsonRequest = {}): Promise<JsonAnswer> {
  const started = Date.now();
  const res = await fetch(url, {
    method,
    headers: {
      ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(request.token === undefined ? {} : { authorization: `Bearer ${request.token}` }),
      ...request.headers,
    },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    signal: AbortSignal.timeout(request.timeoutMs ?? DEFAULT_TIMEOUT_MS),
  });
  const body = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body, ms: Date.now() - started };
}

/**
 * Sends one request and resolves with its body parsed as JSON (undefined when empty); fails naming
 * the request, the status and the start of the body when the status is not one of `expect`
 * (default: any 2xx).
 */
export async function callJson<T = unknown>(method: string, url: string, request: JsonRequest & { expect?: number[] } = {}): Promise<T> {
  const answer = await requestJson(method, url, request);
  const expected = request.expect ? request.expect.includes(answer.status) : answer.status >= 200 && answer.status < 300;
  if (!expected) throw new Error(`${method} ${url} answered ${answer.status}: ${answer.body.slice(0, 500)}`);
  return (answer.body ? JSON.parse(answer.body) : undefined) as T;
}
