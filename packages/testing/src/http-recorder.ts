import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the recorder received it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, as sent on the request line. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When its body had arrived (Date.now()). */
  receivedAt: number;
  /** The status answered and when its last byte was handed to the socket (Date.now()); absent until then. */
  answer?: { status: number; at: number };
}

/**
 * An answer: status (default 200), headers and body (an object is sent as JSON, a string as is),
 * optionally after a delay; or a function that writes the answer itself, or never does.
 */
export type Reply = { status?: number; headers?: Record<string, string>; body?: unknown; delayMs?: number } | ((res: ServerResponse) => void);

/** Chooses the answer to the n-th request (0-based). */
export type Responder = (request: RecordedRequest, index: number) => Reply | Promise<Reply>;

export interface HttpRecorder {
  /** `http://127.0.0.1:<port>`: append a path. */
  readonly origin: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Replaces the responder for the following requests. */
  respondWith(responder: Responder): void;
  /** Stops the server and drops open connections, including ones it never answered. */
  close(): Promise<void>;
}

/** Answers with `reply` every time. */
export function always(reply: Reply): Responder {
  return () => reply;
}

/** Answers the n-th request with the n-th reply; the last reply is repeated. */
export function inTurn(...replies: Reply[]): Responder {
  return (_request, index) => replies[Math.min(index, replies.length - 1)] ?? {};
}

/** How many callbacks the recorder received per event, keyed by the webhook-id header. */
export function callbacksPerEvent(recorder: HttpRecorder): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of recorder.requests) {
    const id = String(request.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * An HTTP server on 127.0.0.1 that records every request and answers as told (200 by default), on
 * `options.port` (a free one by default: a test starts a server where nothing listened before).
 */
export async function startHttpRecorder(responder: Responder = always({ status: 200 }), options: { port?: number } = {}): Promise<HttpRecorder> {
  const requests: RecordedRequest[] = [];
  let respond = responder;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      res.once('finish', () => {
        recorded.answer = { status: res.statusCode, at: Date.now() };
      });
      requests.push(recorded);
      void Promise.resolve(respond(recorded, requests.length - 1)).then((reply) => send(res, reply));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
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
  const write = (): void => {
    if (res.destroyed) return;
    const raw = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(raw);
  };
  if (reply.delayMs) setTimeout(write, reply.delayMs);
  else write();
}
