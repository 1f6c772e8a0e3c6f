import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ConnectGuard } from '../connect-guard';
import { guardedAgents, type Transport } from './transport';

/**
 * Node's own http client. It adds nothing that must stay out: it follows no redirect, asks for no
 * compressed answer and sends no header it was not given but Host, Connection and Content-Length.
 */
export function nodeTransport(guard: ConnectGuard): Transport {
  const agents = guardedAgents(guard);
  return ({ url, method, headers, body, signal }) =>
    new Promise((resolve, reject) => {
      const https = url.protocol === 'https:';
      const sent = (https ? httpsRequest : httpRequest)(url, { method, headers, signal, agent: https ? agents.https : agents.http }, resolve);
      // Also after the answer arrived (a reset mid-body): the bounded read sees that on the response.
      sent.on('error', reject);
      sent.end(body);
    });
}
