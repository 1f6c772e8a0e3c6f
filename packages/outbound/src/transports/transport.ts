import { Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { ConnectGuard } from '../connect-guard';
import type { Deadline } from '../deadline';

/** One request as a transport sends it: its URL already checked, its headers final. */
interface TransportRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** The client's one time limit: when it passes, the request, its connection and the answer's body are dropped. */
  deadline: Deadline;
}

/**
 * Sends one request and resolves with the answer once its status and headers are in, its body not
 * read yet (the client reads it, bounded). Rejects with the underlying client's own error, which
 * the client maps to an OutboundRequestError.
 */
export type Transport = (request: TransportRequest) => Promise<IncomingMessage>;

/**
 * Keep-alive pools of one client only, configured as Node's global agents are: a pooled connection
 * was checked by this guard when it was made, and these agents (not the global ones, which newer
 * Node versions can point at HTTP(S)_PROXY) never use a proxy, which would connect in our place,
 * out of reach of the address check. The guard's lookup is an agent option, which the agent passes
 * to every connection it makes.
 */
export function guardedAgents(guard: ConnectGuard): { http: HttpAgent; https: HttpsAgent } {
  const options = { keepAlive: true, scheduling: 'lifo' as const, timeout: 5_000, ...(guard.lookup ? { lookup: guard.lookup } : {}) };
  return { http: new HttpAgent(options), https: new HttpsAgent(options) };
}
