import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import { problemResponse, problemType, type ProblemDetails } from '@herald/lifecycle';

/**
 * The events-api's HTTP server. Requests Node's own parser refuses (headers over 16 KiB, a broken
 * request line) never reach Express; without this they would get a bare status line, and every
 * error of the API is meant to be problem+json.
 */
export function createHttpServer(app: Express): Server {
  const server = createServer(app);
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
