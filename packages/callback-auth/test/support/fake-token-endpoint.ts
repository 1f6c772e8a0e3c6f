import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake endpoint received it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, as sent on the request line. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A JSON (object) or raw (string) answer, or a function that writes the answer itself, or never does. */
export type Reply = { status?: number; headers?: Record<string, string>; body?: unknown } | ((res: ServerResponse) => void);

/** Chooses the answer to the n-th request (0-based). */
export type Responder = (request: RecordedRequest, index: number) => Reply | Promise<Reply>;

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

/** Answers with `reply` every time. */
export function always(reply: Reply): Responder {
  return () => reply;
}

/** A fake OAuth token endpoint on 127.0.0.1 that records every request; valid tokens unless told otherwise. */
export async function startFakeTokenEndpoint(responder: Responder = issueTokens(), path = '/oauth/token'): Promise<FakeTokenEndpoint> {
  const requests: RecordedRequest[] = [];
  let respond = responder;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(recorded);
      void Promise.resolve(respond(recorded, requests.length - 1)).then((reply) => send(res, reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    respondWith: (next) => {
      respond = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, reply: Reply): void {
  if (typeof reply === 'function') {
    reply(res);
    return;
  }
  const raw = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
  res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
  res.end(raw);
}

/** A URL on 127.0.0.1 whose port nothing listens on (at the moment of the call). */
export async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/oauth/token`;
}
