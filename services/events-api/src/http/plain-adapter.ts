import { Router, type RequestHandler, type Response } from 'express';
import { problemResponse, type PlainHandler, type PlainResponse, type ProblemDetails } from '@herald/lifecycle';
import { peerAddress } from './client-address';

/**
 * The Express adapter of the shared framework-free handlers (the ops endpoints, the bearer
 * challenge, problem+json): Express only carries the answer they return.
 */

/** Writes `answer` as it is; a Buffer body keeps Express from adding a charset to its Content-Type. */
export function sendPlain(res: Response, answer: PlainResponse): void {
  res.status(answer.status).set(answer.headers).send(Buffer.from(answer.body));
}

export function sendProblem(res: Response, problem: ProblemDetails): void {
  sendPlain(res, problemResponse(problem));
}

/** One GET route per path (HEAD included, as Express does); a handler's rejection goes to the error handler. */
export function plainRouter(handlers: ReadonlyMap<string, PlainHandler>): Router {
  const router = Router();
  for (const [path, handler] of handlers) router.get(path, plainRoute(handler));
  return router;
}

function plainRoute(handler: PlainHandler): RequestHandler {
  return (req, res, next) => {
    handler({ authorization: req.get('authorization'), clientAddress: peerAddress(req) }).then((answer) => sendPlain(res, answer), next);
  };
}
