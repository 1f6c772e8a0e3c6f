import { IncomingMessage, ServerResponse } from 'node:http';
import type { Express } from 'express';

/**
 * Request and response classes whose objects are made with the app's own prototypes (`app.request`,
 * `app.response`). Express sets those prototypes on every request it handles; on objects that have
 * them already, that is a no-op. Changing the prototype of an object already made costs far more
 * than the call: V8 then kept a third of what each request allocated alive through young
 * collections, to be promoted to the old generation and collected by a full mark-compact every few
 * seconds at 100 requests/s, whose pauses were the slowest ingests; a bare Express app serving a
 * static page answered 2.8 times as many requests/s with them (docs/benchmarks.md). The options of
 * node:http's createServer, for the events-api's server and the bench's bare Express ceilings.
 *
 * Node's own constructors are called on the new object (`apply`), as Node's own subclasses do:
 * made by Reflect.construct instead, each object got a shape of its own and the cost came back.
 * Should a Node version make them classes, which cannot be called so, the server keeps Node's own.
 */
export function withAppPrototypes(app: Express): { IncomingMessage?: typeof IncomingMessage; ServerResponse?: typeof ServerResponse } {
  if ([IncomingMessage, ServerResponse].some((nodeConstructor) => Function.prototype.toString.call(nodeConstructor).startsWith('class'))) return {};
  function AppRequest(this: IncomingMessage, ...args: ConstructorParameters<typeof IncomingMessage>): void {
    (IncomingMessage as unknown as (...params: typeof args) => void).apply(this, args);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, ...args: ConstructorParameters<typeof ServerResponse>): void {
    (ServerResponse as unknown as (...params: typeof args) => void).apply(this, args);
  }
  AppResponse.prototype = app.response;
  return { IncomingMessage: AppRequest as unknown as typeof IncomingMessage, ServerResponse: AppResponse as unknown as typeof ServerResponse };
}
