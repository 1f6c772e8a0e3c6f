import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { HttpServerConfig } from '@herald/config';
import { problemResponse, problemType, type ProblemDetails } from '@herald/lifecycle';
import { withAppPrototypes } from './app-prototypes';
import { guardConnections } from './connection-guard';

// How long a client may take to read a refusal (408, 400, 431) and close its end; past it the socket
// is destroyed. Without this bound a client that never reads or closes keeps a half-closed socket,
// which Node still counts as open, for as long as it likes.
const REFUSAL_LINGER_MS = 1_000;

// Node checks the headers and request timeouts on a timer (30 s by default), so a slow client could
// outlive its timeout by that much; checking at least this often keeps the drop close to the limit.
const MAX_TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * The events-api's HTTP server. Requests Node's own parser refuses (headers over 16 KiB, a broken
 * request line, or headers or a body that arrive too slowly) never reach Express; without this they
 * would get a bare status line, and every error of the API is meant to be problem+json.
 * `limits` replaces Node's defaults (minutes for slow clients, no connection cap); the connection
 * caps are guardConnections'.
 */
export function createHttpServer(app: Express, limits: HttpServerConfig): Server {
  const server = createServer(
    {
      ...withAppPrototypes(app),
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(MAX_TIMEOUT_CHECK_INTERVAL_MS, Math.ceil(limits.headersTimeoutMs / 2)),
    },
    app,
  );
  guardConnections(server, limits);
  server.on('clientError', answerParserError);
  return server;
}

function answerParserError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // The client is gone: nothing can be said.
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const problem = parserProblem(error.code);
  const { headers, body } = problemResponse(problem);
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\n` +
      `Content-Type: ${headers['Content-Type']}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  // end() only half-closes: the socket stays open (and counted) until the client closes its end.
  // A well-behaved client reads the answer and closes within the linger; any other is cut off.
  const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
  socket.once('close', () => clearTimeout(linger));
}

function parserProblem(code: string | undefined): ProblemDetails {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        type: problemType('headers_too_large'),
        title: 'Request Header Fields Too Large',
        status: 431,
        detail: 'The request line and headers together must stay under 16 KiB.',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { type: problemType('request_timeout'), title: 'Request Timeout', status: 408, detail: 'The request was not received in time.' };
    default:
      return { type: problemType('malformed_request'), title: 'Bad Request', status: 400, detail: 'The request is not valid HTTP/1.1.' };
  }
}
