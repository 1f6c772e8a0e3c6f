import { always, closedPort, startHttpRecorder, type RecordedRequest, type Reply, type Responder } from '@herald/testing';

export { always, type Reply, type Responder };

export interface FakeTokenEndpoint {
  /** Base URL of the endpoint, e.g. `http://127.0.0.1:43210/oauth/token`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Replaces the responder for the following requests. */
  respondWith(responder: Responder): void;
  /** Stops the server and drops open connections, including ones it never answered. */
  close(): Promise<void>;
}

/** Answers every request with a fresh valid token: `token-1`, `token-2`, …, plus `fields`. */
export function issueTokens(fields: Record<string, unknown> = {}): Responder {
  return (_request, index) => ({
    status: 200,
    body: { access_token: `token-${index + 1}`, expires_in: 3600, token_type: 'Bearer', ...fields },
  });
}

/** A fake OAuth token endpoint on 127.0.0.1 that records every request; valid tokens unless told otherwise. */
export async function startFakeTokenEndpoint(responder: Responder = issueTokens(), path = '/oauth/token'): Promise<FakeTokenEndpoint> {
  const recorder = await startHttpRecorder(responder);
  return { url: `${recorder.origin}${path}`, requests: recorder.requests, respondWith: recorder.respondWith, close: recorder.close };
}

/** A URL on 127.0.0.1 whose port nothing listens on (at the moment of the call). */
export async function refusingUrl(): Promise<string> {
  return `http://127.0.0.1:${await closedPort()}/oauth/token`;
}
